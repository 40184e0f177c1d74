// Proves installCrc32cImplementation refuses every kind of wrong candidate (bad check values,
// ignoring the range, wrong only on long inputs, signed results, throwing) and leaves the current
// implementation in place, then accepts a right one, which crc32c then calls and
// crc32cImplementation names. Its own file: an install lasts for the rest of the process, and
// vitest runs each spec file in a fresh one.
import { describe, expect, it } from 'vitest';
import {
  crc32c,
  crc32cImplementation,
  crc32cJavaScript,
  installCrc32cImplementation,
  type Crc32cFunction,
} from './crc32c';

const builtIn = crc32cImplementation;

describe('installCrc32cImplementation', () => {
  it.each<[string, Crc32cFunction, RegExp]>([
    ['gives a wrong check value', () => 0x12345678, /0x12345678 .* "123456789"/],
    ['ignores start and end', (data) => crc32cJavaScript(data), /\(sub-range\) for "123456789"/],
    [
      'is wrong only past a few kilobytes',
      (data, start, end) =>
        (crc32cJavaScript(data, start, end) ^ (end - start > 6_000 ? 1 : 0)) >>> 0,
      /6144 pseudo-random bytes at position 0/,
    ],
    [
      'returns signed values',
      (data, start, end) => crc32cJavaScript(data, start, end) | 0,
      /gives -486108541 .* "123456789"/,
    ],
    [
      'throws',
      () => {
        throw new Error('illegal instruction');
      },
      /threw: illegal instruction/,
    ],
  ])('refuses a candidate that %s, and keeps the current one', (_name, candidate, reason) => {
    const result = installCrc32cImplementation('candidate', candidate);
    expect(result.installed).toBe(false);
    expect(result.installed === false && result.reason).toMatch(reason);
    expect(crc32cImplementation).toBe(builtIn);
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('refuses an empty name', () => {
    const result = installCrc32cImplementation('', crc32cJavaScript);
    expect(result).toEqual({ installed: false, reason: 'the name is empty' });
    expect(crc32cImplementation).toBe(builtIn);
  });

  it('installs a right candidate: crc32c calls it and crc32cImplementation names it', () => {
    const calls: Array<[number, number]> = [];
    const candidate: Crc32cFunction = (data, start, end) => {
      calls.push([start, end]);
      return crc32cJavaScript(data, start, end);
    };
    expect(installCrc32cImplementation('test-tables', candidate)).toEqual({ installed: true });
    expect(crc32cImplementation).toBe('test-tables');
    calls.length = 0;
    const framed = Buffer.from('xx123456789y');
    expect(crc32c(framed, 2, 11)).toBe(0xe3069283);
    expect(crc32c(framed)).toBe(crc32cJavaScript(framed));
    expect(calls).toEqual([
      [2, 11],
      [0, 12],
    ]);
  });
});
