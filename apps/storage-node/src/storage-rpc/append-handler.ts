/**
 * Append on the leader (Kafka's produce in ReplicaManager.appendRecords): acks checked once per
 * request, then each partition appended on its own: leadership, min.insync.replicas, the
 * producer state and the log's validation before any byte is written, and for acks=all the wait
 * until the high watermark passes the batches.
 */
import { SpoolError } from '@spool/common';
import {
  Acks,
  type AppendRequest,
  type AppendResponse,
  type PartitionAppendResult,
} from '@spool/protocol';
import { RecordBatchError } from '@spool/record-batch';
import type { PartitionReplica } from '../replica/partition-replica';
import type { StorageHandlerDependencies } from './storage-handler-dependencies';
import { protoError } from './proto-error';

/** The longest an acks=all append may wait for replication, whatever the request asks. */
export const appendTimeoutMsMax = 120_000;

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

export function appendHandler({
  replicas,
  topicConfig,
  metrics,
  beforeLogAppend,
}: StorageHandlerDependencies): (request: AppendRequest) => Promise<AppendResponse> {
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

  return async (request) => {
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
  };
}
