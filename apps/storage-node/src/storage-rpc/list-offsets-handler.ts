import { SpoolError } from '@spool/common';
import { OffsetSpec, type ListOffsetsRequest, type ListOffsetsResponse } from '@spool/protocol';
import type { ReplicaManager } from '../replica/replica-manager';
import { protoError } from './proto-error';

/**
 * Kafka's ListOffsets on the leader: the log start (earliest), the high watermark (latest), the
 * first offset at or after a timestamp, or the first record with the largest timestamp (max
 * timestamp, KIP-734); the last two only below the high watermark, as Kafka answers consumers.
 * Each partition is answered alone.
 */
export function listOffsetsHandler(
  replicas: () => ReplicaManager,
): (request: ListOffsetsRequest) => Promise<ListOffsetsResponse> {
  return async (request) => {
    return {
      results: request.partitions.map((partition) => {
        const base = {
          topic: partition.topic,
          partition: partition.partition,
          error: undefined,
          offset: -1n,
          timestampMs: -1n,
          leaderEpoch: -1,
        };
        try {
          const replica = replicas().require(partition.topic, partition.partition);
          replica.ensureLeader();
          const leaderEpoch = replica.assignment.leaderEpoch;
          switch (partition.spec) {
            case OffsetSpec.OFFSET_SPEC_EARLIEST:
              return { ...base, offset: replica.log.logStartOffset, leaderEpoch };
            case OffsetSpec.OFFSET_SPEC_LATEST:
              return { ...base, offset: replica.highWatermark, leaderEpoch };
            case OffsetSpec.OFFSET_SPEC_TIMESTAMP:
            case OffsetSpec.OFFSET_SPEC_MAX_TIMESTAMP: {
              const found =
                partition.spec === OffsetSpec.OFFSET_SPEC_TIMESTAMP
                  ? replica.log.offsetForTimestamp(Number(partition.timestampMs))
                  : replica.log.offsetOfMaxTimestamp();
              if (found === undefined || found.offset >= replica.highWatermark)
                return { ...base, leaderEpoch };
              return {
                ...base,
                offset: found.offset,
                timestampMs: BigInt(found.timestampMs),
                leaderEpoch,
              };
            }
            default:
              throw new SpoolError(
                'INVALID_REQUEST',
                `spec is ${partition.spec}; expected EARLIEST, LATEST, TIMESTAMP or MAX_TIMESTAMP`,
              );
          }
        } catch (error) {
          return { ...base, error: protoError(error) };
        }
      }),
    };
  };
}
