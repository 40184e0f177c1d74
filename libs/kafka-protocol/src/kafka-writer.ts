import { KafkaProtocolError, KafkaProtocolErrorCode } from './errors';
import { stringSizeBytesMax } from './kafka-reader';

/** Kafka's socket.request.max.bytes: no request or response this process writes is larger. */
export const writerSizeBytesMaxDefault = 100 * 1024 * 1024;
/**
 * The first buffer's size: most responses fit in it, and Node.js hands buffers under 4 KiB out of
 * its shared pool (a ProduceResponse frame took 1.6 µs of CPU with a 4 KiB first buffer, 0.7-1.0
 * with 512 B).
 */
const initialChunkSizeBytes = 512;
/** Buffers grow by doubling up to this size, so a large message takes few allocations. */
const chunkSizeBytesMax = 1024 * 1024;
/**
 * Records (and bytes) at least this long are appended by reference instead of copied: a Fetch
 * response's batches go from the segment read to the socket without a copy in between.
 */
export const byReferenceSizeBytesMin = 1024;

export interface KafkaWriterOptions {
  /** The bound on the whole message; writing past it throws MESSAGE_TOO_LARGE. */
  readonly sizeBytesMax?: number;
  readonly initialSizeBytes?: number;
}

/** Where a reserved int32 (a frame's size prefix) lives, for `setInt32`. */
export interface ReservedInt32 {
  readonly buffer: Buffer;
  readonly offset: number;
}

/**
 * Writes one Kafka message (or a whole frame: size prefix, header, body) into a list of chunks.
 * Growing never copies what is written: a full buffer is sealed as a chunk and writing goes on in
 * a new one, and large records are chunks of their own, referenced, not copied. `toBuffers()`
 * hands the chunks to a socket's writev (`socket.cork()`, a write per chunk, `uncork()`);
 * `toBuffer()` joins them for callers that need one Buffer.
 *
 * A size prefix is written as a reservation (`reserveInt32`) filled in at the end with
 * `setInt32(reserved, writer.sizeBytes - 4)`: no message is encoded twice or concatenated to put
 * its length in front.
 */
export class KafkaWriter {
  private readonly sizeBytesMax: number;
  private readonly chunks: Buffer[] = [];
  private buffer!: Buffer;
  private view!: DataView;
  private chunkStart = 0;
  private position = 0;
  /** Where writing in this buffer must stop: its end, or earlier where the bound is reached. */
  private limit = 0;
  private sealedSizeBytes = 0;

  constructor(options: KafkaWriterOptions = {}) {
    this.sizeBytesMax = options.sizeBytesMax ?? writerSizeBytesMaxDefault;
    this.useBuffer(
      Buffer.allocUnsafe(
        Math.min(options.initialSizeBytes ?? initialChunkSizeBytes, this.sizeBytesMax),
      ),
    );
  }

  /** The bytes written so far. */
  get sizeBytes(): number {
    return this.sealedSizeBytes + this.position - this.chunkStart;
  }

  private useBuffer(buffer: Buffer): void {
    this.buffer = buffer;
    this.view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
    this.chunkStart = 0;
    this.position = 0;
    this.updateLimit();
  }

  private updateLimit(): void {
    this.limit = Math.min(
      this.buffer.length,
      this.chunkStart + this.sizeBytesMax - this.sealedSizeBytes,
    );
  }

  private checkBound(sizeBytes: number, field: string): void {
    if (this.sizeBytes + sizeBytes > this.sizeBytesMax) {
      throw new KafkaProtocolError(
        KafkaProtocolErrorCode.MessageTooLarge,
        field,
        `the message would be larger than the writer's bound of ${this.sizeBytesMax} bytes`,
      );
    }
  }

  /** Makes room for `sizeBytes` more: the fast path is one comparison. */
  private ensureCapacity(sizeBytes: number, field: string): void {
    if (this.position + sizeBytes <= this.limit) return;
    this.grow(sizeBytes, field);
  }

  private grow(sizeBytes: number, field: string): void {
    this.checkBound(sizeBytes, field);
    if (this.position + sizeBytes <= this.buffer.length) return;
    this.seal();
    const nextSizeBytes = Math.min(Math.max(this.buffer.length * 2, 256), chunkSizeBytesMax);
    const allowedSizeBytes = this.sizeBytesMax - this.sizeBytes;
    this.useBuffer(
      Buffer.allocUnsafe(Math.max(Math.min(nextSizeBytes, allowedSizeBytes), sizeBytes)),
    );
  }

  /** Ends the current chunk; writing continues after it in the same buffer. */
  private seal(): void {
    if (this.position > this.chunkStart) {
      this.chunks.push(this.buffer.subarray(this.chunkStart, this.position));
      this.sealedSizeBytes += this.position - this.chunkStart;
      this.chunkStart = this.position;
    }
  }

  writeInt8(value: number): void {
    this.ensureCapacity(1, 'int8');
    this.buffer.writeInt8(value, this.position);
    this.position += 1;
  }

  writeBool(value: boolean): void {
    this.ensureCapacity(1, 'bool');
    this.buffer[this.position++] = value ? 1 : 0;
  }

  writeInt16(value: number): void {
    this.ensureCapacity(2, 'int16');
    this.buffer.writeInt16BE(value, this.position);
    this.position += 2;
  }

  writeUint16(value: number): void {
    this.ensureCapacity(2, 'uint16');
    this.buffer.writeUInt16BE(value, this.position);
    this.position += 2;
  }

