import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { compressionCodecFor } from './compression-codec';
import { crc32c } from './crc32c';
import type { RecordHeader } from './record';
import {
  attributesPosition,
  baseOffsetPosition,
  baseSequencePosition,
  baseTimestampPosition,
  batchLengthPosition,
  CompressionType,
  crcPosition,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicPosition,
  magicValueV2,
  maxTimestampPosition,
  noPartitionLeaderEpoch,
  partitionLeaderEpochPosition,
  producerEpochPosition,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
  recordCountPosition,
} from './record-batch-layout';
import { sizeOfBytesField, writeBytesField } from './record-writer';
import { sizeOfVarint, sizeOfVarlongNumber, writeVarint, writeVarlongNumber } from './varint';

/**
 * Kafka's MemoryRecordsBuilder: a producer's batch written record by record, as the records
 * arrive, into one growing buffer behind a header left blank until `build`. Records are never
 * held as objects: at 100 bytes a record, keeping them until the batch was sent made them
 * survive young-generation collections, and the producer spent a fifth of its time in the
 * garbage collector. The bytes are those encodeRecordBatch writes for the same records (tested
 * against it), so retries and the leader see exactly Kafka's layout:
 *
 *   [0, 61)          header: written by `build` (baseOffset 0, CRC over attributes..end)
 *   [61, sizeBytes)  records: length varint, attributes 0, timestampDelta varlong, offsetDelta
 *                    varint (the record's index), key, value, headers (record-writer.ts)
 *
 * Timestamps are numbers here (milliseconds since the epoch, -1 for none, below 2^52), so
 * appending allocates nothing per record. `build` can run again after the idempotence fields
 * change (a retry with a new epoch): it rewrites the header and the CRC, never the records.
 */

/** Below this magnitude a zigzag-mapped number is still an exact double. */
const varlongNumberMagnitudeMax = 2 ** 52;
const initialCapacityBytesDefault = 16 * 1024;
const int32Max = 0x7fffffff;

export interface RecordBatchFields {
  readonly compressionType: CompressionType;
  /** -1n when not idempotent. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** The sequence of the first record; -1 when not idempotent. */
  readonly baseSequence: number;
}

function invalidRecord(problem: string): RecordBatchError {
  return new RecordBatchError(RecordBatchErrorCode.InvalidRecord, `cannot add record: ${problem}`);
}

export class RecordBatchBuilder {
  private buffer: Buffer;
  private position = recordBatchHeaderSizeBytes;
  private count = 0;
  private baseTimestampMs = 0;
  private maxTimestampMs = -1;
  /** The records as sent when compressed, kept so a rebuild does not compress again. */
  private compressed: { readonly type: CompressionType; readonly bytes: Buffer } | undefined;

  private readonly expectedSizeBytesMax: number;

  /**
   * @param options.expectedSizeBytesMax the size the batch is expected to stay within (the
   *   producer's batchSizeBytes plus the header): the buffer starts at the smaller of it and
   *   16 KiB and doubles, up to it first; past it (a record larger than the batch size) it
   *   doubles on.
   * @param options.buffer a buffer to write into first (a producer's pooled batch buffer), in
   *   place of a new one; the builder owns it until its batch is done.
   */
  constructor(options: { expectedSizeBytesMax?: number; buffer?: Buffer } = {}) {
    this.expectedSizeBytesMax = options.expectedSizeBytesMax ?? Number.POSITIVE_INFINITY;
    this.buffer =
      options.buffer !== undefined && options.buffer.length >= recordBatchHeaderSizeBytes + 64
        ? options.buffer
        : Buffer.allocUnsafe(
            Math.max(
              recordBatchHeaderSizeBytes + 64,
              Math.min(initialCapacityBytesDefault, Math.floor(this.expectedSizeBytesMax)),
            ),
          );
  }

  /** The buffer the records are in: the one given, unless the batch outgrew it. */
  get backingBuffer(): Buffer {
    return this.buffer;
  }

  get recordCount(): number {
    return this.count;
  }

  /** The batch's size uncompressed, header included. */
  get sizeBytes(): number {
    return this.position;
  }

