// Proves the sparse offset and time indexes: lookups find the largest entry at or below the
// target (the segment start when there is none), truncation removes exactly the entries at or
// after an offset, the sanity check catches entries that do not ascend or point past the log,
// and entries written to disk load back after a reopen.
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetIndex } from './offset-index';
import { TimeIndex } from './time-index';
import { temporaryDirectory } from './test-support';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function folder(): string {
  const temporary = temporaryDirectory('spool-index-');
  cleanups.push(temporary.remove);
  return temporary.directory;
}

describe('OffsetIndex', () => {
  it('looks up, truncates and reloads', () => {
    const file = path.join(folder(), '00000000000000000100.index');
    const index = new OffsetIndex(file, 100n, 4096, { create: true });
    expect(index.lookup(150n)).toEqual({ offset: 100n, position: 0 });
    index.append(110n, 1000);
    index.append(120n, 2000);
    index.append(130n, 3000);
    expect(index.lookup(99n)).toEqual({ offset: 100n, position: 0 });
    expect(index.lookup(125n)).toEqual({ offset: 120n, position: 2000 });
    expect(index.lookup(10_000n)).toEqual({ offset: 130n, position: 3000 });
    expect(index.lookupByPosition(2999)).toEqual({ offset: 120n, position: 2000 });
    index.truncateTo(120n);
    expect(index.lastEntry()).toEqual({ offset: 110n, position: 1000 });
    index.append(125n, 2500);
    index.close();
    const reopened = new OffsetIndex(file, 100n, 4096, { create: false });
    expect(reopened.entryCount).toBe(2);
    expect(reopened.lookup(126n)).toEqual({ offset: 125n, position: 2500 });
    expect(reopened.sanityCheck(3000)).toBeUndefined();
    expect(reopened.sanityCheck(2000)).toMatch(/past the log/);
    reopened.close();
  });

  it('refuses entries that do not ascend and fills up at segment.index.bytes', () => {
    const index = new OffsetIndex(path.join(folder(), 'x.index'), 0n, 16, { create: true });
    index.append(1n, 10);
    expect(() => index.append(1n, 20)).toThrow(/ascend/);
    index.append(2n, 20);
    expect(index.isFull).toBe(true);
    index.close();
  });
});

describe('TimeIndex', () => {
  it('keeps only growing timestamps and finds the largest at or below a target', () => {
    const index = new TimeIndex(path.join(folder(), 'x.timeindex'), 50n, 4096, { create: true });
    expect(index.maybeAppend(1000, 55n)).toBe(true);
    expect(index.maybeAppend(900, 60n)).toBe(false);
    expect(index.maybeAppend(2000, 70n)).toBe(true);
    expect(index.lookup(999)).toEqual({ timestampMs: -1, offset: 50n });
    expect(index.lookup(1500)).toEqual({ timestampMs: 1000, offset: 55n });
    index.truncateTo(70n);
    expect(index.lastEntry()).toEqual({ timestampMs: 1000, offset: 55n });
    expect(index.sanityCheck()).toBeUndefined();
    index.close();
  });
});
