import type { DecodedRecord } from './record';
import type { RecordBatchHeader } from './record-batch-header';
import {
  openRecordReader,
  uncompressedRecordsBytesMaxDefault,
  type RecordReader,
} from './record-reader';
import {
  checkRecordBatchCrc,
  checkRecordBatchFields,
  checkRecordBatchFraming,
} from './record-batch-validator';

/**
 * Turns batches back into records with absolute offsets and timestamps: what the consumer and
 * the tools do with fetched bytes. The broker never calls this on its hot path. A batch is
 * checked as coming from a log (record-batch-validator.ts, origin `log`), its CRC too unless
 * `verifyCrc` is false (Kafka's check.crcs), and its records as the deep validation does.
 */

export interface DecodeRecordBatchOptions {
  /** Defaults to true, as Kafka's consumer setting check.crcs. */
  verifyCrc?: boolean;
  /** How far a compressed records section may inflate. */
  uncompressedBytesMax?: number;
}

export interface DecodedRecordBatch {
  /** A view of the header in the decoded buffer. */
  header: RecordBatchHeader;
  records: DecodedRecord[];
}

/**
 * Checks the batch at `position` as decodeRecordBatch does and returns a reader over its records,
 * for a caller that reads `header.recordCount` records with `readInto` (no object per record),
 * then calls `finish`.
 */
export function openRecordBatch(
  buffer: Buffer,
  position = 0,
  options: DecodeRecordBatchOptions = {},
): { header: RecordBatchHeader; reader: RecordReader } {
  const header = checkRecordBatchFraming(buffer, position);
  if (options.verifyCrc ?? true) checkRecordBatchCrc(header);
  checkRecordBatchFields(header, 'log');
  const reader = openRecordReader(
    header,
    options.uncompressedBytesMax ?? uncompressedRecordsBytesMaxDefault,
  );
  return { header, reader };
}

/** Decodes the batch at `position`; keys and values are views into `buffer` (or its inflation). */
export function decodeRecordBatch(
  buffer: Buffer,
  position = 0,
  options: DecodeRecordBatchOptions = {},
): DecodedRecordBatch {
  const { header, reader } = openRecordBatch(buffer, position, options);
  const records: DecodedRecord[] = [];
  const recordCount = header.recordCount;
  for (let index = 0; index < recordCount; index++) records.push(reader.read());
  reader.finish();
  return { header, records };
}

/** Decodes every batch of a buffer of concatenated batches, which must end with a whole batch. */
export function decodeRecordBatches(
  buffer: Buffer,
  options: DecodeRecordBatchOptions = {},
): DecodedRecordBatch[] {
  const batches: DecodedRecordBatch[] = [];
  let position = 0;
  while (position < buffer.length) {
    const batch = decodeRecordBatch(buffer, position, options);
    batches.push(batch);
    position += batch.header.sizeBytes;
  }
  return batches;
}
