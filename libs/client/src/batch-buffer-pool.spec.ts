// Proves the batch buffer pool reuses what it lent, never makes more than its bound, and takes
// back only its own buffers.
import { describe, expect, it } from 'vitest';
import { BatchBufferPool } from './batch-buffer-pool';

describe('BatchBufferPool', () => {
  it('lends at most capacity / size buffers, reuses returned ones, ignores foreign ones', () => {
    const pool = new BatchBufferPool(1_000, 3_500);
    const lent = [pool.take(), pool.take(), pool.take()];
    expect(lent.every((buffer) => buffer?.length === 1_000)).toBe(true);
    expect(pool.take()).toBeUndefined();
    pool.give(Buffer.alloc(1_000));
    expect(pool.take()).toBeUndefined();
    pool.give(lent[1]!);
    expect(pool.take()).toBe(lent[1]);
    expect(pool.ownedCount).toBe(3);
    expect(pool.freeCount).toBe(0);
  });
});
