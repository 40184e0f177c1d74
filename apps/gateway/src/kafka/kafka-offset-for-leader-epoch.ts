/**
 * OffsetForLeaderEpoch (KIP-101, KIP-320): where a leader epoch ends on a partition's leader. The
 * Java consumer asks it after a leader change, with the epoch of the last record it consumed, to
 * detect a log truncated under its position (it then resets, or fails with
 * LogTruncationException). The gateway forwards each partition to its leader's data port, which
 * answers it from the leader's epoch cache as it answers followers.
 *
 * 1. Each partition is routed from the gateway's metadata; an unknown topic or partition, or one
 *    without a live leader, is answered with its error and not forwarded.
 * 2. The partitions of one leader go in one data-port request, the leaders asked concurrently.
 *    The client's current leader epoch goes with them, so the leader fences a client whose
 *    metadata is older or newer than its own (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH), as
 *    Kafka's leader does; the client refreshes its metadata and asks again.
 * 3. A leader that cannot be reached answers its partitions with the failure's error code.
 * 4. For the latest epoch the end offset is the leader's log end offset, as Kafka answers it.
 */
import { isCodedError } from '@spool/common';
import {
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
  type OffsetForLeaderEpochResponseEpochEndOffset,
  defaultOffsetForLeaderEpochResponse,
  readOffsetForLeaderEpochRequest,
  writeOffsetForLeaderEpochResponse,
} from '@spool/kafka-protocol';
import type { DataPortOffsetForLeaderEpochPartition } from '@spool/protocol';
import type { FetchDependencies } from '../fetch-handler';
import { groupByLeader, routeOf } from '../partition-routing';
import type { KafkaApi } from './kafka-api-dispatcher';
import { kafkaErrorNumberOf } from './kafka-errors';

const offsetForLeaderEpochApiKey = 23;

interface Routed {
  readonly position: number;
  readonly leaderId: number;
  readonly wanted: DataPortOffsetForLeaderEpochPartition;
}

function failed(partition: number, code: string): OffsetForLeaderEpochResponseEpochEndOffset {
  return { errorCode: kafkaErrorNumberOf(code), partition, leaderEpoch: -1, endOffset: -1n };
}

export function offsetForLeaderEpochApi(
  dependencies: Pick<FetchDependencies, 'link' | 'fetcher'>,
): KafkaApi<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse> {
  return {
    apiKey: offsetForLeaderEpochApiKey,
    // Version 3 is the first the Java consumer uses to validate positions (KIP-320).
    minVersion: 2,
    maxVersion: 4,
    read: readOffsetForLeaderEpochRequest,
    write: writeOffsetForLeaderEpochResponse,
    serve: async (request) => {
      const wanted = request.topics.flatMap((topic) =>
        topic.partitions.map((partition) => ({ requested: topic, topic: topic.topic, partition })),
      );
      const answers = new Array<OffsetForLeaderEpochResponseEpochEndOffset>(wanted.length);
      // Point 1.
      const routed: Routed[] = [];
      wanted.forEach((entry, position) => {
        const route = routeOf(
          dependencies.link.metadata,
          { topic: entry.topic, partition: entry.partition.partition },
          'data',
        );
        if (route.kind === 'failed') {
          answers[position] = failed(entry.partition.partition, route.error.code);
          return;
        }
        routed.push({
          position,
          leaderId: route.leaderId,
          wanted: {
            topic: entry.topic,
            partition: entry.partition.partition,
            currentLeaderEpoch: entry.partition.currentLeaderEpoch,
            leaderEpoch: entry.partition.leaderEpoch,
          },
        });
      });
      // Point 2.
      const groups = groupByLeader(routed, (entry) => entry.leaderId);
      await Promise.all(
        [...groups].map(async ([leaderId, entries]) => {
          try {
            const response = await dependencies.fetcher.offsetForLeaderEpoch(
              leaderId,
              entries.map((entry) => entry.wanted),
            );
            entries.forEach((entry, index) => {
              const answer = response.partitions[index];
              answers[entry.position] =
                answer === undefined
                  ? failed(entry.wanted.partition, 'UNKNOWN_SERVER_ERROR')
                  : {
                      errorCode: kafkaErrorNumberOf(answer.errorCode),
                      partition: entry.wanted.partition,
                      // Point 4.
                      leaderEpoch: answer.leaderEpoch,
                      endOffset: answer.endOffset,
                    };
            });
          } catch (error) {
            // Point 3.
            const code = isCodedError(error) ? error.code : 'UNKNOWN_SERVER_ERROR';
            for (const entry of entries) {
              answers[entry.position] = failed(entry.wanted.partition, code);
            }
          }
        }),
      );
      return {
        ...defaultOffsetForLeaderEpochResponse(),
        topics: request.topics.map((topic) => ({
          topic: topic.topic,
          partitions: wanted.flatMap((entry, position) =>
            entry.requested === topic ? [answers[position]!] : [],
          ),
        })),
      };
    },
  };
}
