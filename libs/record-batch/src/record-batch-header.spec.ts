// Proves the zero-copy header view reads every field where the layout puts it, and that the
// broker's in-place patches behave as Kafka's: baseOffset and partitionLeaderEpoch change
// without touching the CRC (which stays valid), while switching to LogAppendTime rewrites the
// CRC so the batch still validates and every record reports the append time.
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import { decodeRecordBatch } from './record-batch-decoder';
import { encodeRecordBatch } from './record-batch-encoder';
import {
  lastOffsetOf,
  RecordBatchHeader,
  recordBatchSizeBytes,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
} from './record-batch-header';
import { TimestampType } from './record-batch-layout';
import { validateRecordBatch } from './record-batch-validator';

const timestampMs = 1_700_000_000_000n;

function threeRecordBatch(): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    producerId: 77n,
    producerEpoch: 2,
    baseSequence: 10,
    isTransactional: true,
    records: [0n, 50n, 20n].map((delta, index) => ({
      key: Buffer.from(`k${index}`),
      value: Buffer.from(`v${index}`),
      timestampMs: timestampMs + delta,
    })),
  });
}

/** A batch sitting between other bytes, as in a segment file read into memory. */
function embedded(batch: Buffer, before: number): Buffer {
  return Buffer.concat([Buffer.alloc(before, 0xee), batch, Buffer.alloc(5, 0xee)]);
}

describe('RecordBatchHeader', () => {
  it('reads every field of a batch at a position', () => {
    const batch = threeRecordBatch();
    const header = new RecordBatchHeader(embedded(batch, 9), 9);
    expect(header.baseOffset).toBe(0n);
    expect(header.sizeBytes).toBe(batch.length);
    expect(header.batchLength).toBe(batch.length - 12);
    expect(header.partitionLeaderEpoch).toBe(-1);
    expect(header.magic).toBe(2);
    expect(header.crc).toBe(header.computeCrc());
    expect(header.compressionType).toBe(0);
    expect(header.timestampType).toBe(TimestampType.CreateTime);
    expect(header.isTransactional).toBe(true);
    expect(header.isControl).toBe(false);
    expect(header.hasDeleteHorizon).toBe(false);
    expect(header.lastOffsetDelta).toBe(2);
    expect(header.lastOffset).toBe(2n);
    expect(header.baseTimestampMs).toBe(timestampMs);
    expect(header.maxTimestampMs).toBe(timestampMs + 50n);
    expect(header.producerId).toBe(77n);
    expect(header.hasProducerId).toBe(true);
    expect(header.producerEpoch).toBe(2);
    expect(header.baseSequence).toBe(10);
    expect(header.lastSequence).toBe(12);
    expect(header.recordCount).toBe(3);
    expect(header.recordsPosition).toBe(9 + 61);
    expect(header.recordsSizeBytes).toBe(batch.length - 61);
  });

  it('wraps lastSequence past Int32 max to 0, as Kafka does', () => {
    const batch = threeRecordBatch();
    batch.writeInt32BE(0x7fffffff - 1, 53);
    expect(new RecordBatchHeader(batch, 0).lastSequence).toBe(0);
  });

  it('refuses a header that does not fit the buffer', () => {
    const batch = threeRecordBatch();
    expect(() => new RecordBatchHeader(batch.subarray(0, 60), 0)).toThrow(RecordBatchError);
    expect(() => new RecordBatchHeader(batch, batch.length - 60)).toThrow(/needs 61 bytes/);
  });
});

describe('recordBatchSizeBytes and lastOffsetOf', () => {
  it('read the size and last offset from the prefix alone', () => {
    const batch = threeRecordBatch();
    setBaseOffset(batch, 0, 1000n);
    const buffer = embedded(batch, 3);
    expect(recordBatchSizeBytes(buffer, 3)).toBe(batch.length);
    expect(recordBatchSizeBytes(batch.subarray(0, 12), 0)).toBe(batch.length);
    expect(lastOffsetOf(buffer, 3)).toBe(1002n);
  });

  it('throw CORRUPT_MESSAGE when the prefix is cut short', () => {
    const batch = threeRecordBatch();
    expect(() => recordBatchSizeBytes(batch.subarray(0, 11), 0)).toThrow(
      expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
    );
    expect(() => lastOffsetOf(batch.subarray(0, 26), 0)).toThrow(
      expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
    );
  });
});

