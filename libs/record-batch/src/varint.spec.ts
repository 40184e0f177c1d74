// Proves the zigzag varint/varlong codec matches Kafka's ByteUtils: known encodings of Kafka's
// edge values, fast-check round trips over the whole int32/int64 range with sizes that match
// what is written, and typed INVALID_RECORD errors (never a read past the limit) for truncated
// and over-long encodings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import type { ReadCursor } from './varint';
import {
  readVarint,
  readVarlong,
  readVarlongAsNumber,
  sizeOfVarint,
  sizeOfVarlong,
  skipVarlong,
  writeVarint,
  writeVarlong,
} from './varint';

const int32Min = -(2 ** 31);
const int32Max = 2 ** 31 - 1;
const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

function cursorOver(bytes: number[], limit = bytes.length): ReadCursor {
  return { buffer: Buffer.from(bytes), position: 0, limit };
}

function encodeVarint(value: number): number[] {
  const buffer = Buffer.alloc(5);
  return [...buffer.subarray(0, writeVarint(buffer, 0, value))];
}

function encodeVarlong(value: bigint): number[] {
  const buffer = Buffer.alloc(10);
  return [...buffer.subarray(0, writeVarlong(buffer, 0, value))];
}

function expectInvalidRecord(read: () => unknown, message: RegExp): void {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(RecordBatchError);
    expect((error as RecordBatchError).code).toBe('INVALID_RECORD');
    expect((error as RecordBatchError).message).toMatch(message);
    return;
  }
  expect.fail('expected a RecordBatchError');
}

