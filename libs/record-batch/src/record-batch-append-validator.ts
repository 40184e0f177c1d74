import { crc32c } from './crc32c';
import {
  attributesPosition,
  baseOffsetPosition,
  baseSequencePosition,
  batchLengthMin,
  batchLengthPosition,
  compressionCodecMask,
  CompressionType,
  controlFlagMask,
  crcPosition,
  headerSizeUpToMagicBytes,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicPosition,
  magicValueV2,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
  recordCountPosition,
  recordSizeBytesMin,
} from './record-batch-layout';
import {
  splitRecordBatches,
  validateRecordBatch,
  type RecordBatchValidationOptions,
} from './record-batch-validator';

/**
 * The checks of `splitRecordBatches` (record-batch-validator.ts, checks 1-8) in one pass that
 * reads each header field once, straight from the buffer, and makes no header view per batch:
 * the log's append path runs it for every produced batch and needs only where each one starts.
 *
 * Accepting and refusing are the same as `splitRecordBatches`, and so is every error: this pass
 * only decides whether a batch passes. When one does not, the batch is validated again by
 * `validateRecordBatch`, which throws the typed error with its usual message; the second look
 * costs nothing on the path that matters, where every batch is good. `deep` (check 9) reads the
 * records, so with it this hands the whole buffer to `splitRecordBatches`.
 */

/**
 * Validates every batch of a buffer of concatenated batches, which must end exactly at the end
 * of the last batch, and returns the position of each batch in order (none for an empty buffer).
 */
export function splitRecordBatchPositions(
  buffer: Buffer,
  options: RecordBatchValidationOptions,
): number[] {
  if (options.deep === true) {
    return splitRecordBatches(buffer, options).map((header) => header.position);
  }
  const isClient = (options.origin ?? 'client') === 'client';
  const maxBatchSizeBytes = options.maxBatchSizeBytes;
  const positions: number[] = [];
  let position = 0;
  while (position < buffer.length) {
    const sizeBytes = passingBatchSizeBytes(buffer, position, maxBatchSizeBytes, isClient);
    if (sizeBytes < 0) {
      validateRecordBatch(buffer, position, options);
      throw new Error(
        `splitRecordBatchPositions refused the batch at position ${position}, ` +
          'but validateRecordBatch accepted it: the two disagree',
      );
    }
    positions.push(position);
    position += sizeBytes;
  }
  return positions;
}

/**
 * The size of the batch at `position` when it passes checks 1-8, else -1. The numbers follow
 * the checks of record-batch-validator.ts; each condition is the negation of its refusal there.
 */
function passingBatchSizeBytes(
  buffer: Buffer,
  position: number,
  maxBatchSizeBytes: number,
  isClient: boolean,
): number {
  const remainingBytes = buffer.length - position;
  // 1.
  if (remainingBytes < headerSizeUpToMagicBytes) return -1;
  if (buffer.readInt8(position + magicPosition) !== magicValueV2) return -1;
  // 2.
  const batchLength = buffer.readInt32BE(position + batchLengthPosition);
  if (batchLength < batchLengthMin) return -1;
  const sizeBytes = batchLength + logOverheadSizeBytes;
  if (sizeBytes > remainingBytes) return -1;
  // 3.
  if (sizeBytes > maxBatchSizeBytes) return -1;
  // 4.
  const computedCrc = crc32c(buffer, position + attributesPosition, position + sizeBytes);
  if (buffer.readUInt32BE(position + crcPosition) !== computedCrc) return -1;
  // 5.
  const attributes = buffer.readInt16BE(position + attributesPosition);
  const compressionType = attributes & compressionCodecMask;
  if (compressionType > CompressionType.Zstd) return -1;
  // 6.
  const recordCount = buffer.readInt32BE(position + recordCountPosition);
  const countFromOffsets = buffer.readInt32BE(position + lastOffsetDeltaPosition) + 1;
  if (isClient) {
    if (recordCount < 1 || recordCount !== countFromOffsets) return -1;
  } else if (countFromOffsets < 1 || recordCount < 0 || recordCount > countFromOffsets) {
    return -1;
  }
  // 7.
  const recordsSizeBytes = sizeBytes - recordBatchHeaderSizeBytes;
  if (
    compressionType === CompressionType.None &&
    recordCount * recordSizeBytesMin > recordsSizeBytes
  ) {
    return -1;
  }
  // 8.
  if (isClient) {
    const baseOffsetIsZero =
      buffer.readInt32BE(position + baseOffsetPosition) === 0 &&
      buffer.readInt32BE(position + baseOffsetPosition + 4) === 0;
    if (!baseOffsetIsZero) return -1;
    if ((attributes & controlFlagMask) !== 0) return -1;
    // producerId > -1 exactly when its high half, read as a signed int32, is not negative.
    const hasProducerId = buffer.readInt32BE(position + producerIdPosition) >= 0;
    if (hasProducerId && buffer.readInt32BE(position + baseSequencePosition) < 0) return -1;
  }
  return sizeBytes;
}
