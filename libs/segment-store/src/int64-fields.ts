// The int64 millisecond timestamps of batch headers and time index entries, read and written as
// plain numbers, which is how the log holds timestamps everywhere else. Buffer's readBigInt64BE
// and writeBigInt64BE make a bigint and do bigint arithmetic on every call, and the append path
// does a few of these for every batch.
import { assert } from '@spool/common';

const twoToThe32 = 0x1_0000_0000;

/**
 * The int64 at `position`, big-endian, as a number: exactly Number(buffer.readBigInt64BE(...)).
 * high × 2^32 is exact and the sum is rounded once, to the nearest double, as Number(bigint) is,
 * so the two agree also past 2^53.
 */
export function readInt64AsNumber(buffer: Buffer, position: number): number {
  return buffer.readInt32BE(position) * twoToThe32 + buffer.readUInt32BE(position + 4);
}

/**
 * Writes the integer `value` as an int64 at `position`, big-endian: the same bytes as
 * buffer.writeBigInt64BE(BigInt(value), position), and like it a RangeError outside int64.
 * Both halves are exact: Math.floor of a division by 2^32, and a difference below 2^32.
 */
export function writeInt64FromNumber(buffer: Buffer, value: number, position: number): void {
  assert(Number.isInteger(value), 'an int64 field takes an integer');
  const high = Math.floor(value / twoToThe32);
  buffer.writeInt32BE(high, position);
  buffer.writeUInt32BE(value - high * twoToThe32, position + 4);
}
