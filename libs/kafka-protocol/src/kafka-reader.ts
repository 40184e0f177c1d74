import { KafkaProtocolError, KafkaProtocolErrorCode } from './errors';

/** Kafka's bound on a string's UTF-8 length in both encodings (its generated readers check it). */
export const stringSizeBytesMax = 0x7fff;

/**
 * A cursor over one Kafka message in a Buffer: Kafka's primitive types in network byte order, the
 * classic (int16/int32 length) and compact (unsigned varint length + 1) encodings of strings,
 * bytes, records and arrays, and the varints of tagged fields.
 *
 * Every read is bounds-checked against `end` and throws a KafkaProtocolError naming the field and
 * the offset, never a RangeError. A length prefix is checked against the bytes that remain before
 * anything is allocated for it, so a 2 GiB prefix in a 20-byte frame costs nothing.
 *
 * `bytes` and `records` values are views (subarray) into the input, not copies: a Produce request's
 * batches reach the log without being copied, and a caller that keeps such a value longer than the
 * input buffer's life must copy it. UUIDs are copied (16 bytes), since they outlive requests.
 */
export class KafkaReader {
  readonly buffer: Buffer;
  /** The next byte to read. */
  position: number;
  /** One past the last byte of the message. */
  readonly end: number;
  private readonly view: DataView;

  constructor(buffer: Buffer, position = 0, end = buffer.length) {
    if (position < 0 || end > buffer.length || position > end) {
      throw new KafkaProtocolError(
        KafkaProtocolErrorCode.InvalidRequest,
        'KafkaReader',
        `window ${position}..${end} is outside a buffer of ${buffer.length} bytes`,
      );
    }
    this.buffer = buffer;
    this.position = position;
    this.end = end;
    this.view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
  }

  get remainingBytes(): number {
    return this.end - this.position;
  }

  /** Throws unless `sizeBytes` more bytes remain. */
  ensureRemaining(sizeBytes: number, field: string): void {
    if (sizeBytes > this.end - this.position) {
      throw new KafkaProtocolError(
        KafkaProtocolErrorCode.InvalidRequest,
        field,
        `truncated: needs ${sizeBytes} bytes, ${this.end - this.position} remain`,
        this.position,
      );
    }
  }

  /** A malformed-input error at the current position. */
  error(field: string, message: string): KafkaProtocolError {
    return new KafkaProtocolError(
      KafkaProtocolErrorCode.InvalidRequest,
      field,
      message,
      this.position,
    );
  }

  readInt8(field: string): number {
    this.ensureRemaining(1, field);
    return this.buffer.readInt8(this.position++);
  }

  readBool(field: string): boolean {
    this.ensureRemaining(1, field);
    return this.buffer[this.position++] !== 0;
  }

  readInt16(field: string): number {
    this.ensureRemaining(2, field);
    const value = this.buffer.readInt16BE(this.position);
    this.position += 2;
    return value;
  }

  readUint16(field: string): number {
    this.ensureRemaining(2, field);
    const value = this.buffer.readUInt16BE(this.position);
    this.position += 2;
    return value;
  }

  readInt32(field: string): number {
    this.ensureRemaining(4, field);
    const value = this.buffer.readInt32BE(this.position);
    this.position += 4;
    return value;
  }

  readUint32(field: string): number {
    this.ensureRemaining(4, field);
    const value = this.buffer.readUInt32BE(this.position);
    this.position += 4;
    return value;
  }

  readInt64(field: string): bigint {
    this.ensureRemaining(8, field);
    // DataView's getBigInt64 is several times faster than Buffer's readBigInt64BE.
    const value = this.view.getBigInt64(this.position);
    this.position += 8;
    return value;
  }

  readFloat64(field: string): number {
    this.ensureRemaining(8, field);
    const value = this.buffer.readDoubleBE(this.position);
    this.position += 8;
    return value;
  }

  readUuid(field: string): Buffer {
    this.ensureRemaining(16, field);
    const value = Buffer.from(this.buffer.subarray(this.position, this.position + 16));
    this.position += 16;
    return value;
  }

