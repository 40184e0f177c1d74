/**
 * A partition's idempotent producers (Kafka's ProducerStateManager): for each producer id its
 * epoch and the metadata of its last five batches (sequences, offsets, timestamp). The leader
 * checks every idempotent batch against it before writing; every replica updates it from the
 * batches it writes, so a follower that becomes leader already knows each producer.
 *
 * The leader's checks, per batch with a producer id (Kafka's ProducerAppendInfo.checkSequence),
 * in the order the batches of a request come, each against the state the batches before it in
 * the same request would leave:
 *
 *   1. A producer epoch older than the known one: INVALID_PRODUCER_EPOCH (a zombie producer).
 *   2. A newer epoch: the producer bumped its epoch, so its sequences restart; the batch must
 *      start at sequence 0 (else OUT_OF_ORDER_SEQUENCE_NUMBER) and replaces the producer's
 *      batches.
 *   3. An unknown producer whose batch does not start at sequence 0: UNKNOWN_PRODUCER_ID, as
 *      Kafka answers since KIP-360. Its state expired (or was never written, the log having been
 *      deleted below it): the producer cannot be told from one that skipped records, so it must
 *      bump its epoch and start again at 0. Kafka's client does exactly that.
 *   4. A batch whose first and last sequence equal those of one of the five retained batches:
 *      a duplicate (the producer retried a batch whose answer it lost). The request writes
 *      nothing and is answered with the original offsets.
 *   5. Otherwise the batch must continue the latest one: baseSequence = lastSequence + 1, with
 *      int32 wrap to 0 (else OUT_OF_ORDER_SEQUENCE_NUMBER: a gap, or a duplicate older than the
 *      five retained batches, which cannot be told apart).
 *
 * A request is either all duplicates (answered with the first duplicate's base offset and the
 * last one's last offset) or all new batches; a mix is refused as INVALID_RECORD, because no
 * single answer would be true (Spool's producers send one batch per partition per request).
 *
 * Bounds: at most `maxProducers` producers; beyond that the producer updated least recently is
 * evicted (its retries then get UNKNOWN_PRODUCER_ID and it bumps its epoch). Producers whose
 * last batch timestamp is older than `producerIdExpirationMs` are removed by
 * `removeExpiredProducers` (Kafka's producer.id.expiration.ms, default one day).
 *
 * Interleaving: every method is synchronous; the leader checks and the log append run in one
 * turn of the event loop, so no other append can come between a check and its write.
 */
import { incrementSequence, type RecordBatchHeader } from '@spool/record-batch';
import { SpoolError } from '@spool/common';

/** Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN. */
export const producerBatchesRetained = 5;

export interface ProducerStateSettings {
  /** Kafka's producer.id.expiration.ms. */
  readonly producerIdExpirationMs: number;
  /** The most producers one partition remembers; the least recently updated goes first. */
  readonly maxProducers: number;
}

export const producerStateSettingsDefault: ProducerStateSettings = {
  producerIdExpirationMs: 86_400_000,
  maxProducers: 10_000,
};

/** What the log holds of one idempotent batch. */
export interface ProducerBatchMetadata {
  readonly baseSequence: number;
  readonly lastSequence: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  /** The batch's max timestamp. */
  readonly timestampMs: number;
}

export interface ProducerStateEntry {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** Oldest first, at most producerBatchesRetained. */
  readonly batches: readonly ProducerBatchMetadata[];
  /** The newest batch timestamp seen; expiration counts from it. */
  readonly lastTimestampMs: number;
}

/** The producer fields of one batch, read from its header only. */
export interface ProducerBatchHeader {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly lastSequence: number;
  readonly maxTimestampMs: number;
}

/** The outcome of the leader's check of one request's batches. */
export type LeaderAppendCheck =
  | { readonly kind: 'append' }
  | { readonly kind: 'duplicate'; readonly baseOffset: bigint; readonly lastOffset: bigint };

/**
 * The producer fields of a batch header. A batch without timestamps (-1) counts as written now,
 * so its producer expires a full producer.id.expiration.ms later, not at once.
 */
