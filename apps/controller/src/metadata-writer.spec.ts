// Proves how a change too large for one metadata-store transaction is split: runs of at most the
// given number of operations, each under chunkBytesMax, in the original order, none empty, and an
// operation larger than the byte bound alone in its run rather than dropped.
import type { Operation } from '@spool/metadata';
import { describe, expect, it } from 'vitest';
import { chunkBytesMax, operationBytes, splitIntoChunks } from './metadata-writer';

const put = (index: number, valueBytes = 80): Operation => ({
  kind: 'put',
  key: `/spool/test/topics/big/partitions/${String(index).padStart(10, '0')}`,
  value: Buffer.alloc(valueBytes),
});

describe('splitIntoChunks', () => {
  it('cuts 10,000 partition writes into runs of at most 99, in order', () => {
    const operations = Array.from({ length: 10_000 }, (_, index) => put(index));
    const chunks = splitIntoChunks(operations, 99, (operation) => operation);
    expect(chunks).toHaveLength(Math.ceil(10_000 / 99));
    expect(chunks.every((chunk) => chunk.length > 0 && chunk.length <= 99)).toBe(true);
    expect(chunks.flat()).toEqual(operations);
  });

  it('also bounds the bytes of a run, and keeps an oversized write alone', () => {
    const large = Math.floor(chunkBytesMax / 3);
    const operations = [
      put(0, large),
      put(1, large),
      put(2, large),
      put(3, chunkBytesMax * 2),
      put(4),
    ];
    const chunks = splitIntoChunks(operations, 100, (operation) => operation);
    expect(chunks.map((chunk) => chunk.length)).toEqual([2, 1, 1, 1]);
    for (const chunk of chunks.filter((chunk) => chunk.length > 1)) {
      const sizeBytes = chunk.reduce((total, operation) => total + operationBytes(operation), 0);
      expect(sizeBytes).toBeLessThanOrEqual(chunkBytesMax);
    }
    expect(chunks.flat()).toEqual(operations);
  });

  it('gives no run for no writes', () => {
    expect(splitIntoChunks([], 100, (operation: Operation) => operation)).toEqual([]);
  });
});
