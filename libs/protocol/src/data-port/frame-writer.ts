// Writes the fields of one data-port frame (layout in data-port-layout.ts) into a buffer that
// grows as needed, and fills in sizeBytes when the frame is finished. Values outside their
// field's range are the caller's bug and throw a RangeError, as Buffer's own writers do.
import assert from 'node:assert/strict';
import { frameSizeFieldBytes } from './data-port-layout';

const initialCapacityBytes = 256;

export class FrameWriter {
  private buffer: Buffer;
  private position: number;

  constructor(capacityBytes = initialCapacityBytes) {
    this.buffer = Buffer.allocUnsafe(Math.max(capacityBytes, frameSizeFieldBytes));
    // sizeBytes is written by finish(), when it is known.
    this.position = frameSizeFieldBytes;
  }

  u16(value: number): this {
    ensureInteger(value);
    this.reserve(2);
    this.position = this.buffer.writeUInt16BE(value, this.position);
    return this;
  }

  u32(value: number): this {
    ensureInteger(value);
    this.reserve(4);
    this.position = this.buffer.writeUInt32BE(value, this.position);
    return this;
  }

  i32(value: number): this {
    ensureInteger(value);
    this.reserve(4);
    this.position = this.buffer.writeInt32BE(value, this.position);
    return this;
  }

  i64(value: bigint): this {
    this.reserve(8);
    this.position = this.buffer.writeBigInt64BE(value, this.position);
    return this;
  }

  /** A u16 length and the UTF-8 bytes; a string over `bytesMax` bytes throws a RangeError. */
  string(value: string, bytesMax: number): this {
    const sizeBytes = Buffer.byteLength(value, 'utf8');
    if (sizeBytes > bytesMax) {
      throw new RangeError(`a string of ${sizeBytes} bytes is over its bound of ${bytesMax}`);
    }
    this.u16(sizeBytes);
    this.reserve(sizeBytes);
    this.position += this.buffer.write(value, this.position, sizeBytes, 'utf8');
    return this;
  }

  bytes(value: Buffer): this {
    this.reserve(value.length);
    this.position += value.copy(this.buffer, this.position);
    return this;
  }

  /**
   * Writes sizeBytes and returns the frame. `trailingBytes` are bytes the caller sends after
   * this buffer as part of the same frame (records moved by sendfile), counted in sizeBytes.
   */
  finish(trailingBytes = 0): Buffer {
    ensureInteger(trailingBytes);
    assert.ok(trailingBytes >= 0, 'trailingBytes must not be negative');
    const sizeBytes = this.position - frameSizeFieldBytes + trailingBytes;
    this.buffer.writeUInt32BE(sizeBytes, 0);
    return this.buffer.subarray(0, this.position);
  }

  private reserve(sizeBytes: number): void {
    const needed = this.position + sizeBytes;
    if (needed <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }
}

function ensureInteger(value: number): void {
  if (!Number.isInteger(value)) throw new RangeError(`${value} is not an integer`);
}

/**
 * `value` cut to at most `bytesMax` bytes of UTF-8 without splitting a character, for error
 * messages, which explain and may be shortened.
 */
export function truncateUtf8(value: string, bytesMax: number): string {
  if (Buffer.byteLength(value, 'utf8') <= bytesMax) return value;
  let end = bytesMax;
  const bytes = Buffer.from(value, 'utf8');
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** A writer with a request header written: apiKey, apiVersion, correlationId. */
export function startRequestFrame(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  capacityBytes?: number,
): FrameWriter {
  return new FrameWriter(capacityBytes).u16(apiKey).u16(apiVersion).u32(correlationId);
}

/** A writer with a response header written: correlationId, apiKey (0xFFFF for ERROR). */
export function startResponseFrame(
  correlationId: number,
  apiKey: number,
  capacityBytes?: number,
): FrameWriter {
  return new FrameWriter(capacityBytes).u32(correlationId).u16(apiKey);
}