  /** Kafka's unsigned varint (at most 5 bytes, 32 bits), as `ByteUtils.readUnsignedVarint`. */
  readUnsignedVarint(field: string): number {
    // Most varints (lengths, tagged field counts) are one byte.
    if (this.position < this.end) {
      const first = this.buffer[this.position]!;
      if (first < 0x80) {
        this.position++;
        return first;
      }
    }
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.position >= this.end) {
        throw this.error(field, 'truncated inside a varint');
      }
      const byte = this.buffer[this.position++]!;
      if (shift === 28 && byte > 0x0f) {
        throw this.error(field, 'varint is longer than 32 bits');
      }
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw this.error(field, 'varint is longer than 5 bytes');
  }

  /** Kafka's zig-zag signed varint (32 bits). */
  readVarint(field: string): number {
    const raw = this.readUnsignedVarint(field);
    return (raw >>> 1) ^ -(raw & 1);
  }

  /**
   * The length prefix of a string, bytes, records or array field: int16 (strings) or int32 in
   * classic versions, unsigned varint minus one in flexible ones. -1 means null. A length that
   * could not fit in the remaining bytes is refused here, before anything is allocated for it.
   */
  private readLength(field: string, flexible: boolean, classicInt16: boolean): number {
    let length: number;
    if (flexible) {
      length = this.readUnsignedVarint(field) - 1;
    } else if (classicInt16) {
      length = this.readInt16(field);
    } else {
      length = this.readInt32(field);
    }
    if (length < -1) {
      throw this.error(field, `negative length ${length}`);
    }
    if (length > this.end - this.position) {
      throw this.error(
        field,
        `length ${length} is longer than the ${this.end - this.position} bytes that remain`,
      );
    }
    return length;
  }

  readNullableString(field: string, flexible: boolean): string | null {
    const length = this.readLength(field, flexible, true);
    if (length < 0) return null;
    if (length > stringSizeBytesMax) {
      throw this.error(field, `string length ${length} is over Kafka's ${stringSizeBytesMax}`);
    }
    const value = this.buffer.toString('utf8', this.position, this.position + length);
    this.position += length;
    return value;
  }

  readString(field: string, flexible: boolean): string {
    const value = this.readNullableString(field, flexible);
    if (value === null) throw this.error(field, 'null string in a field that is not nullable');
    return value;
  }

  readNullableBytes(field: string, flexible: boolean): Buffer | null {
    const length = this.readLength(field, flexible, false);
    if (length < 0) return null;
    const value = this.buffer.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  readBytes(field: string, flexible: boolean): Buffer {
    const value = this.readNullableBytes(field, flexible);
    if (value === null) throw this.error(field, 'null bytes in a field that is not nullable');
    return value;
  }

  /** A records field: a view of the raw record batches, never decoded here. */
  readRecords(field: string, flexible: boolean): Buffer | null {
    return this.readNullableBytes(field, flexible);
  }

  /**
   * An array's element count, -1 for null (only when `nullable`). As Kafka's generated readers do,
   * a count larger than the remaining bytes is refused: every element takes at least one byte.
   */
  readArrayLength(field: string, flexible: boolean, nullable: boolean): number {
    const length = this.readLength(field, flexible, false);
    if (length < 0 && !nullable) {
      throw this.error(field, 'null array in a field that is not nullable');
    }
    return length;
  }

  /** The marker before a nullable struct: -1 for null, anything else for present. */
  readStructPresent(field: string): boolean {
    return this.readInt8(field) >= 0;
  }

  skip(sizeBytes: number, field: string): void {
    this.ensureRemaining(sizeBytes, field);
    this.position += sizeBytes;
  }

  /** After a known tagged field is read: it must have taken exactly the size its prefix gave. */
  endTaggedField(start: number, sizeBytes: number, field: string): void {
    if (this.position - start !== sizeBytes) {
      throw this.error(
        field,
        `tagged field took ${this.position - start} bytes, its size prefix says ${sizeBytes}`,
      );
    }
  }
}
