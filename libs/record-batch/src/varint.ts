import { RecordBatchError, RecordBatchErrorCode } from './errors';

/**
 * Zigzag varints as Kafka's ByteUtils writes them: the value is zigzag-mapped so that small
 * negative numbers stay short (0→0, -1→1, 1→2, -2→3, …), then stored seven bits per byte,
 * least significant group first, with the top bit of each byte set while more bytes follow.
 * A varint (int32) takes at most 5 bytes, a varlong (int64) at most 10.
 *
 * Writers take a position and return the position after what they wrote. Readers advance a
 * cursor, so a record can be walked without allocating a result object per field. A reader
 * never looks at a byte at or past `cursor.limit`; a varint that runs into the limit, or that
 * keeps its continuation bit past the longest legal encoding, throws INVALID_RECORD (Kafka
 * reports both as an invalid record structure).
 */

/** A read position in a buffer that readers advance, as a Java ByteBuffer's position. */
export interface ReadCursor {
  readonly buffer: Buffer;
  position: number;
  /** One past the last byte the readers may look at; at most `buffer.length`. */
  limit: number;
}

const varintBytesMax = 5;
const varlongBytesMax = 10;
/** Below this magnitude a varlong's zigzag value fits a double exactly, so no bigint is needed. */
const varlongNumberPathMagnitude = 2n ** 52n;

function zigzagInt32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

function assertInt32(value: number): void {
  if ((value | 0) !== value) {
    throw new RangeError(`varint value ${value} is not a 32-bit signed integer`);
  }
}

function assertInt64(value: bigint): void {
  if (BigInt.asIntN(64, value) !== value) {
    throw new RangeError(`varlong value ${value} is not a 64-bit signed integer`);
  }
}

export function sizeOfVarint(value: number): number {
  assertInt32(value);
  const zigzag = zigzagInt32(value);
  if (zigzag < 0x80) return 1;
  if (zigzag < 0x4000) return 2;
  if (zigzag < 0x200000) return 3;
  if (zigzag < 0x10000000) return 4;
  return 5;
}

/**
 * sizeOfVarlong for a number whose magnitude is below 2^51 (so its zigzag value, twice that,
 * is still an exact double): a timestamp delta needs no bigint.
 */
export function sizeOfVarlongNumber(value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  let sizeBytes = 1;
  while (zigzag >= 0x80) {
    zigzag = Math.floor(zigzag / 0x80);
    sizeBytes += 1;
  }
  return sizeBytes;
}

/** writeVarlong for a number whose magnitude is below 2^51 (see sizeOfVarlongNumber). */
export function writeVarlongNumber(buffer: Buffer, position: number, value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  let next = position;
  while (zigzag >= 0x80) {
    buffer[next++] = (zigzag % 0x80) | 0x80;
    zigzag = Math.floor(zigzag / 0x80);
  }
  buffer[next++] = zigzag;
  return next;
}

export function sizeOfVarlong(value: bigint): number {
  assertInt64(value);
  if (value > -varlongNumberPathMagnitude && value < varlongNumberPathMagnitude) {
    return sizeOfVarlongNumber(Number(value));
  }
  let zigzag = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
  let sizeBytes = 1;
  while (zigzag >= 0x80n) {
    zigzag >>= 7n;
    sizeBytes += 1;
  }
  return sizeBytes;
}

/** Kafka's ByteUtils.writeVarint. Returns the position after the last byte written. */
export function writeVarint(buffer: Buffer, position: number, value: number): number {
  assertInt32(value);
  let zigzag = zigzagInt32(value);
  let next = position;
  while (zigzag >= 0x80) {
    buffer[next++] = (zigzag & 0x7f) | 0x80;
    zigzag >>>= 7;
  }
  buffer[next++] = zigzag;
  return next;
}

/** Kafka's ByteUtils.writeVarlong. Returns the position after the last byte written. */
export function writeVarlong(buffer: Buffer, position: number, value: bigint): number {
  assertInt64(value);
  let next = position;
  if (value > -varlongNumberPathMagnitude && value < varlongNumberPathMagnitude) {
    return writeVarlongNumber(buffer, position, Number(value));
  }
  let zigzag = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
  while (zigzag >= 0x80n) {
    buffer[next++] = Number(zigzag & 0x7fn) | 0x80;
    zigzag >>= 7n;
  }
  buffer[next++] = Number(zigzag);
  return next;
}

