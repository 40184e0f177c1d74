// Proves the Publish idempotency window on its own: a key seen again within the window with the
// same fingerprint goes to `again` with the first outcome, other records under the same key are
// refused, a failed first call is run again whole, and both bounds (time since last use, number
// of keys) forget the oldest keys; keys must be well-formed.
import { SpoolError } from '@spool/common';
import { describe, expect, it } from 'vitest';
import { Fingerprint, IdempotencyWindow, checkIdempotencyKey } from './idempotency-window';

function counted() {
  const calls: string[] = [];
  return {
    calls,
    first: (value: number) => async () => {
      calls.push(`first ${value}`);
      return value;
    },
    again: async (previous: number) => {
      calls.push(`again ${previous}`);
      return previous;
    },
  };
}

describe('IdempotencyWindow', () => {
  it('answers a repeated key from the first outcome and refuses other records under it', async () => {
    const window = new IdempotencyWindow<number>(1_000, 10, () => 0);
    const { calls, first, again } = counted();
    expect(await window.run('k', 'a', first(1), again)).toBe(1);
    expect(await window.run('k', 'a', first(2), again)).toBe(1);
    expect(calls).toEqual(['first 1', 'again 1']);
    await expect(window.run('k', 'b', first(3), again)).rejects.toThrow(
      /idempotency_key "k" was used within the last 1000 ms for other records/,
    );
  });

  it('runs a key whose first call failed as a first call again', async () => {
    const window = new IdempotencyWindow<number>(1_000, 10, () => 0);
    const { calls, first, again } = counted();
    await expect(
      window.run('k', 'a', () => Promise.reject(new Error('down')), again),
    ).rejects.toThrow('down');
    expect(await window.run('k', 'a', first(2), again)).toBe(2);
    expect(calls).toEqual(['first 2']);
  });

  it('forgets keys unused for the window and the oldest beyond keysMax', async () => {
    let nowMs = 0;
    const window = new IdempotencyWindow<number>(1_000, 2, () => nowMs);
    const { calls, first, again } = counted();
    await window.run('a', 'x', first(1), again);
    nowMs = 999;
    await window.run('a', 'x', first(2), again);
    nowMs = 1_998;
    await window.run('a', 'x', first(3), again);
    nowMs = 3_000;
    await window.run('a', 'x', first(4), again);
    expect(calls).toEqual(['first 1', 'again 1', 'again 1', 'first 4']);
    await window.run('b', 'x', first(5), again);
    await window.run('c', 'x', first(6), again);
    expect(window.size).toBe(2);
    await window.run('a', 'x', first(7), again);
    expect(calls.at(-1)).toBe('first 7');
  });
});

describe('checkIdempotencyKey', () => {
  it('takes UUIDs and similar keys and refuses others, naming the rule', () => {
    for (const key of ['0f8fad5b-d9cb-469f-a165-70867728950e', 'order:42', 'a.b_c']) {
      expect(() => checkIdempotencyKey(key)).not.toThrow();
    }
    for (const key of ['', 'with space', 'x'.repeat(129), 'é', 'a/b']) {
      expect(() => checkIdempotencyKey(key)).toThrow(SpoolError);
      expect(() => checkIdempotencyKey(key)).toThrow(/must be 1 to 128 characters/);
    }
  });
});

describe('Fingerprint', () => {
  it('tells apart parts that concatenate alike and absent from empty', () => {
    const of = (...parts: Array<string | undefined>) =>
      parts.reduce((fingerprint, part) => fingerprint.add(part), new Fingerprint()).digest();
    expect(of('ab', 'c')).not.toBe(of('a', 'bc'));
    expect(of(undefined)).not.toBe(of(''));
    expect(of('a', 'b')).toBe(of('a', 'b'));
  });
});
