// Cuts the byte stream of a data-port connection into frames (sizeBytes u32, then that many
// bytes; data-port-layout.ts). A frame's buffer is allocated once, when its sizeBytes has arrived
// and passed the bound, and filled as chunks come, so a large response costs one copy and a
// lying sizeBytes costs nothing. The owner decides when to take frames out: bytes it has not
// taken stay here as the chunks they came in, which is how the server stops reading a connection
// with enough requests queued (it pauses the socket and leaves the rest of the last chunk here).
import { ProtocolError, ProtocolErrorCode } from '../errors';
import { frameSizeFieldBytes } from './data-port-layout';
import type { FrameDirection } from './frame-reader';

export interface FrameSplitterOptions {
  readonly direction: FrameDirection;
  /**
   * The largest frame, sizeBytes included, accepted next. A function because a client's bound
   * depends on the request whose response comes next.
   */
  readonly frameBytesMax: () => number;
  /** The smallest sizeBytes of a well-formed frame: its fixed header after sizeBytes. */
  readonly headerBytesMin: number;
}

export class FrameSplitter {
  private readonly chunks: Buffer[] = [];
  /** Bytes of chunks[0] already copied into a frame. */
  private firstChunkOffset = 0;
  private chunkBytes = 0;
  private frame: Buffer | undefined;
  private frameFilledBytes = 0;

  constructor(private readonly options: FrameSplitterOptions) {}

  /** Bytes held here: received and not yet handed out as a complete frame. */
  get bufferedBytes(): number {
    return this.chunkBytes + this.frameFilledBytes;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
  }

  /**
   * The next complete frame (sizeBytes included), or undefined until more bytes arrive. Throws a
   * ProtocolError for a sizeBytes over the bound or under the header; the stream cannot be
   * followed after that, so the owner must close the connection.
   */
  next(): Buffer | undefined {
    if (this.frame === undefined) {
      if (this.chunkBytes < frameSizeFieldBytes) return undefined;
      this.frame = this.allocateFrame(this.readSizeBytes());
      this.frameFilledBytes = frameSizeFieldBytes;
    }
    this.fillFrame(this.frame);
    if (this.frameFilledBytes < this.frame.length) return undefined;
    const complete = this.frame;
    this.frame = undefined;
    this.frameFilledBytes = 0;
    return complete;
  }

  private allocateFrame(sizeBytes: number): Buffer {
    const frameBytesMax = this.options.frameBytesMax();
    const direction = this.options.direction;
    if (frameSizeFieldBytes + sizeBytes > frameBytesMax) {
      throw new ProtocolError(
        direction === 'request'
          ? ProtocolErrorCode.InvalidRequest
          : ProtocolErrorCode.MessageTooLarge,
        `A ${direction} frame of ${frameSizeFieldBytes + sizeBytes} bytes (sizeBytes ` +
          `${sizeBytes} at byte 0) is over the bound of ${frameBytesMax} bytes`,
      );
    }
    if (sizeBytes < this.options.headerBytesMin) {
      throw new ProtocolError(
        direction === 'request'
          ? ProtocolErrorCode.InvalidRequest
          : ProtocolErrorCode.CorruptMessage,
        `A ${direction} frame's sizeBytes at byte 0 is ${sizeBytes}, shorter than its ` +
          `${this.options.headerBytesMin}-byte header`,
      );
    }
    const frame = Buffer.allocUnsafe(frameSizeFieldBytes + sizeBytes);
    frame.writeUInt32BE(sizeBytes, 0);
    return frame;
  }

  /** Consumes the 4 bytes of sizeBytes, which may span chunks. */
  private readSizeBytes(): number {
    const sizeField = Buffer.allocUnsafe(frameSizeFieldBytes);
    let copiedBytes = 0;
    while (copiedBytes < frameSizeFieldBytes) {
      copiedBytes += this.copyFromChunks(sizeField, copiedBytes, frameSizeFieldBytes - copiedBytes);
    }
    return sizeField.readUInt32BE(0);
  }

  private fillFrame(frame: Buffer): void {
    while (this.frameFilledBytes < frame.length && this.chunkBytes > 0) {
      this.frameFilledBytes += this.copyFromChunks(
        frame,
        this.frameFilledBytes,
        frame.length - this.frameFilledBytes,
      );
    }
  }

  /** Copies up to `sizeBytes` from the first chunk into `target`; returns the bytes copied. */
  private copyFromChunks(target: Buffer, targetPosition: number, sizeBytes: number): number {
    const chunk = this.chunks[0];
    if (chunk === undefined) return 0;
    const end = Math.min(chunk.length, this.firstChunkOffset + sizeBytes);
    const copiedBytes = chunk.copy(target, targetPosition, this.firstChunkOffset, end);
    this.firstChunkOffset += copiedBytes;
    this.chunkBytes -= copiedBytes;
    if (this.firstChunkOffset === chunk.length) {
      this.chunks.shift();
      this.firstChunkOffset = 0;
    }
    return copiedBytes;
  }
}