export function producerBatchHeaderOf(header: RecordBatchHeader): ProducerBatchHeader {
  const maxTimestampMs = Number(header.maxTimestampMs);
  return {
    producerId: header.producerId,
    producerEpoch: header.producerEpoch,
    baseSequence: header.baseSequence,
    lastSequence: header.lastSequence,
    maxTimestampMs: maxTimestampMs >= 0 ? maxTimestampMs : Date.now(),
  };
}

export class ProducerStateManager {
  /** In update order: the first entry is the least recently updated (eviction order). */
  private readonly producers = new Map<bigint, ProducerStateEntry>();

  constructor(
    readonly partitionName: string,
    private readonly settings: ProducerStateSettings = producerStateSettingsDefault,
  ) {}

  get producerCount(): number {
    return this.producers.size;
  }

  get(producerId: bigint): ProducerStateEntry | undefined {
    return this.producers.get(producerId);
  }

  entries(): IterableIterator<ProducerStateEntry> {
    return this.producers.values();
  }

  /**
   * Each producer's last batch: producer id → that batch's last offset. The log cleaner keeps
   * these batches whole, so a state rebuilt from the log knows every producer's last sequence.
   */
  lastBatchOffsets(): Map<bigint, bigint> {
    const offsets = new Map<bigint, bigint>();
    for (const entry of this.entries()) {
      const last = entry.batches.at(-1);
      if (last !== undefined) offsets.set(entry.producerId, last.lastOffset);
    }
    return offsets;
  }

  clear(): void {
    this.producers.clear();
  }

  /**
   * The leader's check of a request's batches (cases 1-5 of the header), before anything is
   * written. Batches without a producer id pass. Throws the first failure; changes nothing.
   */
  checkLeaderAppend(batches: readonly ProducerBatchHeader[]): LeaderAppendCheck {
    const pending = new Map<bigint, ProducerStateEntry>();
    let duplicate: { baseOffset: bigint; lastOffset: bigint } | undefined;
    let newBatches = 0;
    for (const batch of batches) {
      if (batch.producerId < 0n) {
        newBatches++;
        continue;
      }
      this.checkFields(batch);
      const current = pending.get(batch.producerId) ?? this.producers.get(batch.producerId);
      const original = this.checkSequence(current, batch);
      if (original !== undefined) {
        duplicate = {
          baseOffset: duplicate?.baseOffset ?? original.baseOffset,
          lastOffset: original.lastOffset,
        };
        continue;
      }
      newBatches++;
      // A stand-in offset: only sequences and epochs matter to the next batch's check.
      pending.set(batch.producerId, appendBatch(current, batch, -1n, -1n));
    }
    if (duplicate === undefined) return { kind: 'append' };
    if (newBatches > 0) {
      throw new SpoolError(
        'INVALID_RECORD',
        `a produce request to ${this.partitionName} mixes batches already written (duplicates) ` +
          'with new ones; send one batch per partition per request',
      );
    }
    return { kind: 'duplicate', ...duplicate };
  }

  /**
   * Records a batch the log now holds at [baseOffset, lastOffset]: after the leader's write, on
   * a follower, and when state is rebuilt from the log. No checks: the log is the truth.
   */
  update(batch: ProducerBatchHeader, baseOffset: bigint, lastOffset: bigint): void {
    if (batch.producerId < 0n) return;
    const current = this.producers.get(batch.producerId);
    const next = appendBatch(current, batch, baseOffset, lastOffset);
    // Re-insert so the map's order stays the update order.
    this.producers.delete(batch.producerId);
    this.producers.set(batch.producerId, next);
    if (this.producers.size > this.settings.maxProducers) {
      const leastRecent = this.producers.keys().next().value as bigint;
      this.producers.delete(leastRecent);
    }
  }

  /** Replaces the whole state (a snapshot was loaded). */
  load(entries: Iterable<ProducerStateEntry>): void {
    this.producers.clear();
    const sorted = [...entries].sort((left, right) => left.lastTimestampMs - right.lastTimestampMs);
    for (const entry of sorted) this.producers.set(entry.producerId, entry);
    while (this.producers.size > this.settings.maxProducers) {
      this.producers.delete(this.producers.keys().next().value as bigint);
    }
  }

