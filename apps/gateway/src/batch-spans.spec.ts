// Proves records are cut only at batch boundaries, from the headers alone: a span holds the
// whole batches within the limit, the first batch comes whole past the limit when asked (KIP-74),
// a torn tail is left out, the next offset follows the last batch kept, and trimming several
// partitions keeps one first batch and the total within the bound.
import { describe, expect, it } from 'vitest';
import { encodeRecordBatch } from '@spool/record-batch';
import { batchSpan, trimToBytes } from './batch-spans';

function batch(baseOffset: bigint, recordCount: number): Buffer {
  return encodeRecordBatch({
    baseOffset,
    records: Array.from({ length: recordCount }, (_, index) => ({
      key: null,
      value: Buffer.from(`value-${baseOffset}-${index}`),
      timestampMs: 1_700_000_000_000n,
    })),
  });
}

describe('batchSpan', () => {
  const first = batch(10n, 3); // offsets 10-12
  const second = batch(13n, 2); // offsets 13-14
  const third = batch(15n, 4); // offsets 15-18
  const records = Buffer.concat([first, second, third]);

  it('keeps whole batches within the limit and says where to fetch next', () => {
    expect(batchSpan(records, records.length, { keepFirstBatch: false })).toEqual({
      sizeBytes: records.length,
      batchCount: 3,
      nextOffset: 19n,
    });
    expect(batchSpan(records, first.length + second.length + 5, { keepFirstBatch: false })).toEqual(
      { sizeBytes: first.length + second.length, batchCount: 2, nextOffset: 15n },
    );
  });

  it('gives the first batch whole past the limit only when asked', () => {
    expect(batchSpan(records, 10, { keepFirstBatch: true })).toEqual({
      sizeBytes: first.length,
      batchCount: 1,
      nextOffset: 13n,
    });
    expect(batchSpan(records, 10, { keepFirstBatch: false })).toEqual({
      sizeBytes: 0,
      batchCount: 0,
      nextOffset: undefined,
    });
  });

  it('leaves out a torn tail and a length that overruns the buffer', () => {
    const torn = records.subarray(0, first.length + second.length + 20);
    expect(batchSpan(torn, Infinity, { keepFirstBatch: true }).sizeBytes).toBe(
      first.length + second.length,
    );
    const tooShort = Buffer.concat([first, Buffer.alloc(5)]);
    expect(batchSpan(tooShort, Infinity, { keepFirstBatch: true }).batchCount).toBe(1);
    expect(batchSpan(Buffer.alloc(0), 100, { keepFirstBatch: true }).nextOffset).toBeUndefined();
  });
});

describe('trimToBytes', () => {
  it('keeps the total within the bound and the first batch whole', () => {
    const a = Buffer.concat([batch(0n, 1), batch(1n, 1)]);
    const b = Buffer.concat([batch(0n, 1), batch(1n, 1)]);
    const oneBatch = batch(0n, 1).length;
    const trimmed = trimToBytes(
      [
        { name: 'empty', records: Buffer.alloc(0) },
        { name: 'a', records: a },
        { name: 'b', records: b },
      ],
      oneBatch + oneBatch / 2,
    );
    expect(trimmed.map((entry) => entry.records.length)).toEqual([0, oneBatch, 0]);
    expect(trimToBytes([{ records: a }], 1)[0]!.records.length).toBe(oneBatch);
    expect(trimToBytes([{ records: a }, { records: b }], 10_000)[1]!.records).toBe(b);
  });
});
