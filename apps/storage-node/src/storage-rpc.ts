/**
 * The storage node's gRPC API: Append (produce into partitions this node leads), ListOffsets and
 * DeleteRecords. Each partition is answered on its own with Kafka's error name; a partition whose
 * batches fail validation writes none of them (the segment store validates every batch first, and
 * the producer state checks every idempotent batch's epoch and sequence before that).
 * The gRPC server counts and times every call and counts the partition errors in its answer;
 * Append also reports where its time went (queue, local append, replication wait).
 *
 * Append is where a produced batch's bytes and the request's acks are checked, and the only
 * place: the gateway forwards both unread (produce-handler.ts says why), as Kafka checks them in
 * the broker that writes the bytes. acks is checked once per request, before any partition, as
 * Kafka's ReplicaManager.appendRecords does; the batches once per partition, by the log
 * (Log.validateAppend), right before they are written.
 */
import { isAssertionFailure, SpoolError } from '@spool/common';
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
import { RecordBatchError } from '@spool/record-batch';
import type { PartitionReplica } from './replica/partition-replica';
import type { ReplicaManager } from './replica/replica-manager';
import type { StorageMetrics } from './storage-metrics';

/** The longest an acks=all append may wait for replication, whatever the request asks. */
export const appendTimeoutMsMax = 120_000;

/**
 * The error a partition result carries: typed errors keep their code; anything else is named. A
 * failed assertion is no answer: it is rethrown, and the gRPC server's wrapper stops the process.
 */
export function protoError(error: unknown): ProtoError {
  if (isAssertionFailure(error)) throw error;
  // A file-system error that escaped the segment store's wrapping (its code is an errno name
  // such as ENOSPC) is still a storage error: retriable, as Kafka's KAFKA_STORAGE_ERROR.
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).errno === 'number') {
    return {
      code: 'KAFKA_STORAGE_ERROR',
      message: `${(error as NodeJS.ErrnoException).code}: ${error.message}`,
      retriable: true,
    };
  }
  if (error instanceof Error && typeof (error as SpoolError).code === 'string') {
    const coded = error as SpoolError;
    return { code: coded.code, message: coded.message, retriable: coded.retriable === true };
  }
  return { code: 'UNKNOWN_SERVER_ERROR', message: String(error), retriable: false };
}

/** Kafka's acks values: 0, 1 and -1 (all). */
function isValidAcks(acks: Acks): boolean {
  return acks === Acks.ACKS_NONE || acks === Acks.ACKS_LEADER || acks === Acks.ACKS_ALL;
}

/** A partition's answer before anything is known: no offsets, no error. */
function appendResultOf(partition: AppendRequest['partitions'][number]): PartitionAppendResult {
  return {
    topic: partition.topic,
    partition: partition.partition,
    error: undefined,
    baseOffset: -1n,
    lastOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset: -1n,
  };
}

function minInsyncReplicas(
  replica: PartitionReplica,
  topicConfig: (topic: string, name: string) => string | undefined,
): number {
  return Number(topicConfig(replica.topic, 'min.insync.replicas') ?? '1');
}

/**
 * The storage service's handlers. `beforeLogAppend` is the slow-disk test hook's (given only when
 * the fault suite turns it on, see slow-disk-test-hook.ts): it runs before each leader append.
 */
