// Proves the number forms of int64 fields agree with Buffer's bigint methods: reading any int64
// gives Number(readBigInt64BE), rounding included, and writing any integer number in range gives
// the bytes of writeBigInt64BE(BigInt(value)); out of range both throw. Property tests over the
// whole int64 range with fast-check, plus the edges.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readInt64AsNumber, writeInt64FromNumber } from './int64-fields';

const int64Edges = [
  0n,
  1n,
  -1n,
  2n ** 53n,
  2n ** 53n + 1n,
  -(2n ** 53n) - 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
];

describe('readInt64AsNumber', () => {
  it('gives Number(readBigInt64BE) for every int64, past 2^53 too', () => {
    const buffer = Buffer.alloc(11);
    const check = (value: bigint, position: number): void => {
      buffer.writeBigInt64BE(value, position);
      expect(readInt64AsNumber(buffer, position)).toBe(Number(buffer.readBigInt64BE(position)));
    };
    for (const value of int64Edges) check(value, 1);
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.nat(3), check),
      { numRuns: 2000 },
    );
  });
});

describe('writeInt64FromNumber', () => {
  it('writes the bytes of writeBigInt64BE(BigInt(value)) for every integer in int64 range', () => {
    const check = (value: number): void => {
      const expected = Buffer.alloc(8);
      expected.writeBigInt64BE(BigInt(value));
      const actual = Buffer.alloc(8);
      writeInt64FromNumber(actual, value, 0);
      expect(actual).toEqual(expected);
    };
    for (const value of int64Edges.slice(0, -2)) check(Number(value));
    check(-(2 ** 63));
    fc.assert(fc.property(fc.maxSafeInteger(), check), { numRuns: 2000 });
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1025n }), (value) =>
        check(Number(value)),
      ),
      { numRuns: 2000 },
    );
  });

  it('throws a RangeError outside int64, as writeBigInt64BE does', () => {
    for (const value of [2 ** 63, -(2 ** 63) - 4096, 2 ** 70]) {
      expect(() => Buffer.alloc(8).writeBigInt64BE(BigInt(value))).toThrow(RangeError);
      expect(() => writeInt64FromNumber(Buffer.alloc(8), value, 0)).toThrow(RangeError);
    }
  });

  it('refuses a number that is not an integer', () => {
    expect(() => writeInt64FromNumber(Buffer.alloc(8), 1.5, 0)).toThrow(/integer/);
    expect(() => writeInt64FromNumber(Buffer.alloc(8), Number.NaN, 0)).toThrow(/integer/);
  });
});