function truncated(kind: string, start: number, limit: number): RecordBatchError {
  return new RecordBatchError(
    RecordBatchErrorCode.InvalidRecord,
    `${kind} at byte position ${start} is truncated: it runs into the end of its data at ${limit}`,
  );
}

function tooLong(kind: string, start: number, bytesMax: number): RecordBatchError {
  return new RecordBatchError(
    RecordBatchErrorCode.InvalidRecord,
    `${kind} at byte position ${start} is too long: byte ${bytesMax} still has its ` +
      'continuation bit set',
  );
}

/**
 * Kafka's ByteUtils.readVarint. Like Kafka, the fifth byte contributes only the bits that fit
 * in 32, so an encoding Kafka accepts is accepted here with the same value.
 */
export function readVarint(cursor: ReadCursor): number {
  const { buffer, limit } = cursor;
  const start = cursor.position;
  let next = start;
  let value = 0;
  let shift = 0;
  for (;;) {
    if (next >= limit) throw truncated('varint', start, limit);
    const byte = buffer[next++];
    if ((byte & 0x80) === 0) {
      value |= byte << shift;
      break;
    }
    value |= (byte & 0x7f) << shift;
    shift += 7;
    if (shift > 28) throw tooLong('varint', start, varintBytesMax);
  }
  cursor.position = next;
  return (value >>> 1) ^ -(value & 1);
}

/**
 * Kafka's ByteUtils.readVarlong. The first seven bytes (49 bits) accumulate in a double, which
 * covers every timestamp delta a real producer writes; longer encodings continue in bigint.
 */
export function readVarlong(cursor: ReadCursor): bigint {
  const short = readVarlongAsNumber(cursor);
  if (!Number.isNaN(short)) return BigInt(short);
  // Eight bytes or more: the first seven again (every one had its continuation bit), then on.
  const { buffer, limit } = cursor;
  const start = cursor.position;
  let value = 0n;
  for (let index = 0; index < 7; index++) {
    value |= BigInt(buffer[start + index]! & 0x7f) << BigInt(7 * index);
  }
  let next = start + 7;
  let shift = 49n;
  for (;;) {
    if (next >= limit) throw truncated('varlong', start, limit);
    const byte = buffer[next++];
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
    shift += 7n;
    if (shift > 63n) throw tooLong('varlong', start, varlongBytesMax);
  }
  cursor.position = next;
  // Like Java's `b << 63`, the tenth byte keeps only its lowest bit.
  value = BigInt.asUintN(64, value);
  return BigInt.asIntN(64, (value >> 1n) ^ -(value & 1n));
}

/**
 * readVarlong without the bigint, for the per-record hot path: a value of at most seven bytes
 * (49 bits, every timestamp delta a real producer writes) as a number; for a longer encoding,
 * NaN with the cursor unmoved, so the caller reads it again with readVarlong.
 */
export function readVarlongAsNumber(cursor: ReadCursor): number {
  const { buffer, limit } = cursor;
  const start = cursor.position;
  let next = start;
  let low = 0;
  let multiplier = 1;
  for (let index = 0; index < 7; index++) {
    if (next >= limit) throw truncated('varlong', start, limit);
    const byte = buffer[next++];
    low += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) {
      cursor.position = next;
      return low % 2 === 0 ? low / 2 : -(low + 1) / 2;
    }
    multiplier *= 0x80;
  }
  return Number.NaN;
}

/** Steps over a varlong with the same checks as readVarlong, without building its value. */
export function skipVarlong(cursor: ReadCursor): void {
  const { buffer, limit } = cursor;
  const start = cursor.position;
  let next = start;
  for (let index = 0; index < varlongBytesMax; index++) {
    if (next >= limit) throw truncated('varlong', start, limit);
    if ((buffer[next++] & 0x80) === 0) {
      cursor.position = next;
      return;
    }
  }
  throw tooLong('varlong', start, varlongBytesMax);
}