  writeInt32(value: number): void {
    this.ensureCapacity(4, 'int32');
    this.buffer.writeInt32BE(value, this.position);
    this.position += 4;
  }

  writeUint32(value: number): void {
    this.ensureCapacity(4, 'uint32');
    this.buffer.writeUInt32BE(value, this.position);
    this.position += 4;
  }

  writeInt64(value: bigint): void {
    this.ensureCapacity(8, 'int64');
    // DataView's setBigInt64 is several times faster than Buffer's writeBigInt64BE.
    this.view.setBigInt64(this.position, value);
    this.position += 8;
  }

  writeFloat64(value: number): void {
    this.ensureCapacity(8, 'float64');
    this.buffer.writeDoubleBE(value, this.position);
    this.position += 8;
  }

  writeUuid(value: Buffer, field = 'uuid'): void {
    if (value.length !== 16) {
      throw new KafkaProtocolError(
        KafkaProtocolErrorCode.InvalidRequest,
        field,
        `a UUID is 16 bytes, this one is ${value.length}`,
      );
    }
    this.writeRaw(value, field);
  }

  writeUnsignedVarint(value: number): void {
    this.ensureCapacity(5, 'varint');
    let remaining = value >>> 0;
    while (remaining > 0x7f) {
      this.buffer[this.position++] = (remaining & 0x7f) | 0x80;
      remaining >>>= 7;
    }
    this.buffer[this.position++] = remaining;
  }

  writeVarint(value: number): void {
    this.writeUnsignedVarint(((value << 1) ^ (value >> 31)) >>> 0);
  }

  /** Copies `value` in (or, at least `byReferenceSizeBytesMin` long, appends it by reference). */
  writeRaw(value: Buffer, field = 'bytes'): void {
    if (value.length >= byReferenceSizeBytesMin) {
      this.checkBound(value.length, field);
      this.seal();
      this.chunks.push(value);
      this.sealedSizeBytes += value.length;
      this.updateLimit();
      return;
    }
    this.ensureCapacity(value.length, field);
    value.copy(this.buffer, this.position);
    this.position += value.length;
  }

  private writeLength(length: number, flexible: boolean, classicInt16: boolean): void {
    if (flexible) this.writeUnsignedVarint(length + 1);
    else if (classicInt16) this.writeInt16(length);
    else this.writeInt32(length);
  }

  writeNullableString(value: string | null, flexible: boolean, field = 'string'): void {
    if (value === null) {
      this.writeLength(-1, flexible, true);
      return;
    }
    const sizeBytes = Buffer.byteLength(value, 'utf8');
    if (sizeBytes > stringSizeBytesMax) {
      throw new KafkaProtocolError(
        KafkaProtocolErrorCode.InvalidRequest,
        field,
        `string of ${sizeBytes} bytes is longer than Kafka's ${stringSizeBytesMax}`,
      );
    }
    this.writeLength(sizeBytes, flexible, true);
    this.ensureCapacity(sizeBytes, field);
    this.position += this.buffer.write(value, this.position, 'utf8');
  }

  /** A string that may not be null (a null from untyped code is refused, not written as -1). */
  writeString(value: string, flexible: boolean, field = 'string'): void {
    if (value === null) throw nullValueError(field);
    this.writeNullableString(value, flexible, field);
  }

  writeNullableBytes(value: Buffer | null, flexible: boolean, field = 'bytes'): void {
    if (value === null) {
      this.writeLength(-1, flexible, false);
      return;
    }
    this.writeLength(value.length, flexible, false);
    this.writeRaw(value, field);
  }

  writeBytes(value: Buffer, flexible: boolean, field = 'bytes'): void {
    if (value === null) throw nullValueError(field);
    this.writeNullableBytes(value, flexible, field);
  }

  /** A records field: the raw batches, appended by reference when large. */
  writeRecords(value: Buffer | null, flexible: boolean, field = 'records'): void {
    this.writeNullableBytes(value, flexible, field);
  }

  /** An array's element count, or -1 for null. */
  writeArrayLength(length: number, flexible: boolean): void {
    this.writeLength(length, flexible, false);
  }

  /** Appends all another writer holds (a tagged field's value, written to learn its size). */
  writeWriter(other: KafkaWriter): void {
    for (const chunk of other.toBuffers()) this.writeRaw(chunk);
  }

  /** Leaves room for an int32 (a size prefix) to be filled in later with `setInt32`. */
  reserveInt32(): ReservedInt32 {
    this.ensureCapacity(4, 'reserved int32');
    const reserved = { buffer: this.buffer, offset: this.position };
    this.buffer.writeInt32BE(0, this.position);
    this.position += 4;
    return reserved;
  }

  setInt32(reserved: ReservedInt32, value: number): void {
    reserved.buffer.writeInt32BE(value, reserved.offset);
  }

  /** The message as chunks, in order, for a socket's writev; none is copied. */
  toBuffers(): Buffer[] {
    if (this.position > this.chunkStart) {
      return [...this.chunks, this.buffer.subarray(this.chunkStart, this.position)];
    }
    return [...this.chunks];
  }

  /** The message as one Buffer (one copy when it spans several chunks). */
  toBuffer(): Buffer {
    const buffers = this.toBuffers();
    if (buffers.length === 1) return buffers[0]!;
    return Buffer.concat(buffers, this.sizeBytes);
  }
}

function nullValueError(field: string): KafkaProtocolError {
  return new KafkaProtocolError(
    KafkaProtocolErrorCode.InvalidRequest,
    field,
    'is null in a field that is not nullable',
  );
}
