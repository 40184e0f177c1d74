// The producer batches every measurement writes: RecordBatch v2, uncompressed, records with
// 100-byte values and no key, as many as fit in 16 KiB. They are encoded once, before anything
// is timed, and reused round-robin, so no measurement counts encoding.
import { encodeRecordBatch, setBaseOffset, type RecordInput } from '@spool/record-batch';
import { seededRandom } from './measurement';

export const recordValueSizeBytes = 100;
export const batchSizeBytesMax = 16 * 1024;
/** Distinct batches in the pool (1 MiB): varied bytes, few enough to encode in milliseconds. */
const poolBatchCount = 64;

export interface BatchPool {
  readonly batches: readonly Buffer[];
  readonly recordsPerBatch: number;
  /** Every batch of the pool has this size: same record count, same value sizes. */
  readonly batchSizeBytes: number;
}

export function createBatchPool(): BatchPool {
  const random = seededRandom(0x5b001);
  const firstTimestampMs = BigInt(Date.now());
  const recordsPerBatch = largestRecordCountThatFits(firstTimestampMs);
  const batches: Buffer[] = [];
  for (let batchIndex = 0; batchIndex < poolBatchCount; batchIndex++) {
    const firstRecordTimestampMs = firstTimestampMs + BigInt(batchIndex * recordsPerBatch);
    const value = (): Buffer => {
      const bytes = Buffer.allocUnsafe(recordValueSizeBytes);
      for (let index = 0; index < bytes.length; index++) bytes[index] = (random() * 256) | 0;
      return bytes;
    };
    batches.push(encodeBatch(recordsPerBatch, firstRecordTimestampMs, value));
  }
  const batchSizeBytes = batches[0]!.length;
  if (batches.some((batch) => batch.length !== batchSizeBytes)) {
    throw new Error('the pool batches differ in size; the byte counts would be wrong');
  }
  return { batches, recordsPerBatch, batchSizeBytes };
}

/**
 * The log assigns offsets by patching them into the caller's buffer, and refuses a produced
 * batch whose base offset is not 0, so a reused batch gets its 0 back before each append. The
 * CRC does not cover the base offset: this is one 8-byte write, no re-encoding.
 */
export function resetForProduce(batch: Buffer): Buffer {
  setBaseOffset(batch, 0, 0n);
  return batch;
}

function encodeBatch(recordCount: number, firstTimestampMs: bigint, value: () => Buffer): Buffer {
  const records: RecordInput[] = [];
  for (let index = 0; index < recordCount; index++) {
    records.push({ key: null, value: value(), timestampMs: firstTimestampMs + BigInt(index) });
  }
  return encodeRecordBatch({ baseOffset: 0n, records });
}

/** Records per batch: the most whose encoded batch still fits batchSizeBytesMax. */
function largestRecordCountThatFits(firstTimestampMs: bigint): number {
  const filler = Buffer.alloc(recordValueSizeBytes, 0x78);
  const fits = (count: number): boolean =>
    encodeBatch(count, firstTimestampMs, () => filler).length <= batchSizeBytesMax;
  let count = Math.floor(batchSizeBytesMax / (recordValueSizeBytes + 16));
  while (fits(count + 1)) count++;
  while (!fits(count)) count--;
  return count;
}
