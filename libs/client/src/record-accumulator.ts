import type { RecordHeader } from '@spool/record-batch';
import type { BatchBufferPool } from './batch-buffer-pool';
import { ProducerBatch } from './producer-batch';

/**
 * Kafka's RecordAccumulator: a queue of batches per partition. Records join the last open batch
 * of their partition; the sender drains at most one batch per partition per request, and only
 * batches that are ready:
 *
 * 1. the batch is full (batchSizeBytes), or another batch queues behind it;
 * 2. it has waited lingerMs since its first record;
 * 3. the producer is flushing or closing;
 * 4. someone waits for buffer memory: lingering would only make them wait longer;
 * 5. and, for any of those, the partition has fewer than maxInFlight batches in flight, and a
 *    retried batch has waited out its backoff.
 *
 * A retried batch goes back to the head of its queue, so with maxInFlight 1 a partition's
 * batches land in the order they were sent. With more in flight, a retry can land after a batch
 * sent later, as in Kafka without idempotence. A queued batch whose delivery timeout has passed
 * is taken out by `expire` for the sender to fail.
 */

export interface AccumulatorLimits {
  readonly lingerMs: number;
  readonly batchSizeBytes: number;
  readonly maxInFlight: number;
  readonly maxRequestSizeBytes: number;
}

export interface DrainConditions {
  readonly nowMs: number;
  readonly flushing: boolean;
  readonly memoryExhausted: boolean;
}

export interface Drained {
  /** Batches for one Produce request, each of a different partition, already closed. */
  readonly batches: ProducerBatch[];
  /** When a batch not ready now will be (linger or backoff), as a Date.now() value. */
  readonly nextReadyAtMs: number;
}

export interface Expired {
  /** Batches past their delivery timeout, out of their queues; the caller fails them. */
  readonly expired: ProducerBatch[];
  /** When the next queued batch will expire, as a Date.now() value. */
  readonly nextExpiryAtMs: number;
}

interface PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  readonly batches: ProducerBatch[];
  inFlight: number;
}

export class RecordAccumulator {
  private readonly queues = new Map<string, PartitionQueue>();
  /** The queue the last record joined: consecutive records mostly go to the same partition. */
  private lastQueue: PartitionQueue | undefined;
  /** Where the next drain starts, so no partition always comes last in a full request. */
  private drainStart = 0;

  constructor(
    private readonly limits: AccumulatorLimits,
    private readonly onBatchClosed: (batch: ProducerBatch) => void,
    private readonly pool?: BatchBufferPool,
  ) {}

  /**
   * Appends a record to its partition's open batch, opening a new one if needed. Returns the
   * batch; the record is its last (index `recordCount - 1`).
   */
  append(
    topic: string,
    partition: number,
    timestampMs: number,
    key: Buffer | null,
    value: Buffer | null,
    headers: readonly RecordHeader[] | undefined,
    sizeBytes: number,
  ): ProducerBatch {
    const cached = this.lastQueue;
    const queue =
      cached !== undefined && cached.partition === partition && cached.topic === topic
        ? cached
        : this.queueOf(topic, partition);
    this.lastQueue = queue;
    const { batchSizeBytes } = this.limits;
    const last = queue.batches.length === 0 ? undefined : queue.batches[queue.batches.length - 1]!;
    if (
      last !== undefined &&
      last.tryAppend(timestampMs, key, value, headers, sizeBytes, batchSizeBytes) >= 0
    ) {
      return last;
    }
    if (last !== undefined && !last.closed) this.closeBatch(last);
    const batch = new ProducerBatch(topic, partition, Date.now(), batchSizeBytes, this.pool);
    queue.batches.push(batch);
    batch.tryAppend(timestampMs, key, value, headers, sizeBytes, batchSizeBytes);
    return batch;
  }

  /** Every batch queued, in flight or not, for flush to wait on. */
  queuedBatches(): ProducerBatch[] {
    return [...this.queues.values()].flatMap((queue) => queue.batches);
  }

  get hasQueuedBatches(): boolean {
    for (const queue of this.queues.values()) if (queue.batches.length > 0) return true;
    return false;
  }

