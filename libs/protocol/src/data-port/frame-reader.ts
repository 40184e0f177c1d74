// Reads the fields of one data-port frame (layout in data-port-layout.ts), checking each read
// against the frame's end before it happens, so a truncated frame or a lying length or count
// throws a ProtocolError that names the field and its byte position, and nothing past the frame
// is ever read or allocated for.
import { ProtocolError, ProtocolErrorCode } from '../errors';
import { frameSizeFieldBytes } from './data-port-layout';

/**
 * Which way a frame travels, which decides the error code: a bad request is the client's fault
 * (INVALID_REQUEST); a bad response means damaged bytes on the connection (CORRUPT_MESSAGE).
 */
export type FrameDirection = 'request' | 'response';

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export class FrameReader {
  private positionValue: number;

  /**
   * Opens `frame` (sizeBytes included) and checks that sizeBytes covers exactly the rest of the
   * buffer and at least `headerBytes` after it. `frameName` names the frame in errors; a decoder
   * makes it more precise once it has read the header.
   */
  constructor(
    readonly frame: Buffer,
    readonly direction: FrameDirection,
    public frameName: string,
    headerBytes: number,
  ) {
    this.positionValue = 0;
    const sizeBytes = this.u32('sizeBytes');
    if (sizeBytes !== frame.length - frameSizeFieldBytes) {
      this.fail(
        'sizeBytes',
        0,
        `says ${sizeBytes} bytes follow, but the frame holds ${frame.length - frameSizeFieldBytes}`,
      );
    }
    if (sizeBytes < headerBytes) {
      this.fail('sizeBytes', 0, `is ${sizeBytes}, shorter than the ${headerBytes}-byte header`);
    }
  }

  /** The position of the next read, counted from the first byte of sizeBytes. */
  get position(): number {
    return this.positionValue;
  }

  get bytesLeft(): number {
    return this.frame.length - this.positionValue;
  }

  u16(field: string): number {
    const position = this.take(field, 2);
    return this.frame.readUInt16BE(position);
  }

  u32(field: string): number {
    const position = this.take(field, 4);
    return this.frame.readUInt32BE(position);
  }

  i32(field: string): number {
    const position = this.take(field, 4);
    return this.frame.readInt32BE(position);
  }

  /** An i32 that must be at least `min` (sizes and waits ≥ 0, ids and epochs ≥ -1). */
  i32AtLeast(field: string, min: number): number {
    const position = this.positionValue;
    const value = this.i32(field);
    if (value < min) this.fail(field, position, `is ${value}, below its minimum ${min}`);
    return value;
  }

  i64(field: string): bigint {
    const position = this.take(field, 8);
    return this.frame.readBigInt64BE(position);
  }

  string(field: string, bytesMax: number): string {
    const lengthPosition = this.positionValue;
    const length = this.u16(`${field}.length`);
    if (length > bytesMax) {
      this.fail(field, lengthPosition, `is ${length} bytes long, over its bound of ${bytesMax}`);
    }
    const position = this.take(field, length);
    try {
      return utf8Decoder.decode(this.frame.subarray(position, position + length));
    } catch (error) {
      return this.fail(field, position, 'is not valid UTF-8', error);
    }
  }

  /**
   * An array count, checked against `countMax` and against the bytes left: each entry takes at
   * least `entryBytesMin`, so a lying count fails here instead of driving a long loop.
   */
  count(field: string, entryBytesMin: number, countMax: number): number {
    const position = this.positionValue;
    const count = this.u32(`${field}.count`);
    if (count > countMax) {
      this.fail(field, position, `has ${count} entries, over its bound of ${countMax}`);
    }
    if (count * entryBytesMin > this.bytesLeft) {
      this.fail(
        field,
        position,
        `has ${count} entries of at least ${entryBytesMin} bytes, but only ` +
          `${this.bytesLeft} bytes follow`,
      );
    }
    return count;
  }

  /** A view of the next `sizeBytes` bytes of the frame (no copy). */
  bytes(field: string, sizeBytes: number): Buffer {
    const position = this.take(field, sizeBytes);
    return this.frame.subarray(position, position + sizeBytes);
  }

  /** Throws unless every byte of the frame was read: trailing bytes mean a different layout. */
  ensureEnd(): void {
    if (this.bytesLeft === 0) return;
    this.fail('end', this.positionValue, `is followed by ${this.bytesLeft} unread bytes`);
  }

  fail(field: string, position: number, problem: string, cause?: unknown): never {
    const code =
      this.direction === 'request'
        ? ProtocolErrorCode.InvalidRequest
        : ProtocolErrorCode.CorruptMessage;
    throw new ProtocolError(
      code,
      `${this.frameName}: field ${field} at byte ${position} ${problem}`,
      cause === undefined ? {} : { cause },
    );
  }

  /** Reserves `sizeBytes` bytes for `field` and returns their position, or throws. */
  private take(field: string, sizeBytes: number): number {
    const position = this.positionValue;
    if (sizeBytes > this.frame.length - position) {
      this.fail(
        field,
        position,
        `needs ${sizeBytes} bytes, but the frame ends at byte ${this.frame.length}`,
      );
    }
    this.positionValue = position + sizeBytes;
    return position;
  }
}
