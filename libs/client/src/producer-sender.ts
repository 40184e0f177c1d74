import { SpoolError, backoffMs, type Logger } from '@spool/common';
import { isInvalidMetadata, isRetriable } from '@spool/errors';
import { Acks, type PartitionAppendResult, type ProduceRequest } from '@spool/protocol';
import type { BufferMemory } from './buffer-memory';
import type { ProducerConfig } from './config';
import { ClientErrorCode, fromProtoError, partitionName, toSpoolError } from './errors';
import type { GatewayConnection } from './gateway-connection';
import { IdempotenceManager } from './idempotence-manager';
import type { ProducerBatch } from './producer-batch';
import type { RecordAccumulator } from './record-accumulator';
import type { TopicMetadataCache } from './topic-metadata';

/**
 * Kafka's Sender, on the event loop instead of a thread: whenever a record joins a batch, a batch
 * comes back, or a linger or backoff timer fires, it drains the ready batches into Produce
 * requests (one batch per partition each, up to maxRequestSizeBytes) and sends them without
 * waiting for earlier ones. Each partition's result settles its batch:
 *
 * 1. no error: every record gets base offset + index;
 * 2. a retriable error (by Kafka's classification of its code, errors.ts), with retries left
 *    and the batch's delivery timeout not passed: the batch goes back to the head of its queue
 *    after a backoff (retryBackoffMs doubling up to retryBackoffMaxMs, with jitter); an error
 *    that says the route was stale (NOT_LEADER_OR_FOLLOWER, a leader unreachable, ...) also
 *    refreshes the topic's metadata, and UNKNOWN_TOPIC_OR_PARTITION drops it;
 * 3. any other error: the batch's records fail with it, naming topic and partition.
 *
 * A request that fails as a whole (the gateway unreachable, a deadline) counts as that error
 * for each of its batches.
 *
 * Delivery timeout (Kafka's delivery.timeout.ms): a batch has deliveryTimeoutMs from its
 * creation to be acknowledged. A queued batch past it (waiting out a backoff, or behind a
 * partition's batch in flight) is taken out and fails REQUEST_TIMED_OUT, naming the last error
 * it was retried for; an attempt in flight at that moment is let finish (requestTimeoutMs bounds
 * it), and its answer is then final. So a retriable error fails a batch only once its delivery
 * timeout has passed, never sooner, and at most requestTimeoutMs later.
 *
 * With idempotence, nothing is sent until the producer has its id (InitProducerId), each batch
 * is stamped with id, epoch and sequence when first sent, and the idempotence manager decides
 * cases 2 and 3 for stamped batches (idempotence-manager.ts lists them).
 */

/** The gateway answers REQUEST_TIMED_OUT itself at timeoutMs; this lets that answer arrive. */
const gatewayAnswerSlackMs = 1_000;

export class ProducerSender {
  private drainScheduled = false;
  private drainTimer: NodeJS.Timeout | undefined;
  private drainTimerAtMs = Number.POSITIVE_INFINITY;
  private readonly inFlight = new Set<ProducerBatch>();
  private flushRequests = 0;
  /** Present when enableIdempotence is set. */
  readonly idempotence: IdempotenceManager | undefined;

  constructor(
    private readonly config: ProducerConfig,
    private readonly connection: GatewayConnection,
    private readonly accumulator: RecordAccumulator,
    private readonly memory: BufferMemory,
    private readonly metadata: TopicMetadataCache,
    private readonly logger: Logger,
  ) {
    this.idempotence = config.enableIdempotence
      ? new IdempotenceManager(config, connection, logger)
      : undefined;
  }

