/**
 * ListOffsets: the earliest offset (-2), the latest (-1, the high watermark, which is also the
 * last stable offset without transactions), the first offset at or after a timestamp, or from
 * version 7 the first record with the largest timestamp (-3, MAX_TIMESTAMP, KIP-734), through
 * the gateway's own ListOffsets (offset-handlers.ts) at each partition's leader. Version 8's
 * EARLIEST_LOCAL (-4, KIP-405) is the earliest offset: without tiered storage the whole log is
 * local, as Kafka answers it for a topic without remote storage. Versions 9 and up (the latest
 * tiered offset, remote lookups) are not served: there is no tier to answer them from.
 */
import {
  type ListOffsetsPartitionResponse,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  defaultListOffsetsResponse,
  readListOffsetsRequest,
  writeListOffsetsResponse,
} from '@spool/kafka-protocol';
import { type ListOffsetsPartition, OffsetSpec } from '@spool/protocol';
import { type OffsetDependencies, handleListOffsets } from '../offset-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';

const listOffsetsApiKey = 2;
const latestTimestamp = -1n;
const earliestTimestamp = -2n;
const maxTimestamp = -3n;
const earliestLocalTimestamp = -4n;
/** The first versions that take MAX_TIMESTAMP and EARLIEST_LOCAL. */
const maxTimestampVersion = 7;
const earliestLocalVersion = 8;
/** The first version whose answers carry the leader epoch. */
const leaderEpochVersion = 4;

/** The spec a partition's timestamp asks for at this version; undefined is INVALID_REQUEST. */
function specOf(timestamp: bigint, version: number): OffsetSpec | undefined {
  if (timestamp === latestTimestamp) return OffsetSpec.OFFSET_SPEC_LATEST;
  if (timestamp === earliestTimestamp) return OffsetSpec.OFFSET_SPEC_EARLIEST;
  if (timestamp === maxTimestamp && version >= maxTimestampVersion) {
    return OffsetSpec.OFFSET_SPEC_MAX_TIMESTAMP;
  }
  if (timestamp === earliestLocalTimestamp && version >= earliestLocalVersion) {
    return OffsetSpec.OFFSET_SPEC_EARLIEST;
  }
  return timestamp >= 0n ? OffsetSpec.OFFSET_SPEC_TIMESTAMP : undefined;
}

export function listOffsetsApi(
  dependencies: OffsetDependencies,
): KafkaApi<ListOffsetsRequest, ListOffsetsResponse> {
  return {
    apiKey: listOffsetsApiKey,
    minVersion: 1,
    maxVersion: 8,
    read: readListOffsetsRequest,
    write: writeListOffsetsResponse,
    serve: async (request, version) => {
      const wanted = request.topics.flatMap((topic) =>
        topic.partitions.map((partition) => ({
          topic,
          partition,
          spec: specOf(partition.timestamp, version),
        })),
      );
      const askable = wanted.filter((entry) => entry.spec !== undefined);
      const answered = await handleListOffsets(
        {
          partitions: askable.map((entry): ListOffsetsPartition => ({
            topic: entry.topic.name,
            partition: entry.partition.partitionIndex,
            spec: entry.spec!,
            timestampMs:
              entry.spec === OffsetSpec.OFFSET_SPEC_TIMESTAMP ? entry.partition.timestamp : 0n,
          })),
        },
        dependencies,
      );
      const results = new Map(askable.map((entry, index) => [entry, answered.results[index]!]));
      return {
        ...defaultListOffsetsResponse(),
        topics: request.topics.map((topic) => ({
          name: topic.name,
          partitions: wanted
            .filter((entry) => entry.topic === topic)
            .map((entry): ListOffsetsPartitionResponse => {
              const result = results.get(entry);
              if (result === undefined) {
                return {
                  partitionIndex: entry.partition.partitionIndex,
                  errorCode: KafkaErrorNumber.InvalidRequest,
                  timestamp: -1n,
                  offset: -1n,
                  leaderEpoch: -1,
                };
              }
              return {
                partitionIndex: entry.partition.partitionIndex,
                errorCode: kafkaErrorNumberOf(result.error?.code),
                timestamp: result.timestampMs,
                offset: result.offset,
                // Not carried before version 4 (KIP-320).
                leaderEpoch: version >= leaderEpochVersion ? result.leaderEpoch : -1,
              };
            }),
        })),
      };
    },
  };
}