  /** Kafka's removeExpiredProducers: forgets producers silent for producerIdExpirationMs. */
  removeExpiredProducers(nowMs: number): number {
    let removed = 0;
    for (const [producerId, entry] of this.producers) {
      if (nowMs - entry.lastTimestampMs >= this.settings.producerIdExpirationMs) {
        this.producers.delete(producerId);
        removed++;
      }
    }
    return removed;
  }

  private checkFields(batch: ProducerBatchHeader): void {
    if (batch.producerEpoch < 0 || batch.baseSequence < 0) {
      throw new SpoolError(
        'INVALID_RECORD',
        `a batch of producer ${batch.producerId} to ${this.partitionName} has producer epoch ` +
          `${batch.producerEpoch} and base sequence ${batch.baseSequence}; an idempotent batch ` +
          'needs both at 0 or more',
      );
    }
  }

  /** Cases 1-5; returns the original batch of a duplicate, throws for a refusal. */
  private checkSequence(
    current: ProducerStateEntry | undefined,
    batch: ProducerBatchHeader,
  ): ProducerBatchMetadata | undefined {
    const subject = `producer ${batch.producerId} on ${this.partitionName}`;
    // 3.
    if (current === undefined) {
      if (batch.baseSequence === 0) return undefined;
      throw new SpoolError(
        'UNKNOWN_PRODUCER_ID',
        `${subject} is not known (expired, or its records were deleted) and its batch starts at ` +
          `sequence ${batch.baseSequence}, not 0; bump the epoch and start again at 0`,
      );
    }
    // 1.
    if (batch.producerEpoch < current.producerEpoch) {
      throw new SpoolError(
        'INVALID_PRODUCER_EPOCH',
        `${subject}: epoch ${batch.producerEpoch} is older than the current epoch ` +
          `${current.producerEpoch}; a newer instance of this producer has fenced it`,
      );
    }
    // 2.
    if (batch.producerEpoch > current.producerEpoch) {
      if (batch.baseSequence === 0) return undefined;
      throw new SpoolError(
        'OUT_OF_ORDER_SEQUENCE_NUMBER',
        `${subject}: the first batch of the new epoch ${batch.producerEpoch} starts at sequence ` +
          `${batch.baseSequence}, not 0`,
      );
    }
    // 4.
    const original = current.batches.find(
      (retained) =>
        retained.baseSequence === batch.baseSequence &&
        retained.lastSequence === batch.lastSequence,
    );
    if (original !== undefined) return original;
    // 5.
    const latest = current.batches.at(-1);
    const expected = latest === undefined ? 0 : incrementSequence(latest.lastSequence, 1);
    if (batch.baseSequence !== expected) {
      throw new SpoolError(
        'OUT_OF_ORDER_SEQUENCE_NUMBER',
        `${subject} at epoch ${batch.producerEpoch}: expected sequence ${expected}, got a batch ` +
          `of sequences ${batch.baseSequence}-${batch.lastSequence}`,
      );
    }
    return undefined;
  }
}

/** The entry after `batch`: a new epoch starts a fresh batch list; at most five are kept. */
function appendBatch(
  current: ProducerStateEntry | undefined,
  batch: ProducerBatchHeader,
  baseOffset: bigint,
  lastOffset: bigint,
): ProducerStateEntry {
  const sameEpoch = current !== undefined && current.producerEpoch === batch.producerEpoch;
  const kept = sameEpoch ? current.batches.slice(-(producerBatchesRetained - 1)) : [];
  kept.push({
    baseSequence: batch.baseSequence,
    lastSequence: batch.lastSequence,
    baseOffset,
    lastOffset,
    timestampMs: batch.maxTimestampMs,
  });
  return {
    producerId: batch.producerId,
    // A follower or a rebuild may see an older epoch after a newer one only if the log says so;
    // the log is the truth, so the batch's epoch wins.
    producerEpoch: batch.producerEpoch,
    batches: kept,
    lastTimestampMs: Math.max(current?.lastTimestampMs ?? -1, batch.maxTimestampMs),
  };
}
