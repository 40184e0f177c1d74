import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { RecordBatchHeader } from './record-batch-header';
import {
  batchLengthMin,
  batchLengthPosition,
  CompressionType,
  crcPosition,
  headerSizeUpToMagicBytes,
  isKnownCompressionType,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicPosition,
  magicValueV2,
  recordCountPosition,
  recordSizeBytesMin,
} from './record-batch-layout';
import { openRecordReader, uncompressedRecordsBytesMaxDefault } from './record-reader';

/**
 * Checks on record batches before they are trusted: a produce request on the leader, a replica
 * fetch on a follower, a segment during recovery, a fetch response in the consumer. Without
 * `deep`, the cost is a CRC pass plus a constant per batch; nothing reads the records.
 *
 * 1. The bytes up to the magic are present (17), and the magic is 2.
 * 2. batchLength covers at least a header, and the whole batch is in the buffer.
 * 3. The batch is no larger than maxBatchSizeBytes.
 * 4. The stored CRC matches the CRC of attributes to the end.
 * 5. The compression id is one Kafka defines (0-4).
 * 6. The record count agrees with the offsets: lastOffsetDelta + 1 == recordCount ≥ 1 for a
 *    client's batch; recordCount ≤ lastOffsetDelta + 1 for a batch from a log, where
 *    compaction may have removed records (and may even leave a batch with none).
 * 7. An uncompressed batch has room for recordCount records of the smallest size.
 * 8. A client's batch (Kafka's LogValidator for AppendOrigin.CLIENT): baseOffset is 0, it is
 *    not a control batch, and an idempotent batch has a baseSequence.
 * 9. With `deep`: the records section (inflated if compressed) holds exactly recordCount
 *    well-formed records and nothing after them.
 *
 * Damaged bytes (1-4) are CORRUPT_MESSAGE (retriable: a resend may arrive intact), except an
 * older magic (UNSUPPORTED_VERSION) and an oversize batch (MESSAGE_TOO_LARGE); broken rules
 * (5-9) are INVALID_RECORD or UNSUPPORTED_COMPRESSION_TYPE. Every message names the batch's
 * byte position and the field.
 */

/**
 * Where the batch comes from. `client`: a produce request, held to Kafka's checks for client
 * appends. `log`: bytes already in some log (replica fetch, segment recovery, a consumer's
 * fetch), which log compaction may have thinned out.
 */
export type RecordBatchOrigin = 'client' | 'log';

export interface RecordBatchValidationOptions {
  /** The largest batch accepted, header included (Kafka's max.message.bytes). */
  maxBatchSizeBytes: number;
  /** Defaults to `client`, the strictest. */
  origin?: RecordBatchOrigin;
  /** Also walk every record (check 9). Off by default: it costs per record. */
  deep?: boolean;
  /** With `deep`, how far a compressed records section may inflate. */
  uncompressedBytesMax?: number;
}

function corrupt(position: number, problem: string): RecordBatchError {
  return new RecordBatchError(
    RecordBatchErrorCode.CorruptMessage,
    `record batch at position ${position}: ${problem}`,
  );
}

function invalid(position: number, problem: string): RecordBatchError {
  return new RecordBatchError(
    RecordBatchErrorCode.InvalidRecord,
    `record batch at position ${position}: ${problem}`,
  );
}

/** Checks 1-2: the batch is a whole v2 batch inside the buffer. Returns a view of its header. */
export function checkRecordBatchFraming(buffer: Buffer, position: number): RecordBatchHeader {
  const remainingBytes = buffer.length - position;
  if (remainingBytes < headerSizeUpToMagicBytes) {
    throw corrupt(
      position,
      `truncated: ${remainingBytes} bytes left, fewer than the ${headerSizeUpToMagicBytes} ` +
        'up to and including magic',
    );
  }
  const magic = buffer.readInt8(position + magicPosition);
  if (magic !== magicValueV2) {
    if (magic === 0 || magic === 1) {
      throw new RecordBatchError(
        RecordBatchErrorCode.UnsupportedVersion,
        `record batch at position ${position}: field magic is ${magic}; only message format ` +
          `v${magicValueV2} (RecordBatch) is supported`,
      );
    }
    throw corrupt(position, `field magic at byte ${position + magicPosition} is ${magic}`);
  }
  const batchLength = buffer.readInt32BE(position + batchLengthPosition);
  if (batchLength < batchLengthMin) {
    throw corrupt(
      position,
      `field batchLength at byte ${position + batchLengthPosition} is ${batchLength}, less ` +
        `than the ${batchLengthMin} of a header without records`,
    );
  }
  const sizeBytes = batchLength + logOverheadSizeBytes;
  if (sizeBytes > remainingBytes) {
    throw corrupt(
      position,
      `truncated: field batchLength says the batch has ${sizeBytes} bytes but only ` +
        `${remainingBytes} are left in the buffer`,
    );
  }
  return new RecordBatchHeader(buffer, position);
}

