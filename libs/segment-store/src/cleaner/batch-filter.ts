/**
 * What the cleaner keeps of one batch (Kafka's `MemoryRecords.filterTo` with the cleaner's
 * `shouldRetainRecord`), and the offset map's side of reading a batch. Pure: bytes in, bytes or a
 * verdict out, no I/O.
 *
 * A record is kept when:
 *   1. it has a key (a keyless record cannot be compacted; Kafka's cleaner drops them too),
 *   2. no later record of its key is in the offset map, and
 *   3. it is not a tombstone that may go: a record with a null value goes once the map covers it
 *      (every older record of its key is then known and removed in the same pass) and its
 *      segment's newest record is older than delete.retention.ms.
 * A batch is kept whole, whatever its records, when:
 *   4. it is a control batch (transaction markers carry no key of the application's), or
 *   5. it is the last batch of its producer, so the producer state rebuilt from the log (after a
 *      restart) still knows the producer's last sequence, as Kafka keeps it, or
 *   6. its codec cannot inflate here (@spool/record-batch has all of Kafka's, but a codec's
 *      native package may fail to load on this platform): its records cannot be read, so none of
 *      them may be dropped (the map learns nothing from it either).
 * A batch whose records are all kept is copied byte for byte. One that loses some is rebuilt with
 * the same base offset, last offset delta (so the next batch's offsets and a producer's
 * sequences still line up), leader epoch, producer fields, timestamp type and codec; one that
 * loses all of them goes.
 */
import * as recordBatch from '@spool/record-batch';
import type { RecordFields, RecordInput } from '@spool/record-batch';
import type { OffsetMap } from './offset-map';

const {
  controlFlagMask,
  attributesPosition,
  crc32c,
  crcPosition,
  encodeRecordBatch,
  lastOffsetDeltaPosition,
  openRecordBatch,
  RecordBatchError,
  RecordBatchErrorCode,
  TimestampType,
} = recordBatch;

export interface BatchRetention {
  readonly offsetMap: OffsetMap;
  /** The map knows every key's latest record below this offset (rule 3). */
  readonly mapEndOffset: bigint;
  /** The batch's segment is young enough that its tombstones stay (rule 3). */
  readonly retainTombstones: boolean;
  /** Rule 5. */
  isLastBatchOfProducer(producerId: bigint, lastOffset: bigint): boolean;
}

export type BatchOutcome =
  | { readonly kind: 'copied' }
  | { readonly kind: 'removed'; readonly recordsRemoved: number }
  | { readonly kind: 'rebuilt'; readonly bytes: Buffer; readonly recordsRemoved: number };

/**
 * The batch at `at` opened for reading, or undefined when its codec cannot inflate it in this
 * process (rule 6). Any other error (corruption) is the caller's.
 */
function openReadableBatch(
  bytes: Buffer,
  at: number,
  options?: recordBatch.DecodeRecordBatchOptions,
): { header: recordBatch.RecordBatchHeader; reader: recordBatch.RecordReader } | undefined {
  try {
    return openRecordBatch(bytes, at, options);
  } catch (error) {
    if (
      error instanceof RecordBatchError &&
      error.code === RecordBatchErrorCode.UnsupportedCompressionType
    ) {
      return undefined;
    }
    throw error;
  }
}

/** One record's fields at a time (RecordReader.readInto): deciding allocates no record object. */
const scratch: RecordFields = {
  offset: 0n,
  timestampMs: 0n,
  key: null,
  value: null,
  headers: [],
  offsetDelta: 0,
};

/**
 * Puts every keyed record of the batch at `at` into the map. Returns false when the map filled
 * before the batch's last record: the records put so far stay (they are true facts).
 */
export function putBatchInMap(bytes: Buffer, at: number, offsetMap: OffsetMap): boolean {
  if ((bytes.readInt16BE(at + attributesPosition) & controlFlagMask) !== 0) return true;
  const opened = openReadableBatch(bytes, at);
  if (opened === undefined) return true;
  const { header, reader } = opened;
  for (let index = 0; index < header.recordCount; index++) {
    const record = reader.readInto(scratch);
    if (record.key !== null && !offsetMap.put(record.key, record.offset)) return false;
  }
  reader.finish();
  return true;
}

/** The rules of the header, applied to the batch at `at` in `bytes`. */
export function filterBatch(bytes: Buffer, at: number, retention: BatchRetention): BatchOutcome {
  if ((bytes.readInt16BE(at + attributesPosition) & controlFlagMask) !== 0) {
    return { kind: 'copied' }; // 4.
  }
  const opened = openReadableBatch(bytes, at);
  if (opened === undefined) return { kind: 'copied' }; // 6.
  const { header, reader } = opened;
  if (
    header.producerId >= 0n &&
    retention.isLastBatchOfProducer(header.producerId, header.lastOffset)
  ) {
    return { kind: 'copied' }; // 5.
  }
  // Decide first, reading into one scratch object; records are materialized only for a batch
  // that is rebuilt, in a second read of it.
  const recordCount = header.recordCount;
  const keptIndexes: number[] = [];
  for (let index = 0; index < recordCount; index++) {
    if (shouldRetain(reader.readInto(scratch), retention)) keptIndexes.push(index);
  }
  reader.finish();
  if (keptIndexes.length === recordCount) return { kind: 'copied' };
  if (keptIndexes.length === 0) return { kind: 'removed', recordsRemoved: recordCount };
  const kept: RecordInput[] = [];
  const again = openRecordBatch(bytes, at, { verifyCrc: false }).reader;
  for (let index = 0, next = 0; index < recordCount && next < keptIndexes.length; index++) {
    const record = again.read();
    if (keptIndexes[next] !== index) continue;
    next++;
    kept.push({
      key: record.key,
      value: record.value,
      headers: record.headers,
      timestampMs: record.timestampMs,
      offsetDelta: Number(record.offset - header.baseOffset),
    });
  }
  const rebuilt = encodeRecordBatch({
    baseOffset: header.baseOffset,
    records: kept,
    partitionLeaderEpoch: header.partitionLeaderEpoch,
    producerId: header.producerId,
    producerEpoch: header.producerEpoch,
    baseSequence: header.baseSequence,
    compressionType: header.compressionType as recordBatch.CompressionType,
    isTransactional: header.isTransactional,
    ...(header.timestampType === TimestampType.LogAppendTime
      ? { logAppendTimeMs: header.maxTimestampMs }
      : {}),
  });
  // The batch keeps its last offset even when its last record went, as Kafka's cleaner does.
  rebuilt.writeInt32BE(header.lastOffsetDelta, lastOffsetDeltaPosition);
  rebuilt.writeUInt32BE(crc32c(rebuilt, attributesPosition, rebuilt.length), crcPosition);
  return { kind: 'rebuilt', bytes: rebuilt, recordsRemoved: recordCount - kept.length };
}

/** Rules 1 to 3 for one record. */
function shouldRetain(record: RecordFields, retention: BatchRetention): boolean {
  // 1.
  if (record.key === null) return false;
  // 2.
  const latest = retention.offsetMap.get(record.key);
  if (latest !== undefined && latest > record.offset) return false;
  // 3.
  return (
    record.value !== null || retention.retainTombstones || record.offset >= retention.mapEndOffset
  );
}