describe('varint (int32)', () => {
  it.each([
    [0, [0x00]],
    [-1, [0x01]],
    [1, [0x02]],
    [-2, [0x03]],
    [63, [0x7e]],
    [-64, [0x7f]],
    [64, [0x80, 0x01]],
    [300, [0xd8, 0x04]],
    [-300, [0xd7, 0x04]],
    [int32Max, [0xfe, 0xff, 0xff, 0xff, 0x0f]],
    [int32Min, [0xff, 0xff, 0xff, 0xff, 0x0f]],
  ])('encodes %d as Kafka does', (value, bytes) => {
    expect(encodeVarint(value)).toEqual(bytes);
    expect(sizeOfVarint(value)).toBe(bytes.length);
    const cursor = cursorOver(bytes);
    expect(readVarint(cursor)).toBe(value);
    expect(cursor.position).toBe(bytes.length);
  });

  it('round trips every int32 and reports the size it writes', () => {
    fc.assert(
      fc.property(fc.integer({ min: int32Min, max: int32Max }), (value) => {
        const bytes = encodeVarint(value);
        expect(bytes.length).toBe(sizeOfVarint(value));
        expect(readVarint(cursorOver(bytes))).toBe(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads at the cursor position and stops after the varint', () => {
    const cursor: ReadCursor = { buffer: Buffer.from([9, 0xd8, 0x04, 7]), position: 1, limit: 4 };
    expect(readVarint(cursor)).toBe(300);
    expect(cursor.position).toBe(3);
  });

  it('keeps only the bits of the fifth byte that fit in 32, as Kafka does', () => {
    expect(readVarint(cursorOver([0xff, 0xff, 0xff, 0xff, 0x7f]))).toBe(int32Min);
  });

  it('rejects a truncated varint without moving the cursor', () => {
    const cursor = cursorOver([0xd8]);
    expectInvalidRecord(() => readVarint(cursor), /varint at byte position 0 is truncated/);
    expect(cursor.position).toBe(0);
    expectInvalidRecord(() => readVarint(cursorOver([])), /truncated/);
  });

  it('does not read past the limit even when the buffer goes on', () => {
    expectInvalidRecord(() => readVarint(cursorOver([0xd8, 0x04], 1)), /runs into .* at 1/);
  });

  it('rejects a varint whose fifth byte still continues', () => {
    expectInvalidRecord(
      () => readVarint(cursorOver([0x80, 0x80, 0x80, 0x80, 0x80, 0x00])),
      /too long/,
    );
  });

  it('refuses to write a value that is not an int32', () => {
    expect(() => writeVarint(Buffer.alloc(5), 0, 2 ** 31)).toThrow(RangeError);
    expect(() => sizeOfVarint(1.5)).toThrow(RangeError);
  });
});

describe('varlong (int64)', () => {
  it.each([
    [0n, [0x00]],
    [-1n, [0x01]],
    [1n, [0x02]],
    [300n, [0xd8, 0x04]],
    [BigInt(int32Max), [0xfe, 0xff, 0xff, 0xff, 0x0f]],
    [BigInt(int32Min), [0xff, 0xff, 0xff, 0xff, 0x0f]],
    [2n ** 52n - 1n, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]],
    [-(2n ** 52n), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]],
    [2n ** 52n, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]],
    [int64Max, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
    [int64Min, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
  ])('encodes %d as Kafka does', (value, bytes) => {
    expect(encodeVarlong(value)).toEqual(bytes);
    expect(sizeOfVarlong(value)).toBe(bytes.length);
    const cursor = cursorOver(bytes);
    expect(readVarlong(cursor)).toBe(value);
    expect(cursor.position).toBe(bytes.length);
    const skipped = cursorOver(bytes);
    skipVarlong(skipped);
    expect(skipped.position).toBe(bytes.length);
  });

  it('round trips every int64 and reports the size it writes', () => {
    const anyInt64 = fc.oneof(
      fc.bigInt({ min: int64Min, max: int64Max }),
      fc.bigInt({ min: -(2n ** 53n), max: 2n ** 53n }),
      fc.bigInt({ min: -1000n, max: 1000n }),
    );
    fc.assert(
      fc.property(anyInt64, (value) => {
        const bytes = encodeVarlong(value);
        expect(bytes.length).toBe(sizeOfVarlong(value));
        expect(readVarlong(cursorOver(bytes))).toBe(value);
        const skipped = cursorOver(bytes);
        skipVarlong(skipped);
        expect(skipped.position).toBe(bytes.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads up to seven bytes as a number, and leaves longer ones to readVarlong', () => {
    const anyInt64 = fc.oneof(
      fc.bigInt({ min: int64Min, max: int64Max }),
      fc.bigInt({ min: -(2n ** 49n), max: 2n ** 49n }),
      fc.bigInt({ min: -1000n, max: 1000n }),
    );
    fc.assert(
      fc.property(anyInt64, (value) => {
        const bytes = encodeVarlong(value);
        const cursor = cursorOver(bytes);
        const number = readVarlongAsNumber(cursor);
        if (bytes.length <= 7) {
          expect(number).toBe(Number(value));
          expect(cursor.position).toBe(bytes.length);
        } else {
          expect(number).toBeNaN();
          expect(cursor.position).toBe(0);
        }
      }),
      { numRuns: 2000 },
    );
    expectInvalidRecord(() => readVarlongAsNumber(cursorOver([0x80])), /truncated/);
  });

  it('rejects truncated varlongs, short and long, without moving the cursor', () => {
    for (const bytes of [[0x80], [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]]) {
      const cursor = cursorOver(bytes);
      expectInvalidRecord(() => readVarlong(cursor), /varlong at byte position 0 is truncated/);
      expectInvalidRecord(() => skipVarlong(cursor), /truncated/);
      expect(cursor.position).toBe(0);
    }
  });

  it('rejects a varlong whose tenth byte still continues', () => {
    const bytes = [...Array<number>(10).fill(0x80), 0x00];
    expectInvalidRecord(() => readVarlong(cursorOver(bytes)), /too long/);
    expectInvalidRecord(() => skipVarlong(cursorOver(bytes)), /too long/);
  });

  it('refuses to write a value that is not an int64', () => {
    expect(() => writeVarlong(Buffer.alloc(10), 0, 2n ** 63n)).toThrow(RangeError);
  });
});