  /**
   * Writes one record at the end; its offset delta is its index. Throws INVALID_RECORD for a
   * timestamp that is not an integer from -1 to 2^52 (or too far from the first record's).
   */
  append(
    timestampMs: number,
    key: Buffer | null,
    value: Buffer | null,
    headers?: readonly RecordHeader[],
  ): void {
    if (this.compressed !== undefined) throw invalidRecord('the batch was already built');
    if (!Number.isSafeInteger(timestampMs) || timestampMs < -1) {
      throw invalidRecord(
        `timestamp ${timestampMs} is not milliseconds since the epoch (an integer, or -1)`,
      );
    }
    if (this.count === 0) this.baseTimestampMs = timestampMs;
    const timestampDelta = timestampMs - this.baseTimestampMs;
    if (Math.abs(timestampDelta) >= varlongNumberMagnitudeMax / 2) {
      throw invalidRecord(`timestamp ${timestampMs} is too far from the batch's first record's`);
    }
    const offsetDelta = this.count;
    let headerKeySizes: number[] | undefined;
    let bodySizeBytes =
      1 +
      sizeOfVarlongNumber(timestampDelta) +
      sizeOfVarint(offsetDelta) +
      sizeOfBytesField(key) +
      sizeOfBytesField(value);
    const headerCount = headers?.length ?? 0;
    bodySizeBytes += sizeOfVarint(headerCount);
    if (headerCount > 0) {
      headerKeySizes = new Array<number>(headerCount);
      for (let index = 0; index < headerCount; index++) {
        const header = headers![index]!;
        const keySizeBytes = Buffer.byteLength(header.key, 'utf8');
        headerKeySizes[index] = keySizeBytes;
        bodySizeBytes += sizeOfVarint(keySizeBytes) + keySizeBytes + sizeOfBytesField(header.value);
      }
    }
    const recordSizeBytes = sizeOfVarint(bodySizeBytes) + bodySizeBytes;
    if (this.position + recordSizeBytes - logOverheadSizeBytes > int32Max) {
      throw invalidRecord(`the batch would pass batchLength's range of ${int32Max} bytes`);
    }
    this.ensureCapacity(this.position + recordSizeBytes);
    const buffer = this.buffer;
    let next = writeVarint(buffer, this.position, bodySizeBytes);
    buffer[next++] = 0;
    next = writeVarlongNumber(buffer, next, timestampDelta);
    next = writeVarint(buffer, next, offsetDelta);
    next = writeBytesField(buffer, next, key);
    next = writeBytesField(buffer, next, value);
    next = writeVarint(buffer, next, headerCount);
    for (let index = 0; index < headerCount; index++) {
      const header = headers![index]!;
      const keySizeBytes = headerKeySizes![index]!;
      next = writeVarint(buffer, next, keySizeBytes);
      next += buffer.write(header.key, next, keySizeBytes, 'utf8');
      next = writeBytesField(buffer, next, header.value);
    }
    this.position = next;
    this.count += 1;
    if (timestampMs > this.maxTimestampMs) this.maxTimestampMs = timestampMs;
  }

  /**
   * The batch's bytes, header written (baseOffset 0, leader epoch -1: the leader sets both in
   * place). A compressed batch is compressed on the first call only; after that no record can
   * be added. The result is a view of the builder's buffer, valid until the next `build`.
   */
  build(fields: RecordBatchFields): Buffer {
    if (this.count === 0) throw invalidRecord('a batch needs at least one record');
    let batch: Buffer;
    if (fields.compressionType === CompressionType.None) {
      batch = this.buffer.subarray(0, this.position);
    } else {
      if (this.compressed?.type !== fields.compressionType) {
        const records = this.buffer.subarray(recordBatchHeaderSizeBytes, this.position);
        const compressedRecords = compressionCodecFor(fields.compressionType).compress(records);
        const bytes = Buffer.allocUnsafe(recordBatchHeaderSizeBytes + compressedRecords.length);
        compressedRecords.copy(bytes, recordBatchHeaderSizeBytes);
        this.compressed = { type: fields.compressionType, bytes };
      }
      batch = this.compressed.bytes;
    }
    batch.writeBigInt64BE(0n, baseOffsetPosition);
    batch.writeInt32BE(batch.length - logOverheadSizeBytes, batchLengthPosition);
    batch.writeInt32BE(noPartitionLeaderEpoch, partitionLeaderEpochPosition);
    batch.writeInt8(magicValueV2, magicPosition);
    batch.writeInt16BE(fields.compressionType, attributesPosition);
    batch.writeInt32BE(this.count - 1, lastOffsetDeltaPosition);
    batch.writeBigInt64BE(BigInt(this.baseTimestampMs), baseTimestampPosition);
    batch.writeBigInt64BE(BigInt(this.maxTimestampMs), maxTimestampPosition);
    batch.writeBigInt64BE(fields.producerId, producerIdPosition);
    batch.writeInt16BE(fields.producerEpoch, producerEpochPosition);
    batch.writeInt32BE(fields.baseSequence, baseSequencePosition);
    batch.writeInt32BE(this.count, recordCountPosition);
    batch.writeUInt32BE(crc32c(batch, attributesPosition, batch.length), crcPosition);
    return batch;
  }

  /** Grows by doubling, so a batch of n bytes costs at most n bytes of copying. */
  private ensureCapacity(sizeBytes: number): void {
    if (sizeBytes <= this.buffer.length) return;
    const doubled =
      this.buffer.length < this.expectedSizeBytesMax
        ? Math.min(this.buffer.length * 2, this.expectedSizeBytesMax)
        : this.buffer.length * 2;
    const grown = Buffer.allocUnsafe(Math.max(sizeBytes, doubled));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }
}