  /** Asks for a drain on the next turn of the event loop; many wakes make one drain. */
  wake(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      this.drain();
    });
  }

  /**
   * Sends everything queued now, ignoring linger, and waits until the batches that exist now
   * have settled (Kafka's flush: records sent later are not waited for).
   */
  async flush(): Promise<void> {
    const pending = [...this.accumulator.queuedBatches(), ...this.inFlight];
    if (pending.length === 0) return;
    this.flushRequests += 1;
    try {
      this.wake();
      await Promise.all(pending.map((batch) => batch.done));
    } finally {
      this.flushRequests -= 1;
    }
  }

  stop(): void {
    clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
  }

  private drain(): void {
    const nextExpiryAtMs = this.expireBatches(Date.now());
    if (this.idempotence !== undefined && !this.idempotence.isReady) {
      if (this.accumulator.hasQueuedBatches || this.inFlight.size > 0) {
        this.idempotence.maybeInitialize(this.inFlight.size, (error) =>
          this.onProducerIdSettled(error),
        );
      }
      this.scheduleDrainAt(nextExpiryAtMs);
      return;
    }
    for (;;) {
      const drained = this.accumulator.drain({
        nowMs: Date.now(),
        flushing: this.flushRequests > 0,
        memoryExhausted: this.memory.isExhausted,
      });
      if (drained.batches.length > 0) void this.send(drained.batches);
      if (drained.batches.length === 0 || drained.nextReadyAtMs > Date.now()) {
        this.scheduleDrainAt(Math.min(drained.nextReadyAtMs, nextExpiryAtMs));
        return;
      }
    }
  }

  /**
   * Fails the queued batches whose delivery timeout has passed; returns when the next will.
   * An idempotent batch already stamped leaves a hole in its partition's sequences, so the
   * idempotence manager bumps the epoch (its case 5), as Kafka does for an expired batch.
   */
  private expireBatches(nowMs: number): number {
    const { expired, nextExpiryAtMs } = this.accumulator.expire(
      nowMs,
      this.config.deliveryTimeoutMs,
    );
    for (const batch of expired) {
      let error = this.deliveryTimeoutError(batch, nowMs);
      if (this.idempotence !== undefined && batch.baseSequence >= 0) {
        const outcome = this.idempotence.onError(batch, error, false);
        if (outcome.kind === 'fail') error = outcome.error;
      }
      this.logger.warn(
        { topic: batch.topic, partition: batch.partition, attempts: batch.attempts },
        'a produce batch expired',
      );
      batch.fail(error);
      this.memory.release(batch.memoryBytes);
    }
    return nextExpiryAtMs;
  }

  private deliveryTimeoutError(batch: ProducerBatch, nowMs: number): SpoolError {
    const last = batch.lastError;
    return new SpoolError(
      ClientErrorCode.RequestTimedOut,
      `${partitionName(batch.topic, batch.partition)}: ${batch.recordCount} ` +
        `${batch.recordCount === 1 ? 'record' : 'records'} expired: ` +
        `${nowMs - batch.createdAtMs} ms passed since the batch was created, past ` +
        `deliveryTimeoutMs=${this.config.deliveryTimeoutMs}, after ${batch.attempts} attempts` +
        (last === undefined ? '' : `; the last error: ${last.code}: ${last.message}`),
      { retriable: true, cause: last },
    );
  }

  /** Whether the batch's delivery timeout has passed. */
  private isExpired(batch: ProducerBatch, nowMs: number): boolean {
    return nowMs - batch.createdAtMs >= this.config.deliveryTimeoutMs;
  }

  /**
   * InitProducerId finished: after a bump, each queued batch stamped under the old epoch is
   * cleared to be stamped again or fails (possibly written); on failure every queued batch
   * fails with the error, since none can be sent without a producer id.
   */
  private onProducerIdSettled(error: SpoolError | undefined): void {
    for (const batch of this.accumulator.queuedBatches()) {
      const failure =
        error ??
        this.idempotence!.onEpochBumped(batch, 'a sequence could not continue on a partition');
      if (failure === undefined) continue;
      this.accumulator.removeQueued(batch);
      batch.fail(failure);
      this.memory.release(batch.memoryBytes);
    }
    this.wake();
  }

  private scheduleDrainAt(atMs: number): void {
    if (atMs === Number.POSITIVE_INFINITY || atMs >= this.drainTimerAtMs) return;
    clearTimeout(this.drainTimer);
    this.drainTimerAtMs = atMs;
    this.drainTimer = setTimeout(
      () => {
        this.drainTimer = undefined;
        this.drainTimerAtMs = Number.POSITIVE_INFINITY;
        this.drain();
      },
      Math.max(0, atMs - Date.now()),
    );
  }

  private async send(batches: ProducerBatch[]): Promise<void> {
    const sendable: ProducerBatch[] = [];
    for (const batch of batches) {
      batch.attempts += 1;
      this.inFlight.add(batch);
      this.idempotence?.stamp(batch);
      try {
        batch.encode(this.config.compressionType);
        sendable.push(batch);
      } catch (error) {
        this.settle(batch, toSpoolError(error, partitionName(batch.topic, batch.partition)));
      }
    }
    if (sendable.length === 0) return;
    const request: ProduceRequest = {
      partitions: sendable.map((batch) => ({
        topic: batch.topic,
        partition: batch.partition,
        records: batch.encode(this.config.compressionType),
      })),
      acks: this.config.acks,
      timeoutMs: this.config.requestTimeoutMs,
    };
    let results: PartitionAppendResult[];
    try {
      const response = await this.connection.produce(
        request,
        this.config.requestTimeoutMs + gatewayAnswerSlackMs,
      );
      results = response.results;
    } catch (error) {
      const failure = toSpoolError(error);
      for (const batch of sendable) {
        const subject = partitionName(batch.topic, batch.partition);
        this.settle(
          batch,
          new SpoolError(failure.code, `${subject}: ${failure.message}`, {
            retriable: failure.retriable,
            cause: failure,
            details: failure.details,
          }),
        );
      }
      return;
    }
    for (const batch of sendable) this.settleFromResult(batch, results);
  }

  private settleFromResult(batch: ProducerBatch, results: readonly PartitionAppendResult[]): void {
    const subject = partitionName(batch.topic, batch.partition);
    const result = results.find(
      (candidate) => candidate.topic === batch.topic && candidate.partition === batch.partition,
    );
    if (result === undefined) {
      this.settle(
        batch,
        new SpoolError(ClientErrorCode.Unknown, `${subject}: the gateway answered no result`),
      );
    } else if (result.error !== undefined && result.error.code !== '') {
      this.settle(batch, fromProtoError(result.error, subject));
    } else {
      this.settle(batch, undefined, this.config.acks === Acks.ACKS_NONE ? -1n : result.baseOffset);
    }
  }

  /** One attempt of a batch is over: done, failed for good, or queued again (cases 1-3). */
  private settle(batch: ProducerBatch, answer: SpoolError | undefined, baseOffset = -1n): void {
    this.inFlight.delete(batch);
    const nowMs = Date.now();
    let error = answer === undefined ? undefined : this.classified(batch, answer, nowMs);
    const retriesLeft = batch.attempts <= this.config.retries && !this.isExpired(batch, nowMs);
    let retry = error !== undefined && error.retriable && retriesLeft;
    if (this.idempotence !== undefined && batch.baseSequence >= 0) {
      if (error === undefined) this.idempotence.onAcknowledged(batch);
      else {
        const outcome = this.idempotence.onError(batch, error, retriesLeft);
        retry = outcome.kind !== 'fail';
        if (outcome.kind === 'fail') error = outcome.error;
      }
    }
    if (retry && error !== undefined) {
      if (error.code === ClientErrorCode.UnknownTopicOrPartition) {
        this.metadata.invalidate(batch.topic);
      } else if (isInvalidMetadata(error.code)) {
        this.metadata.requestUpdate(batch.topic);
      }
      batch.lastError = error;
      const waitMs = backoffMs(batch.attempts, {
        backoffInitialMs: this.config.retryBackoffMs,
        backoffMaxMs: this.config.retryBackoffMaxMs,
      });
      batch.retryNotBeforeMs = nowMs + waitMs;
      this.logger.debug(
        {
          topic: batch.topic,
          partition: batch.partition,
          attempt: batch.attempts,
          code: error.code,
          reason: error.message,
          backoffMs: waitMs,
        },
        'retrying a produce batch',
      );
    } else {
      if (error === undefined) batch.complete(baseOffset);
      else batch.fail(error);
      this.memory.release(batch.memoryBytes);
    }
    this.accumulator.completed(batch, retry);
    this.wake();
  }

  /**
   * The answer with Kafka's retriability for its code; a retriable answer that comes too late
   * to be retried says why it is final (the retries or the delivery timeout used up).
   */
  private classified(batch: ProducerBatch, answer: SpoolError, nowMs: number): SpoolError {
    const retriable = isRetriable(answer.code, answer.retriable);
    if (!retriable) {
      if (!answer.retriable) return answer;
      return new SpoolError(answer.code, answer.message, {
        retriable,
        cause: answer,
        details: answer.details,
      });
    }
    let reason: string | undefined;
    if (this.isExpired(batch, nowMs)) {
      reason =
        `not retried: ${nowMs - batch.createdAtMs} ms passed since the batch was created, ` +
        `past deliveryTimeoutMs=${this.config.deliveryTimeoutMs}`;
    } else if (batch.attempts > this.config.retries) {
      reason = `not retried: all ${batch.attempts} attempts (retries=${this.config.retries}) used`;
    }
    if (reason === undefined && answer.retriable) return answer;
    return new SpoolError(
      answer.code,
      reason === undefined ? answer.message : `${answer.message}; ${reason}`,
      { retriable, cause: answer, details: answer.details },
    );
  }
}
