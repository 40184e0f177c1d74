import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { crc32c } from './crc32c';
import {
  attributesPosition,
  baseOffsetPosition,
  baseSequencePosition,
  baseTimestampPosition,
  batchLengthPosition,
  compressionCodecMask,
  controlFlagMask,
  crcPosition,
  deleteHorizonFlagMask,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicPosition,
  maxTimestampPosition,
  noProducerId,
  noSequence,
  partitionLeaderEpochPosition,
  producerEpochPosition,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
  recordCountPosition,
  recordsPosition,
  TimestampType,
  timestampTypeMask,
  transactionalFlagMask,
} from './record-batch-layout';

const twoToThe32 = 0x1_0000_0000;

/**
 * Reading and patching the 61-byte header of a batch where it lies, without decoding records:
 * the leader's produce path and the log's recovery scan cost one header read per batch.
 * Nothing here checks the CRC except `computeCrc`; see record-batch-validator.ts for that.
 */

function ensureReadable(buffer: Buffer, position: number, sizeBytes: number, what: string): void {
  if (!Number.isInteger(position) || position < 0 || position + sizeBytes > buffer.length) {
    throw new RecordBatchError(
      RecordBatchErrorCode.CorruptMessage,
      `record batch at position ${position}: ${what} needs ${sizeBytes} bytes but the buffer ` +
        `holds ${Math.max(buffer.length - position, 0)} from there`,
    );
  }
}

/**
 * A view of one batch header in `buffer` at `position`: each getter reads its field from the
 * bytes on demand, so a view costs one small object and no copy. The view sees later patches.
 */
export class RecordBatchHeader {
  readonly buffer: Buffer;
  readonly position: number;

  constructor(buffer: Buffer, position: number) {
    ensureReadable(buffer, position, recordBatchHeaderSizeBytes, 'the header');
    this.buffer = buffer;
    this.position = position;
  }

  get baseOffset(): bigint {
    return this.buffer.readBigInt64BE(this.position + baseOffsetPosition);
  }

  /** The batch's size without the LOG_OVERHEAD bytes, as stored. */
  get batchLength(): number {
    return this.buffer.readInt32BE(this.position + batchLengthPosition);
  }

  /** The whole batch in bytes, header included. */
  get sizeBytes(): number {
    return this.batchLength + logOverheadSizeBytes;
  }

  get partitionLeaderEpoch(): number {
    return this.buffer.readInt32BE(this.position + partitionLeaderEpochPosition);
  }

  get magic(): number {
    return this.buffer.readInt8(this.position + magicPosition);
  }

  /** The stored CRC-32C, unsigned. */
  get crc(): number {
    return this.buffer.readUInt32BE(this.position + crcPosition);
  }

  get attributes(): number {
    return this.buffer.readInt16BE(this.position + attributesPosition);
  }

  /** The compression id of attribute bits 0-2; see CompressionType (5-7 are unknown). */
  get compressionType(): number {
    return this.attributes & compressionCodecMask;
  }

  get timestampType(): TimestampType {
    return this.attributes & timestampTypeMask
      ? TimestampType.LogAppendTime
      : TimestampType.CreateTime;
  }

  get isTransactional(): boolean {
    return (this.attributes & transactionalFlagMask) !== 0;
  }

  get isControl(): boolean {
    return (this.attributes & controlFlagMask) !== 0;
  }

  /** Set by log compaction: baseTimestamp then holds the delete horizon. */
  get hasDeleteHorizon(): boolean {
    return (this.attributes & deleteHorizonFlagMask) !== 0;
  }

  get lastOffsetDelta(): number {
    return this.buffer.readInt32BE(this.position + lastOffsetDeltaPosition);
  }

  get lastOffset(): bigint {
    return this.baseOffset + BigInt(this.lastOffsetDelta);
  }

  get baseTimestampMs(): bigint {
    return this.buffer.readBigInt64BE(this.position + baseTimestampPosition);
  }

  get maxTimestampMs(): bigint {
    return this.buffer.readBigInt64BE(this.position + maxTimestampPosition);
  }

  get producerId(): bigint {
    return this.buffer.readBigInt64BE(this.position + producerIdPosition);
  }

  get hasProducerId(): boolean {
    return this.producerId > noProducerId;
  }

  get producerEpoch(): number {
    return this.buffer.readInt16BE(this.position + producerEpochPosition);
  }

  get baseSequence(): number {
    return this.buffer.readInt32BE(this.position + baseSequencePosition);
  }

