// Proves a follower cuts a fetch larger than segment.bytes into runs of whole batches that each
// fit a segment, in order and without losing or splitting a batch; a batch larger than a
// segment on its own stays a run of one (the log decides what to do with it).
import { describe, expect, it } from 'vitest';
import { encodeRecordBatch } from '@spool/record-batch';
import { segmentSizedGroups } from './replica/replica-fetcher';

function batchOfBytes(valueBytes: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.alloc(valueBytes, 7), timestampMs: 0n }],
  });
}

describe('segmentSizedGroups', () => {
  it('keeps a fetch that fits a segment whole', () => {
    const records = Buffer.concat([batchOfBytes(100), batchOfBytes(100)]);
    expect([...segmentSizedGroups(records, 4096)]).toEqual([records]);
  });

  it('cuts on batch boundaries so every run fits', () => {
    const batches = Array.from({ length: 10 }, () => batchOfBytes(900));
    const records = Buffer.concat(batches);
    const groups = [...segmentSizedGroups(records, 2 * batches[0]!.length + 10)];
    expect(groups).toHaveLength(5);
    expect(groups.every((group) => group.length === 2 * batches[0]!.length)).toBe(true);
    expect(Buffer.concat(groups).equals(records)).toBe(true);
  });

  it('leaves a batch larger than a segment as a run of its own', () => {
    const small = batchOfBytes(10);
    const large = batchOfBytes(5000);
    const groups = [...segmentSizedGroups(Buffer.concat([small, large, small]), 4096)];
    expect(groups.map((group) => group.length)).toEqual([small.length, large.length, small.length]);
  });
});
