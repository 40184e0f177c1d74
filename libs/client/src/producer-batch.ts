import { assert, type SpoolError } from '@spool/common';
import {
  RecordBatchBuilder,
  recordBatchHeaderSizeBytes,
  type CompressionType,
  type RecordHeader,
} from '@spool/record-batch';
import type { BatchBufferPool } from './batch-buffer-pool';

/**
 * Records of one partition on their way to the gateway as one RecordBatch v2 (Kafka's
 * ProducerBatch). A batch is open while records join it and closed once the sender takes it.
 * Each record is written into the batch's bytes as it joins (RecordBatchBuilder, Kafka's
 * MemoryRecordsBuilder), so no record object outlives its `send`; the batch is compressed once,
 * and a retry sends the same records again. The batch has one
 * promise, `baseOffset`, for all its records: a record's offset is the base offset plus its index.
 * One promise per batch rather than per record: at 100 bytes a record, per-record promises and
 * their closures were a third of the producer's CPU time, in the garbage collector.
 */

export class ProducerBatch {
  private readonly builder: RecordBatchBuilder;
  /** The encoded size if the records were written with every varint at its widest. */
  private sizeUpperBoundBytes = recordBatchHeaderSizeBytes;
  /** Buffer memory the records hold until the batch is done. */
  private reservedBytes = 0;
  private encoded: Buffer | undefined;
  private isClosed = false;
  private isDone = false;
  private resolveDone!: () => void;
  /** Settles (never rejects) once the batch is acknowledged or failed for good. */
  readonly done: Promise<void> = new Promise((resolve) => (this.resolveDone = resolve));
  private resolveBaseOffset!: (baseOffset: bigint) => void;
  private rejectBaseOffset!: (error: SpoolError) => void;
  /** Where the leader wrote the batch (-1n when acks=0 told nothing), or the batch's error. */
  readonly baseOffset: Promise<bigint> = new Promise((resolve, reject) => {
    this.resolveBaseOffset = resolve;
    this.rejectBaseOffset = reject;
  });
  /** Attempts made so far; the first send is attempt 1. */
  attempts = 0;
  /** A retried batch waits for its backoff: not sent before this Date.now() value. */
  retryNotBeforeMs = 0;
  /** The retriable error of the last attempt, for the message if the batch expires. */
  lastError: SpoolError | undefined;
  /**
   * Idempotence (idempotence-manager.ts): the producer id, epoch and first sequence stamped in
   * the header, -1 until the batch is first sent; every retry sends the same ones.
   */
  producerId = -1n;
  producerEpoch = -1;
  baseSequence = -1;
  /** The order sequences were stamped in, per partition, so retries go back in that order. */
  sequenceOrder = Number.POSITIVE_INFINITY;
  /**
   * An attempt ended without a definite refusal (a timeout, a lost connection, a leader lost
   * after its write): the records may be in the log even though no answer said so.
   */
  possiblyWritten = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly createdAtMs: number,
    batchSizeBytes: number,
    private readonly pool?: BatchBufferPool,
  ) {
    this.builder = new RecordBatchBuilder({
      expectedSizeBytesMax: batchSizeBytes + recordBatchHeaderSizeBytes,
      buffer: pool?.take(),
    });
    // Callers await baseOffset only for batches they appended to; a failure is theirs to see.
    this.baseOffset.catch(() => {});
  }

  get recordCount(): number {
    return this.builder.recordCount;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  get estimatedSizeBytes(): number {
    return this.sizeUpperBoundBytes;
  }

  get memoryBytes(): number {
    return this.reservedBytes;
  }

  /**
   * Adds a record unless the batch is closed or it would pass `batchSizeBytes` (a record larger
   * than that still gets a batch of its own, as in Kafka). Returns the record's index in the
   * batch, or -1 if it was not added.
   */
  tryAppend(
    timestampMs: number,
    key: Buffer | null,
    value: Buffer | null,
    headers: readonly RecordHeader[] | undefined,
    sizeBytes: number,
    batchSizeBytes: number,
  ): number {
    if (this.isClosed) return -1;
    const count = this.builder.recordCount;
    if (count > 0 && this.sizeUpperBoundBytes + sizeBytes > batchSizeBytes) return -1;
    this.builder.append(timestampMs, key, value, headers);
    this.sizeUpperBoundBytes += sizeBytes;
    this.reservedBytes += sizeBytes;
    return count;
  }

  isFull(batchSizeBytes: number): boolean {
    return this.sizeUpperBoundBytes >= batchSizeBytes;
  }

  close(): void {
    this.isClosed = true;
  }

  /**
   * The batch's bytes (compressed on the first call), header and CRC written; throws what the
   * codec throws. A view of the batch's buffer: the request encoder copies it.
   */
  encode(compressionType: CompressionType): Buffer {
    // Its buffer may already hold another batch's records.
    assert(!this.isDone, 'a batch that is done is never sent again');
    this.encoded ??= this.builder.build({
      compressionType,
      producerId: this.producerId,
      producerEpoch: this.producerEpoch,
      baseSequence: this.baseSequence,
    });
    return this.encoded;
  }

  /**
   * Stamps (or, after an epoch bump, clears with -1s) the idempotence fields; the header is
   * written again with them, since the CRC covers them.
   */
  stamp(producerId: bigint, producerEpoch: number, baseSequence: number, order: number): void {
    this.producerId = producerId;
    this.producerEpoch = producerEpoch;
    this.baseSequence = baseSequence;
    this.sequenceOrder = order;
    this.encoded = undefined;
  }

  /** The leader wrote the batch at `baseOffset` (-1n when acks=0 told nothing). */
  complete(baseOffset: bigint): void {
    if (this.isDone) return;
    this.isDone = true;
    this.releaseBuffer();
    this.resolveBaseOffset(baseOffset < 0n ? -1n : baseOffset);
    this.resolveDone();
  }

  fail(error: SpoolError): void {
    if (this.isDone) return;
    this.isDone = true;
    this.releaseBuffer();
    this.rejectBaseOffset(error);
    this.resolveDone();
  }

  /**
   * Done: the records are in the log or failed for good, and every request that carried them
   * was encoded (copied) when it was sent, so the buffer can hold another batch.
   */
  private releaseBuffer(): void {
    this.encoded = undefined;
    this.pool?.give(this.builder.backingBuffer);
  }
}