/** Check 4: the stored CRC matches the bytes. */
export function checkRecordBatchCrc(header: RecordBatchHeader): void {
  const storedCrc = header.crc;
  const computedCrc = header.computeCrc();
  if (storedCrc !== computedCrc) {
    throw corrupt(
      header.position,
      `field crc at byte ${header.position + crcPosition} is 0x${hex(storedCrc)} but the ` +
        `bytes from attributes to the end give 0x${hex(computedCrc)}`,
    );
  }
}

/** Checks 5-8: the header's fields agree with each other and with the origin's rules. */
export function checkRecordBatchFields(header: RecordBatchHeader, origin: RecordBatchOrigin): void {
  const { position } = header;
  const compressionType = header.compressionType;
  if (!isKnownCompressionType(compressionType)) {
    throw new RecordBatchError(
      RecordBatchErrorCode.UnsupportedCompressionType,
      `record batch at position ${position}: field attributes has compression type id ` +
        `${compressionType}, which Kafka does not define`,
    );
  }
  const recordCount = header.recordCount;
  const lastOffsetDelta = header.lastOffsetDelta;
  const countFromOffsets = lastOffsetDelta + 1;
  if (origin === 'client') {
    if (recordCount < 1 || recordCount !== countFromOffsets) {
      throw invalid(
        position,
        `field recordCount at byte ${position + recordCountPosition} is ${recordCount}, but ` +
          `a produced batch needs at least 1 and lastOffsetDelta ${lastOffsetDelta} implies ` +
          `${countFromOffsets}`,
      );
    }
  } else if (lastOffsetDelta < 0 || recordCount < 0 || recordCount > countFromOffsets) {
    throw invalid(
      position,
      `field recordCount at byte ${position + recordCountPosition} is ${recordCount} and ` +
        `field lastOffsetDelta at byte ${position + lastOffsetDeltaPosition} is ` +
        `${lastOffsetDelta}; a batch needs 0 <= recordCount <= lastOffsetDelta + 1`,
    );
  }
  const recordsSizeBytes = header.recordsSizeBytes;
  if (
    compressionType === CompressionType.None &&
    recordCount * recordSizeBytesMin > recordsSizeBytes
  ) {
    throw invalid(
      position,
      `field recordCount is ${recordCount}, but the ${recordsSizeBytes} bytes of records ` +
        `cannot hold that many records of at least ${recordSizeBytesMin} bytes`,
    );
  }
  if (origin === 'client') checkClientBatchFields(header);
}

function checkClientBatchFields(header: RecordBatchHeader): void {
  const { position } = header;
  const baseOffset = header.baseOffset;
  if (baseOffset !== 0n) {
    throw invalid(position, `field baseOffset is ${baseOffset}; a produced batch must have 0`);
  }
  if (header.isControl) {
    throw invalid(position, 'field attributes marks a control batch; clients may not write them');
  }
  if (header.hasProducerId && header.baseSequence < 0) {
    throw invalid(
      position,
      `field baseSequence is ${header.baseSequence} in a batch with producerId ` +
        `${header.producerId}`,
    );
  }
}

/** Check 9: every record parses and the records section holds exactly recordCount of them. */
function checkRecordBatchRecords(header: RecordBatchHeader, uncompressedBytesMax: number): void {
  const reader = openRecordReader(header, uncompressedBytesMax);
  const recordCount = header.recordCount;
  for (let index = 0; index < recordCount; index++) reader.skip();
  reader.finish();
}

/**
 * Validates the batch at `position` (checks 1-8, and 9 with `deep`) and returns a view of its
 * header; the batch's bytes are `position` to `position + header.sizeBytes`.
 */
export function validateRecordBatch(
  buffer: Buffer,
  position: number,
  options: RecordBatchValidationOptions,
): RecordBatchHeader {
  const header = checkRecordBatchFraming(buffer, position);
  const sizeBytes = header.sizeBytes;
  if (sizeBytes > options.maxBatchSizeBytes) {
    throw new RecordBatchError(
      RecordBatchErrorCode.MessageTooLarge,
      `record batch at position ${position}: field batchLength gives ${sizeBytes} bytes, ` +
        `more than the ${options.maxBatchSizeBytes} allowed (maxBatchSizeBytes)`,
    );
  }
  checkRecordBatchCrc(header);
  checkRecordBatchFields(header, options.origin ?? 'client');
  if (options.deep === true) {
    checkRecordBatchRecords(
      header,
      options.uncompressedBytesMax ?? uncompressedRecordsBytesMaxDefault,
    );
  }
  return header;
}

/**
 * Validates every batch of a buffer of concatenated batches, which must end exactly at the end
 * of the last batch, and returns their header views in order (none for an empty buffer).
 */
export function splitRecordBatches(
  buffer: Buffer,
  options: RecordBatchValidationOptions,
): RecordBatchHeader[] {
  const headers: RecordBatchHeader[] = [];
  let position = 0;
  while (position < buffer.length) {
    const header = validateRecordBatch(buffer, position, options);
    headers.push(header);
    position += header.sizeBytes;
  }
  return headers;
}

function hex(value: number): string {
  return value.toString(16).padStart(8, '0');
}
