import type * as Lz4Package from 'lz4-napi';
import type { CompressionCodec } from '../compression-codec';
import { CompressionType } from '../record-batch-layout';
import { framesInflationBoundBytes, needBytes } from './frame-walk';
import { lazyPackage, type PackageLoader } from './lazy-package';

/**
 * Kafka's lz4: the LZ4 *frame* format (magic 0x184D2204), as Kafka's Lz4BlockOutputStream writes
 * it for RecordBatch v2: FLG version 01 with independent blocks, no block or content checksum, no
 * content size. The `lz4-napi` package (napi-rs over lz4_flex, prebuilt binaries) writes exactly
 * that descriptor; it picks the block size from the input (64 KiB for inputs up to 64 KiB, as
 * Kafka always does, larger blocks for larger inputs), and Kafka's reader accepts every block
 * size of the format (BD 4-7).
 *
 * lz4-napi inflates a whole frame at once without a limit, so before inflating, this codec walks
 * the frame's block headers (a few bytes each) and refuses a frame that could inflate beyond the
 * bound: a stored block counts its size, a compressed one the frame's block maximum. The walk
 * also handles what other writers add: content size, dictionary id, block and content checksums,
 * skippable frames, and several frames in a row.
 *
 *   frame:  magic u32le | FLG | BD | [content size u64le] | [dictionary id u32le] | HC
 *           { block size u32le (bit 31: stored) | data | [block checksum u32le] }*
 *           end mark u32le 0 | [content checksum u32le]
 */

const lz4FrameMagic = 0x184d2204;
const storedBlockFlag = 0x80000000;

type Lz4 = typeof Lz4Package;

export function createLz4Codec(
  loadLz4: PackageLoader<Lz4> = lazyPackage<Lz4>('lz4', 'lz4-napi'),
): CompressionCodec {
  return {
    type: CompressionType.Lz4,
    name: 'lz4',
    compress: (records) => loadLz4().compressFrameSync(records),
    decompress: (compressed, uncompressedBytesMax) => {
      const lz4 = loadLz4();
      const boundBytes = lz4FrameInflationBoundBytes(compressed);
      if (boundBytes > uncompressedBytesMax) {
        throw new Error(
          `an lz4 frame could inflate to ${boundBytes} bytes, beyond the bound of ` +
            `${uncompressedBytesMax}`,
        );
      }
      return lz4.decompressFrameSync(compressed);
    },
  };
}

function need(buffer: Buffer, position: number, sizeBytes: number, what: string): void {
  needBytes('lz4', buffer, position, sizeBytes, what);
}

/** The most bytes `frames` can inflate to, from block headers alone; throws on a bad frame. */
export function lz4FrameInflationBoundBytes(frames: Buffer): number {
  return framesInflationBoundBytes('lz4', lz4FrameMagic, frames, walkLz4Frame);
}

/** One frame after its magic: the descriptor, then blocks up to the end mark. */
function walkLz4Frame(buffer: Buffer, start: number): { boundBytes: number; end: number } {
  need(buffer, start, 3, 'the frame descriptor');
  const flags = buffer[start]!;
  const blockDescriptor = buffer[start + 1]!;
  if (flags >> 6 !== 1) throw new Error(`lz4 frame: version ${flags >> 6} is not 1`);
  const hasBlockChecksums = (flags & 0x10) !== 0;
  const hasContentSize = (flags & 0x08) !== 0;
  const hasContentChecksum = (flags & 0x04) !== 0;
  const hasDictionaryId = (flags & 0x01) !== 0;
  const blockSizeCode = (blockDescriptor >> 4) & 0x07;
  if (blockSizeCode < 4) throw new Error(`lz4 frame: block size code ${blockSizeCode} is invalid`);
  const blockMaxBytes = 1 << (2 * blockSizeCode + 8);
  let position = start + 2 + (hasContentSize ? 8 : 0) + (hasDictionaryId ? 4 : 0) + 1;
  let boundBytes = 0;
  for (;;) {
    need(buffer, position, 4, 'a block size');
    const field = buffer.readUInt32LE(position);
    position += 4;
    if (field === 0) break;
    const sizeBytes = (field & ~storedBlockFlag) >>> 0;
    if (sizeBytes > blockMaxBytes) {
      throw new Error(
        `lz4 frame: a block of ${sizeBytes} bytes is above the maximum ${blockMaxBytes}`,
      );
    }
    const isStored = (field & storedBlockFlag) !== 0;
    boundBytes += isStored ? sizeBytes : blockMaxBytes;
    position += sizeBytes + (hasBlockChecksums ? 4 : 0);
  }
  position += hasContentChecksum ? 4 : 0;
  need(buffer, position, 0, 'the frame end');
  return { boundBytes, end: position };
}
