import type * as ZstdPackage from '@toondepauw/node-zstd';
import type { CompressionCodec } from '../compression-codec';
import { CompressionType } from '../record-batch-layout';
import { framesInflationBoundBytes, needBytes } from './frame-walk';
import { lazyPackage, type PackageLoader } from './lazy-package';

/**
 * Kafka's zstd: one standard zstd frame (RFC 8878) of the records section, at level 3, Kafka's
 * compression.zstd.level default. Kafka writes it with zstd-jni's streaming encoder, so its
 * frames carry no content size; `@toondepauw/node-zstd` (napi-rs over the zstd crate, prebuilt
 * binaries, synchronous calls) decodes both kinds with a streaming decoder.
 *
 * That decoder has no output limit, so before inflating, this codec walks the frame and block
 * headers (three bytes per block) and refuses input that could inflate beyond the bound: raw and
 * RLE blocks count their exact size, a compressed block the frame's block maximum (the smaller
 * of its window and 128 KiB), and a declared content size caps its frame.
 *
 *   frame:  magic u32le 0xFD2FB528 | descriptor | [window] | [dictionary id] | [content size]
 *           { block header u24le (bit 0 last, bits 1-2 type, bits 3-23 size) | data }+
 *           [checksum u32le]
 */

const zstdFrameMagic = 0xfd2fb528;
/** RFC 8878: no block inflates to more than 128 KiB. */
const blockSizeMaxBytes = 128 * 1024;
/** Kafka's ZstdCompression default level (compression.zstd.level). */
export const zstdLevelDefault = 3;

const BlockType = { Raw: 0, Rle: 1, Compressed: 2, Reserved: 3 } as const;

type Zstd = typeof ZstdPackage;

export function createZstdCodec(
  loadZstd: PackageLoader<Zstd> = lazyPackage<Zstd>('zstd', '@toondepauw/node-zstd'),
): CompressionCodec {
  let encoder: ZstdPackage.Encoder | undefined;
  let decoder: ZstdPackage.Decoder | undefined;
  return {
    type: CompressionType.Zstd,
    name: 'zstd',
    compress: (records) => {
      encoder ??= new (loadZstd().Encoder)(zstdLevelDefault);
      return encoder.encodeSync(records);
    },
    decompress: (compressed, uncompressedBytesMax) => {
      decoder ??= new (loadZstd().Decoder)();
      const boundBytes = zstdInflationBoundBytes(compressed);
      if (boundBytes > uncompressedBytesMax) {
        throw new Error(
          `zstd frames could inflate to ${boundBytes} bytes, beyond the bound of ` +
            `${uncompressedBytesMax}`,
        );
      }
      return decoder.decodeSync(compressed);
    },
  };
}

function need(buffer: Buffer, position: number, sizeBytes: number, what: string): void {
  needBytes('zstd', buffer, position, sizeBytes, what);
}

/** The most bytes `frames` can inflate to, from headers alone; throws on a malformed frame. */
export function zstdInflationBoundBytes(frames: Buffer): number {
  return framesInflationBoundBytes('zstd', zstdFrameMagic, frames, walkZstdFrame);
}

interface FrameHeader {
  readonly contentSizeBytes: number | undefined;
  readonly blockMaxBytes: number;
  readonly hasChecksum: boolean;
  readonly end: number;
}

/** RFC 8878 section 3.1.1.1: the frame header after the magic number. */
function readFrameHeader(buffer: Buffer, start: number): FrameHeader {
  need(buffer, start, 1, 'the frame header descriptor');
  const descriptor = buffer[start]!;
  const contentSizeFlag = descriptor >> 6;
  const isSingleSegment = (descriptor & 0x20) !== 0;
  if ((descriptor & 0x08) !== 0) throw new Error('zstd frame: a reserved header bit is set');
  const hasChecksum = (descriptor & 0x04) !== 0;
  const dictionaryIdBytes = [0, 1, 2, 4][descriptor & 0x03]!;
  let position = start + 1;
  let windowBytes = Number.POSITIVE_INFINITY;
  if (!isSingleSegment) {
    need(buffer, position, 1, 'the window descriptor');
    const window = buffer[position]!;
    const windowBase = 2 ** (10 + (window >> 3));
    windowBytes = windowBase + (windowBase / 8) * (window & 0x07);
    position += 1;
  }
  position += dictionaryIdBytes;
  const contentSizeFieldBytes =
    contentSizeFlag === 0 ? (isSingleSegment ? 1 : 0) : [0, 2, 4, 8][contentSizeFlag]!;
  need(buffer, position, contentSizeFieldBytes, 'the content size');
  let contentSizeBytes: number | undefined;
  if (contentSizeFieldBytes === 1) contentSizeBytes = buffer[position]!;
  if (contentSizeFieldBytes === 2) contentSizeBytes = buffer.readUInt16LE(position) + 256;
  if (contentSizeFieldBytes === 4) contentSizeBytes = buffer.readUInt32LE(position);
  if (contentSizeFieldBytes === 8) contentSizeBytes = Number(buffer.readBigUInt64LE(position));
  position += contentSizeFieldBytes;
  if (isSingleSegment) windowBytes = contentSizeBytes ?? 0;
  return {
    contentSizeBytes,
    blockMaxBytes: Math.min(windowBytes, blockSizeMaxBytes),
    hasChecksum,
    end: position,
  };
}

function walkZstdFrame(buffer: Buffer, start: number): { boundBytes: number; end: number } {
  const header = readFrameHeader(buffer, start);
  let position = header.end;
  let boundBytes = 0;
  for (;;) {
    need(buffer, position, 3, 'a block header');
    const blockHeader = buffer.readUIntLE(position, 3);
    const isLast = (blockHeader & 0x01) !== 0;
    const blockType = (blockHeader >> 1) & 0x03;
    const blockSizeBytes = blockHeader >>> 3;
    position += 3;
    if (blockType === BlockType.Reserved)
      throw new Error('zstd frame: a block has the reserved type');
    if (blockType === BlockType.Rle) {
      boundBytes += blockSizeBytes;
      position += 1;
    } else {
      if (blockSizeBytes > header.blockMaxBytes) {
        throw new Error(`zstd frame: a block of ${blockSizeBytes} bytes passes the block maximum`);
      }
      boundBytes += blockType === BlockType.Raw ? blockSizeBytes : header.blockMaxBytes;
      position += blockSizeBytes;
    }
    if (isLast) break;
  }
  position += header.hasChecksum ? 4 : 0;
  need(buffer, position, 0, 'the frame end');
  const frameBoundBytes =
    header.contentSizeBytes === undefined
      ? boundBytes
      : Math.min(boundBytes, header.contentSizeBytes);
  return { boundBytes: frameBoundBytes, end: position };
}
