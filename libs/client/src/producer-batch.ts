import type { SpoolError } from '@spool/common';
import {
  encodeRecordBatch,
  recordBatchHeaderSizeBytes,
  type CompressionType,
  type RecordInput,
} from '@spool/protocol';

/**
 * Records of one partition on their way to the gateway as one RecordBatch v2 (Kafka's
 * ProducerBatch). A batch is open while records join it and closed once the sender takes it; it
 * is encoded (and compressed) once, and a retry sends the same bytes again. Each record's promise
 * settles with its offset, the batch's base offset plus the record's index, or with the batch's
 * error.
 */
interface RecordCompletion {
  readonly resolve: (offset: bigint) => void;
  readonly reject: (error: SpoolError) => void;
}

export class ProducerBatch {
  readonly records: RecordInput[] = [];
  private readonly completions: RecordCompletion[] = [];
  /** The encoded size if the records were written with every varint at its widest. */
  private sizeUpperBoundBytes = recordBatchHeaderSizeBytes;
  /** Buffer memory the records hold until the batch is done. */
  private reservedBytes = 0;
  private encoded: Buffer | undefined;
  private isClosed = false;
  private isDone = false;
  private resolveDone!: () => void;
  /** Settles (never rejects) once every record's promise has settled. */
  readonly done: Promise<void> = new Promise((resolve) => (this.resolveDone = resolve));
  /** Attempts made so far; the first send is attempt 1. */
  attempts = 0;
  /** A retried batch waits for its backoff: not sent before this Date.now() value. */
  retryNotBeforeMs = 0;
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
  ) {}

  get recordCount(): number {
    return this.records.length;
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
   * than that still gets a batch of its own, as in Kafka). Returns its offset's promise.
   */
  tryAppend(
    record: RecordInput,
    sizeBytes: number,
    batchSizeBytes: number,
  ): Promise<bigint> | undefined {
    if (this.isClosed) return undefined;
    if (this.records.length > 0 && this.sizeUpperBoundBytes + sizeBytes > batchSizeBytes) {
      return undefined;
    }
    this.records.push(record);
    this.sizeUpperBoundBytes += sizeBytes;
    this.reservedBytes += sizeBytes;
    return new Promise<bigint>((resolve, reject) => this.completions.push({ resolve, reject }));
  }

  isFull(batchSizeBytes: number): boolean {
    return this.sizeUpperBoundBytes >= batchSizeBytes;
  }

  close(): void {
    this.isClosed = true;
  }

  /** The batch's bytes, encoded on the first call; throws what the encoder or codec throws. */
  encode(compressionType: CompressionType): Buffer {
    this.encoded ??= encodeRecordBatch({
      baseOffset: 0n,
      records: this.records,
      compressionType,
      producerId: this.producerId,
      producerEpoch: this.producerEpoch,
      baseSequence: this.baseSequence,
    });
    return this.encoded;
  }

  /**
   * Stamps (or, after an epoch bump, clears with -1s) the idempotence fields; the bytes are
   * encoded again with them, since the CRC covers them.
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
    this.completions.forEach((completion, index) =>
      completion.resolve(baseOffset < 0n ? -1n : baseOffset + BigInt(index)),
    );
    this.resolveDone();
  }

  fail(error: SpoolError): void {
    if (this.isDone) return;
    this.isDone = true;
    for (const completion of this.completions) completion.reject(error);
    this.resolveDone();
  }
}
