/**
 * The protobuf wire-format pieces the hand-written codecs share (partition-batches-codec.ts,
 * fetched-partitions-codec.ts): varint sizes and writers, and a cursor that reads and skips
 * fields, failing as protobufjs's reader does on truncated input.
 */

export const wireVarint = 0;
export const wireFixed64 = 1;
export const wireLengthDelimited = 2;
export const wireFixed32 = 5;

/** Bytes of an unsigned varint below 2^32. */
export function varintSizeBytes(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** protobuf's int32: a negative value is sign-extended to 64 bits, so ten bytes. */
export function int32SizeBytes(value: number): number {
  return value < 0 ? 10 : varintSizeBytes(value);
}

export function writeVarint(buffer: Buffer, position: number, value: number): number {
  let rest = value >>> 0;
  while (rest >= 0x80) {
    buffer[position++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  buffer[position++] = rest;
  return position;
}

export function writeInt32(buffer: Buffer, position: number, value: number): number {
  if (value >= 0) return writeVarint(buffer, position, value);
  // Low 32 bits in five groups of seven, then the sign extension: 0xff x4 and 0x01.
  let rest = value >>> 0;
  for (let group = 0; group < 4; group++) {
    buffer[position++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  buffer[position++] = rest | 0x70 | 0x80;
  for (let group = 0; group < 4; group++) buffer[position++] = 0xff;
  buffer[position++] = 0x01;
  return position;
}

/** A cursor over a message, failing as protobufjs's reader does on truncated input. */
export class WireReader {
  position: number;
  constructor(
    readonly buffer: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.position = start;
  }

  /** A varint as protobuf's int32/uint32 read it: the low 32 bits, as signed or not. */
  varint32(): number {
    let value = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.position >= this.end) throw new RangeError('premature EOF in a varint');
      const byte = this.buffer[this.position++]!;
      if (shift < 32) value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
    throw new Error('invalid varint: longer than 10 bytes');
  }

  lengthDelimited(): { start: number; end: number } {
    const length = this.varint32() >>> 0;
    const start = this.position;
    if (start + length > this.end)
      throw new RangeError('premature EOF in a length-delimited field');
    this.position = start + length;
    return { start, end: start + length };
  }

  skip(wireType: number): void {
    switch (wireType) {
      case wireVarint:
        this.varint32();
        return;
      case wireFixed64:
        this.advance(8);
        return;
      case wireLengthDelimited:
        this.lengthDelimited();
        return;
      case wireFixed32:
        this.advance(4);
        return;
      default:
        throw new Error(`cannot skip wire type ${wireType}`);
    }
  }

  private advance(bytes: number): void {
    if (this.position + bytes > this.end) throw new RangeError('premature EOF');
    this.position += bytes;
  }
}
