/**
 * The storage node's gRPC API: Append (produce into partitions this node leads), ListOffsets and
 * DeleteRecords. Each partition is answered on its own with Kafka's error name; a partition whose
 * batches fail validation writes none of them (the segment store validates every batch first).
 */
import { SpoolError } from '@spool/common';
import {
  Acks,
  OffsetSpec,
  type AppendRequest,
  type AppendResponse,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type PartitionAppendResult,
  type ProtoError,
} from '@spool/protocol';
import type { PartitionReplica } from './partition-replica';
import type { ReplicaManager } from './replica-manager';
import { StorageError } from './storage-errors';
import type { StorageMetrics } from './storage-metrics';

/** The longest an acks=all append may wait for replication, whatever the request asks. */
export const appendTimeoutMsMax = 120_000;

function protoError(error: unknown): ProtoError {
  if (error instanceof Error && typeof (error as SpoolError).code === 'string') {
    const coded = error as SpoolError;
    return { code: coded.code, message: coded.message, retriable: coded.retriable === true };
  }
  return { code: 'UNKNOWN_SERVER_ERROR', message: String(error), retriable: false };
}

function minInsyncReplicas(
  replica: PartitionReplica,
  topicConfig: (topic: string, name: string) => string | undefined,
): number {
  return Number(topicConfig(replica.topic, 'min.insync.replicas') ?? '1');
}

export function storageHandlers(
  replicas: () => ReplicaManager,
  topicConfig: (topic: string, name: string) => string | undefined,
  metrics: StorageMetrics,
) {
  const appendPartition = async (
    request: AppendRequest,
    partition: AppendRequest['partitions'][number],
  ): Promise<PartitionAppendResult> => {
    const result: PartitionAppendResult = {
      topic: partition.topic,
      partition: partition.partition,
      error: undefined,
      baseOffset: -1n,
      lastOffset: -1n,
      logAppendTimeMs: -1n,
      logStartOffset: -1n,
    };
    try {
      if (
        request.acks !== Acks.ACKS_NONE &&
        request.acks !== Acks.ACKS_LEADER &&
        request.acks !== Acks.ACKS_ALL
      ) {
        throw new StorageError(
          'INVALID_REQUIRED_ACKS',
          `acks is ${request.acks}; it must be ACKS_NONE, ACKS_LEADER or ACKS_ALL`,
        );
      }
      const replica = replicas().require(partition.topic, partition.partition);
      replica.ensureLeader();
      const minInsync = minInsyncReplicas(replica, topicConfig);
      if (request.acks === Acks.ACKS_ALL && replica.assignment.isr.length < minInsync) {
        throw new StorageError(
          'NOT_ENOUGH_REPLICAS',
          `${replica.name} has ${replica.assignment.isr.length} in-sync replicas, fewer than min.insync.replicas ${minInsync}`,
        );
      }
      // The records are a view into this request's own message (partition-batches-codec), so
      // the log may set their base offsets in place: no copy.
      const appended = replica.log.append(partition.records, {
        leaderEpoch: replica.assignment.leaderEpoch,
        assignOffsets: true,
      });
      metrics.messagesIn.inc({ topic: partition.topic }, appended.recordCount);
      metrics.bytesIn.inc({ topic: partition.topic }, appended.sizeBytes);
      replica.maybeAdvanceHighWatermark();
      replica.wake();
      if (request.acks === Acks.ACKS_ALL) {
        const timeoutMs = Math.min(Math.max(request.timeoutMs, 0), appendTimeoutMsMax);
        const replicated = await replica.waitUntil(
          () => replica.highWatermark > appended.lastOffset || !replica.isLeader,
          timeoutMs,
        );
        if (replica.highWatermark <= appended.lastOffset && !replica.isLeader) {
          throw new StorageError(
            'NOT_LEADER_OR_FOLLOWER',
            `this broker lost the leadership of ${replica.name} before offsets ` +
              `${appended.baseOffset}-${appended.lastOffset} were replicated`,
            { details: { leader: String(replica.assignment.leaderId) } },
          );
        }
        if (!replicated) {
          throw new StorageError(
            'REQUEST_TIMED_OUT',
            `offsets ${appended.baseOffset}-${appended.lastOffset} of ${replica.name} were not replicated to the ISR within ${timeoutMs} ms`,
          );
        }
        if (replica.assignment.isr.length < minInsync) {
          throw new StorageError(
            'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
            `${replica.name} was written but its ISR shrank below min.insync.replicas ${minInsync}`,
          );
        }
      }
      return {
        ...result,
        baseOffset: appended.baseOffset,
        lastOffset: appended.lastOffset,
        logAppendTimeMs: BigInt(appended.logAppendTimeMs),
        logStartOffset: replica.log.logStartOffset,
      };
    } catch (error) {
      const coded = protoError(error);
      metrics.requestErrors.inc({ api: 'Append', code: coded.code });
      return { ...result, error: coded };
    }
  };

  return {
    append: async (request: AppendRequest): Promise<AppendResponse> => {
      const timer = metrics.requestDuration.startTimer({ api: 'Append' });
      try {
        return {
          results: await Promise.all(
            request.partitions.map((partition) => appendPartition(request, partition)),
          ),
        };
      } finally {
        timer();
      }
    },

    listOffsets: async (request: ListOffsetsRequest): Promise<ListOffsetsResponse> => {
      const timer = metrics.requestDuration.startTimer({ api: 'ListOffsets' });
      try {
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
                case OffsetSpec.OFFSET_SPEC_TIMESTAMP: {
                  const found = replica.log.offsetForTimestamp(Number(partition.timestampMs));
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
                  throw new StorageError(
                    'INVALID_REQUEST',
                    `spec is ${partition.spec}; expected EARLIEST, LATEST or TIMESTAMP`,
                  );
              }
            } catch (error) {
              const coded = protoError(error);
              metrics.requestErrors.inc({ api: 'ListOffsets', code: coded.code });
              return { ...base, error: coded };
            }
          }),
        };
      } finally {
        timer();
      }
    },

    deleteRecords: async (request: DeleteRecordsRequest): Promise<DeleteRecordsResponse> => {
      const timer = metrics.requestDuration.startTimer({ api: 'DeleteRecords' });
      try {
        return {
          results: request.partitions.map((partition) => {
            const base = {
              topic: partition.topic,
              partition: partition.partition,
              error: undefined,
              lowWatermark: -1n,
            };
            try {
              const replica = replicas().require(partition.topic, partition.partition);
              replica.ensureLeader();
              const target = partition.offset === -1n ? replica.highWatermark : partition.offset;
              if (target < 0n || target > replica.highWatermark) {
                throw new SpoolError(
                  'OFFSET_OUT_OF_RANGE',
                  `offset ${partition.offset} of ${replica.name} is not between 0 and the high watermark ${replica.highWatermark}`,
                );
              }
              replica.log.deleteRecordsBefore(target);
              return { ...base, lowWatermark: replica.log.logStartOffset };
            } catch (error) {
              const coded = protoError(error);
              metrics.requestErrors.inc({ api: 'DeleteRecords', code: coded.code });
              return { ...base, error: coded };
            }
          }),
        };
      } finally {
        timer();
      }
    },
  };
}
