// Proves the leader-epoch cache answers OffsetsForLeaderEpoch as Kafka's LeaderEpochFileCache
// does (latest epoch, an older epoch, one older than every entry, an unknown one), truncates from
// either end, survives a reload from its checkpoint file, and treats a malformed file as empty.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LeaderEpochCache, undefinedEpoch, undefinedEpochOffset } from './leader-epoch-cache';
import { temporaryDirectory } from './testing';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function cacheFile(): string {
  const temporary = temporaryDirectory('spool-epochs-');
  cleanups.push(temporary.remove);
  return path.join(temporary.directory, 'leader-epoch-checkpoint');
}

describe('LeaderEpochCache', () => {
  it('answers end offsets for each epoch as Kafka does', () => {
    const file = cacheFile();
    const { cache } = LeaderEpochCache.load(file);
    expect(cache.endOffsetFor(0, 0n)).toEqual({
      epoch: undefinedEpoch,
      endOffset: undefinedEpochOffset,
    });
    cache.assign(2, 10n);
    cache.assign(4, 25n);
    cache.assign(7, 40n);
    expect(cache.endOffsetFor(7, 55n)).toEqual({ epoch: 7, endOffset: 55n });
    expect(cache.endOffsetFor(4, 55n)).toEqual({ epoch: 4, endOffset: 40n });
    // An epoch between entries ends where the next known epoch starts, answered as the floor.
    expect(cache.endOffsetFor(5, 55n)).toEqual({ epoch: 4, endOffset: 40n });
    // Older than every entry: the requested epoch and the first start offset.
    expect(cache.endOffsetFor(1, 55n)).toEqual({ epoch: 1, endOffset: 10n });
    expect(cache.endOffsetFor(9, 55n)).toEqual({
      epoch: undefinedEpoch,
      endOffset: undefinedEpochOffset,
    });
    expect(cache.endOffsetFor(undefinedEpoch, 55n)).toEqual({
      epoch: undefinedEpoch,
      endOffset: undefinedEpochOffset,
    });
  });

  it('ignores older epochs and replaces entries a new epoch starts before', () => {
    const { cache } = LeaderEpochCache.load(cacheFile());
    cache.assign(3, 10n);
    expect(cache.assign(2, 20n)).toBe(false);
    expect(cache.assign(3, 30n)).toBe(false);
    cache.assign(5, 20n);
    cache.assign(6, 15n);
    expect(cache.list()).toEqual([
      { epoch: 3, startOffset: 10n },
      { epoch: 6, startOffset: 15n },
    ]);
  });

  it('truncates from the end and from the start, and persists every change', () => {
    const file = cacheFile();
    const { cache } = LeaderEpochCache.load(file);
    cache.assign(1, 0n);
    cache.assign(2, 10n);
    cache.assign(3, 20n);
    cache.truncateFromEnd(15n);
    expect(cache.list().map((entry) => entry.epoch)).toEqual([1, 2]);
    cache.truncateFromStart(12n);
    expect(cache.list()).toEqual([{ epoch: 2, startOffset: 12n }]);
    expect(readFileSync(file, 'utf8')).toBe('0\n1\n2 12\n');
    expect(LeaderEpochCache.load(file).cache.list()).toEqual(cache.list());
    cache.clear();
    expect(LeaderEpochCache.load(file).cache.list()).toEqual([]);
  });

  // Found by the fault suite (test/faults): a new leader's first append on a full disk failed to
  // write the checkpoint after the epoch was already in memory, so the retried append skipped
  // the write and the epoch was never checkpointed; the failure was also a raw error, which the
  // storage node answered as a non-retriable UNKNOWN_SERVER_ERROR.
  it('makes no change it could not write, and says so with a retriable storage error', () => {
    const file = cacheFile();
    const { cache } = LeaderEpochCache.load(file);
    cache.assign(1, 0n);
    // The checkpoint's temporary file cannot be created while a folder has its name.
    mkdirSync(`${file}.tmp`);
    expect(() => cache.assign(2, 10n)).toThrow(
      expect.objectContaining({ code: 'KAFKA_STORAGE_ERROR', retriable: true }),
    );
    expect(() => cache.truncateFromEnd(0n)).toThrow(
      expect.objectContaining({ code: 'KAFKA_STORAGE_ERROR' }),
    );
    expect(() => cache.clear()).toThrow(expect.objectContaining({ code: 'KAFKA_STORAGE_ERROR' }));
    expect(cache.list()).toEqual([{ epoch: 1, startOffset: 0n }]);
    rmdirSync(`${file}.tmp`);
    expect(cache.assign(2, 10n)).toBe(true);
    expect(LeaderEpochCache.load(file).cache.list()).toEqual([
      { epoch: 1, startOffset: 0n },
      { epoch: 2, startOffset: 10n },
    ]);
  });

  it('reports a malformed file and starts empty', () => {
    const file = cacheFile();
    writeFileSync(file, '0\n2\n5 10\n3 20\n');
    const loaded = LeaderEpochCache.load(file);
    expect(loaded.malformed).toBe(true);
    expect(loaded.cache.list()).toEqual([]);
  });
});