  /** Kafka's DefaultRecordBatch.lastSequence: the sequence of the batch's last record. */
  get lastSequence(): number {
    const baseSequence = this.baseSequence;
    if (baseSequence === noSequence) return noSequence;
    return incrementSequence(baseSequence, this.lastOffsetDelta);
  }

  get recordCount(): number {
    return this.buffer.readInt32BE(this.position + recordCountPosition);
  }

  /** Where the records section starts in `buffer`. */
  get recordsPosition(): number {
    return this.position + recordsPosition;
  }

  get recordsSizeBytes(): number {
    return this.sizeBytes - recordBatchHeaderSizeBytes;
  }

  /** CRC-32C over attributes to the end of the batch; the whole batch must be in the buffer. */
  computeCrc(): number {
    const sizeBytes = Math.max(this.sizeBytes, recordBatchHeaderSizeBytes);
    ensureReadable(this.buffer, this.position, sizeBytes, 'the CRC over its batchLength');
    return crc32c(this.buffer, this.position + attributesPosition, this.position + sizeBytes);
  }
}

/** Kafka's DefaultRecordBatch.incrementSequence: producer sequences wrap from Int32 max to 0. */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > 0x7fffffff - increment) return increment - (0x7fffffff - sequence) - 1;
  return sequence + increment;
}

/** The size of the batch at `position` from its length prefix, without reading further. */
export function recordBatchSizeBytes(buffer: Buffer, position: number): number {
  ensureReadable(buffer, position, logOverheadSizeBytes, 'the length prefix');
  return buffer.readInt32BE(position + batchLengthPosition) + logOverheadSizeBytes;
}

/** The offset of the last record of the batch at `position`: baseOffset + lastOffsetDelta. */
export function lastOffsetOf(buffer: Buffer, position: number): bigint {
  ensureReadable(buffer, position, lastOffsetDeltaPosition + 4, 'the last offset delta');
  return (
    buffer.readBigInt64BE(position + baseOffsetPosition) +
    BigInt(buffer.readInt32BE(position + lastOffsetDeltaPosition))
  );
}

/**
 * Assigns the batch's offsets in place (Kafka's setLastOffset, by its first offset). The CRC
 * does not cover baseOffset, so it stays valid.
 */
export function setBaseOffset(buffer: Buffer, position: number, baseOffset: bigint): void {
  ensureReadable(buffer, position, recordBatchHeaderSizeBytes, 'the header');
  const value = Number(baseOffset);
  if (!Number.isSafeInteger(value)) {
    // Past 2^53 a number would round: bigint arithmetic, and its RangeError outside int64.
    buffer.writeBigInt64BE(baseOffset, position + baseOffsetPosition);
    return;
  }
  // Two 32-bit halves, both exact: Math.floor of a division by 2^32, and a rest below 2^32.
  // The same bytes as writeBigInt64BE, without its bigint masks and shifts on every append.
  const high = Math.floor(value / twoToThe32);
  buffer.writeInt32BE(high, position + baseOffsetPosition);
  buffer.writeUInt32BE(value - high * twoToThe32, position + baseOffsetPosition + 4);
}

/**
 * Stamps the leader epoch the batch was appended under (Kafka's setPartitionLeaderEpoch). The
 * CRC does not cover it, so it stays valid.
 */
export function setPartitionLeaderEpoch(
  buffer: Buffer,
  position: number,
  partitionLeaderEpoch: number,
): void {
  ensureReadable(buffer, position, recordBatchHeaderSizeBytes, 'the header');
  buffer.writeInt32BE(partitionLeaderEpoch, position + partitionLeaderEpochPosition);
}

/**
 * For a topic with message.timestamp.type=LogAppendTime: marks the batch's timestamp type as
 * LogAppendTime and sets maxTimestamp to the append time, which readers then report for every
 * record (Kafka's setMaxTimestamp). Both fields are under the CRC, so it is recomputed over the
 * whole batch: validate the batch first, or this would bless corrupted bytes with a fresh CRC.
 */
export function setMaxTimestampAndLogAppendTime(
  buffer: Buffer,
  position: number,
  logAppendTimeMs: bigint,
): void {
  const header = new RecordBatchHeader(buffer, position);
  const isUnchanged =
    header.timestampType === TimestampType.LogAppendTime &&
    header.maxTimestampMs === logAppendTimeMs;
  if (isUnchanged) return;
  const attributes = header.attributes | timestampTypeMask;
  buffer.writeInt16BE(attributes, position + attributesPosition);
  buffer.writeBigInt64BE(logAppendTimeMs, position + maxTimestampPosition);
  buffer.writeUInt32BE(header.computeCrc(), position + crcPosition);
}