describe('in-place patches', () => {
  it('assign baseOffset and leader epoch without touching the CRC', () => {
    const batch = threeRecordBatch();
    const buffer = embedded(batch, 4);
    const crcBefore = buffer.readUInt32BE(4 + 17);
    setBaseOffset(buffer, 4, 9_223_372_036_854_775_000n);
    setPartitionLeaderEpoch(buffer, 4, 31);
    expect(buffer.readUInt32BE(4 + 17)).toBe(crcBefore);
    const header = validateRecordBatch(buffer, 4, {
      maxBatchSizeBytes: 1 << 20,
      origin: 'log',
      deep: true,
    });
    expect(header.baseOffset).toBe(9_223_372_036_854_775_000n);
    expect(header.partitionLeaderEpoch).toBe(31);
    const decoded = decodeRecordBatch(buffer, 4);
    expect(decoded.records.map((record) => record.offset)).toEqual([
      9_223_372_036_854_775_000n,
      9_223_372_036_854_775_001n,
      9_223_372_036_854_775_002n,
    ]);
    expect(buffer.subarray(0, 4)).toEqual(Buffer.alloc(4, 0xee));
    expect(buffer.subarray(4 + batch.length)).toEqual(Buffer.alloc(5, 0xee));
  });

  it('switch to LogAppendTime with a recomputed CRC', () => {
    const batch = threeRecordBatch();
    const appendTimeMs = timestampMs + 9_999n;
    const crcBefore = batch.readUInt32BE(17);
    setMaxTimestampAndLogAppendTime(batch, 0, appendTimeMs);
    expect(batch.readUInt32BE(17)).not.toBe(crcBefore);
    const header = validateRecordBatch(batch, 0, { maxBatchSizeBytes: 1 << 20, deep: true });
    expect(header.timestampType).toBe(TimestampType.LogAppendTime);
    expect(header.isTransactional).toBe(true);
    expect(header.maxTimestampMs).toBe(appendTimeMs);
    const decoded = decodeRecordBatch(batch);
    expect(decoded.records.map((record) => record.timestampMs)).toEqual([
      appendTimeMs,
      appendTimeMs,
      appendTimeMs,
    ]);
    const crcAfter = batch.readUInt32BE(17);
    setMaxTimestampAndLogAppendTime(batch, 0, appendTimeMs);
    expect(batch.readUInt32BE(17)).toBe(crcAfter);
  });
});

describe('setBaseOffset', () => {
  it('writes the bytes writeBigInt64BE writes, across the int64 range, and refuses past it', () => {
    const int64Max = (1n << 63n) - 1n;
    const values = [
      0n,
      1n,
      -1n,
      0xffff_ffffn,
      0x1_0000_0000n,
      -0x1_0000_0000n,
      BigInt(Number.MAX_SAFE_INTEGER),
      BigInt(Number.MAX_SAFE_INTEGER) + 1n,
      BigInt(Number.MIN_SAFE_INTEGER),
      BigInt(Number.MIN_SAFE_INTEGER) - 1n,
      int64Max,
      -int64Max - 1n,
      9_223_372_036_854_775_000n,
    ];
    for (const value of values) {
      const patched = threeRecordBatch();
      const expected = Buffer.from(patched);
      expected.writeBigInt64BE(value, 0);
      setBaseOffset(patched, 0, value);
      expect(patched).toEqual(expected);
    }
    for (const value of [int64Max + 1n, -int64Max - 2n]) {
      expect(() => setBaseOffset(threeRecordBatch(), 0, value)).toThrow(RangeError);
    }
  });
});