export function storageHandlers(
  replicas: () => ReplicaManager,
  topicConfig: (topic: string, name: string) => string | undefined,
  metrics: StorageMetrics,
  beforeLogAppend?: () => void,
) {
  const stageTimer = (stage: 'queue' | 'local_append' | 'replication_wait', startedAtMs: number) =>
    metrics.produceStageDuration.observe({ stage }, (performance.now() - startedAtMs) / 1000);

  const appendPartition = async (
    request: AppendRequest,
    partition: AppendRequest['partitions'][number],
    receivedAtMs: number,
  ): Promise<PartitionAppendResult> => {
    const result = appendResultOf(partition);
    try {
      const replica = replicas().require(partition.topic, partition.partition);
      replica.ensureLeader();
      const minInsync = minInsyncReplicas(replica, topicConfig);
      if (request.acks === Acks.ACKS_ALL && replica.assignment.isr.length < minInsync) {
        throw new SpoolError(
          'NOT_ENOUGH_REPLICAS',
          `${replica.name} has ${replica.assignment.isr.length} in-sync replicas, fewer than min.insync.replicas ${minInsync}`,
        );
      }
      // Partitions of one request append one after another: the queue is the wait behind them.
      const appendStartedAtMs = performance.now();
      stageTimer('queue', receivedAtMs);
      beforeLogAppend?.();
      // The records are a view into this request's own message (partition-batches-codec), so
      // the log may set their base offsets in place: no copy.
      const outcome = replica.producerState.appendAsLeader(
        partition.records,
        replica.assignment.leaderEpoch,
      );
      stageTimer('local_append', appendStartedAtMs);
      // A duplicate of an idempotent producer's batch writes nothing and is answered with the
      // original offsets, after the same acks=all wait: the original may not be replicated yet.
      const appended =
        outcome.kind === 'appended'
          ? outcome.appended
          : { baseOffset: outcome.baseOffset, lastOffset: outcome.lastOffset, logAppendTimeMs: -1 };
      if (outcome.kind === 'appended') {
        metrics.messagesIn.inc({ topic: partition.topic }, outcome.appended.recordCount);
        metrics.bytesIn.inc({ topic: partition.topic }, outcome.appended.sizeBytes);
        replica.maybeAdvanceHighWatermark();
        replica.wake();
      }
      if (request.acks === Acks.ACKS_ALL) {
        const timeoutMs = Math.min(Math.max(request.timeoutMs, 0), appendTimeoutMsMax);
        const waitStartedAtMs = performance.now();
        const replicated = await replica.waitUntil(
          () => replica.highWatermark > appended.lastOffset || !replica.isLeader,
          timeoutMs,
        );
        stageTimer('replication_wait', waitStartedAtMs);
        if (replica.highWatermark <= appended.lastOffset && !replica.isLeader) {
          throw new SpoolError(
            'NOT_LEADER_OR_FOLLOWER',
            `this broker lost the leadership of ${replica.name} before offsets ` +
              `${appended.baseOffset}-${appended.lastOffset} were replicated`,
            { details: { leader: String(replica.assignment.leaderId) } },
          );
        }
        if (!replicated) {
          throw new SpoolError(
            'REQUEST_TIMED_OUT',
            `offsets ${appended.baseOffset}-${appended.lastOffset} of ${replica.name} were not replicated to the ISR within ${timeoutMs} ms`,
          );
        }
        if (replica.assignment.isr.length < minInsync) {
          throw new SpoolError(
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
      const answer = protoError(error);
      // A batch's error names its byte position and field; the partition completes the name.
      if (error instanceof RecordBatchError) {
        answer.message = `${partition.topic}-${partition.partition}: ${answer.message}`;
      }
      return { ...result, error: answer };
    }
  };

  return {
    append: async (request: AppendRequest): Promise<AppendResponse> => {
      const receivedAtMs = performance.now();
      if (!isValidAcks(request.acks)) {
        const error = protoError(
          new SpoolError(
            'INVALID_REQUIRED_ACKS',
            `acks is ${request.acks}; it must be ACKS_NONE, ACKS_LEADER or ACKS_ALL`,
          ),
        );
        return {
          results: request.partitions.map((partition) => ({ ...appendResultOf(partition), error })),
        };
      }
      return {
        results: await Promise.all(
          request.partitions.map((partition) => appendPartition(request, partition, receivedAtMs)),
        ),
      };
    },

    listOffsets: async (request: ListOffsetsRequest): Promise<ListOffsetsResponse> => {
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
                throw new SpoolError(
                  'INVALID_REQUEST',
                  `spec is ${partition.spec}; expected EARLIEST, LATEST or TIMESTAMP`,
                );
            }
          } catch (error) {
            return { ...base, error: protoError(error) };
          }
        }),
      };
    },

    deleteRecords: async (request: DeleteRecordsRequest): Promise<DeleteRecordsResponse> => {
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
            return { ...base, error: protoError(error) };
          }
        }),
      };
    },
  };
}