  drain(conditions: DrainConditions): Drained {
    const queues = [...this.queues.values()];
    const batches: ProducerBatch[] = [];
    let requestSizeBytes = 0;
    let nextReadyAtMs = Number.POSITIVE_INFINITY;
    for (let step = 0; step < queues.length; step++) {
      const queue = queues[(this.drainStart + step) % queues.length]!;
      const first = queue.batches[0];
      if (first === undefined || queue.inFlight >= this.limits.maxInFlight) continue;
      const readyAtMs = this.readyAtMs(queue, first, conditions);
      if (readyAtMs > conditions.nowMs) {
        nextReadyAtMs = Math.min(nextReadyAtMs, readyAtMs);
        continue;
      }
      const fits = requestSizeBytes + first.estimatedSizeBytes <= this.limits.maxRequestSizeBytes;
      if (batches.length > 0 && !fits) {
        // The rest goes in the next request of this same drain round.
        nextReadyAtMs = conditions.nowMs;
        continue;
      }
      queue.batches.shift();
      if (!first.closed) this.closeBatch(first);
      queue.inFlight += 1;
      requestSizeBytes += first.estimatedSizeBytes;
      batches.push(first);
      // One batch per partition per request; a next one may go in the next request at once.
      if (queue.batches.length > 0 && queue.inFlight < this.limits.maxInFlight) {
        nextReadyAtMs = conditions.nowMs;
      }
    }
    this.drainStart = queues.length === 0 ? 0 : (this.drainStart + 1) % queues.length;
    return { batches, nextReadyAtMs };
  }

  /**
   * A batch came back: acknowledged, failed for good, or to be retried (`requeue`). A retried
   * batch goes back before every batch stamped after it (Kafka's insertInSequenceOrder), so an
   * idempotent producer's retries reach the leader in sequence order.
   */
  completed(batch: ProducerBatch, requeue: boolean): void {
    const queue = this.queueOf(batch.topic, batch.partition);
    queue.inFlight -= 1;
    if (requeue && Number.isFinite(batch.sequenceOrder)) {
      const before = queue.batches.findIndex(
        (queued) => queued.sequenceOrder > batch.sequenceOrder,
      );
      queue.batches.splice(before === -1 ? queue.batches.length : before, 0, batch);
    } else if (requeue) {
      queue.batches.unshift(batch);
    }
    if (queue.batches.length === 0 && queue.inFlight === 0) this.deleteQueue(queue);
  }

  /** Takes a queued batch out (it failed for good while waiting). */
  removeQueued(batch: ProducerBatch): void {
    const queue = this.queues.get(keyOf(batch.topic, batch.partition));
    if (queue === undefined) return;
    const index = queue.batches.indexOf(batch);
    if (index >= 0) queue.batches.splice(index, 1);
    if (queue.batches.length === 0 && queue.inFlight === 0) this.deleteQueue(queue);
  }

  private deleteQueue(queue: PartitionQueue): void {
    this.queues.delete(keyOf(queue.topic, queue.partition));
    if (this.lastQueue === queue) this.lastQueue = undefined;
  }

  /**
   * Kafka's expiredBatches: takes out the batches at the head of their queue whose delivery
   * timeout has passed (`deliveryTimeoutMs` since they were created), and says when the next
   * head will expire. Batches behind a head were created after it, so heads are enough.
   */
  expire(nowMs: number, deliveryTimeoutMs: number): Expired {
    const expired: ProducerBatch[] = [];
    let nextExpiryAtMs = Number.POSITIVE_INFINITY;
    for (const queue of this.queues.values()) {
      while (queue.batches.length > 0) {
        const expiresAtMs = queue.batches[0]!.createdAtMs + deliveryTimeoutMs;
        if (expiresAtMs > nowMs) {
          nextExpiryAtMs = Math.min(nextExpiryAtMs, expiresAtMs);
          break;
        }
        const batch = queue.batches.shift()!;
        if (!batch.closed) this.closeBatch(batch);
        expired.push(batch);
      }
      if (queue.batches.length === 0 && queue.inFlight === 0) this.deleteQueue(queue);
    }
    return { expired, nextExpiryAtMs };
  }

  /** Removes every queued batch (not those in flight), for a producer that gives up on them. */
  abandonQueued(): ProducerBatch[] {
    const abandoned: ProducerBatch[] = [];
    for (const queue of this.queues.values()) abandoned.push(...queue.batches.splice(0));
    return abandoned;
  }

  private readyAtMs(
    queue: PartitionQueue,
    first: ProducerBatch,
    conditions: DrainConditions,
  ): number {
    if (first.retryNotBeforeMs > conditions.nowMs) return first.retryNotBeforeMs;
    const isFull = first.isFull(this.limits.batchSizeBytes) || queue.batches.length > 1;
    if (isFull || first.closed || conditions.flushing || conditions.memoryExhausted) {
      return conditions.nowMs;
    }
    return first.createdAtMs + this.limits.lingerMs;
  }

  private closeBatch(batch: ProducerBatch): void {
    batch.close();
    this.onBatchClosed(batch);
  }

  private queueOf(topic: string, partition: number): PartitionQueue {
    const key = keyOf(topic, partition);
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, batches: [], inFlight: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }
}

function keyOf(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
