import type * as SnappyPackage from 'snappy';
import type { CompressionCodec } from '../compression-codec';
import { CompressionType } from '../record-batch-layout';
import { lazyPackage, type PackageLoader } from './lazy-package';

/**
 * Kafka's snappy, which is not the plain snappy block format nor Google's framing format: Kafka
 * wraps the records section in snappy-java's `SnappyOutputStream` (the "xerial" framing) for
 * every message format, RecordBatch v2 included. The layout, all integers big-endian:
 *
 *   position  size  field
 *   0         8     magic: 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
 *   8         4     version: 1
 *   12        4     minimum compatible version: 1
 *   16        …     chunks: [int32 compressed size][raw snappy block of at most 32 KiB input]
 *
 * The raw blocks come from the `snappy` package (napi-rs, prebuilt binaries). On input,
 * snappy-java's SnappyInputStream also accepts one raw snappy block without the header (what
 * very old clients wrote), and so does this codec; a second header after a chunk (streams that
 * were concatenated) is skipped, as newer snappy-java does.
 */

const xerialMagic = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const xerialVersion = 1;
const xerialMinimumCompatibleVersion = 1;
const xerialHeaderSizeBytes = 16;
/** snappy-java's SnappyOutputStream.DEFAULT_BLOCK_SIZE, which Kafka's SnappyOutputStream uses. */
export const xerialBlockSizeBytes = 32 * 1024;
const chunkSizeFieldBytes = 4;

const xerialHeader = (() => {
  const header = Buffer.alloc(xerialHeaderSizeBytes);
  xerialMagic.copy(header, 0);
  header.writeInt32BE(xerialVersion, 8);
  header.writeInt32BE(xerialMinimumCompatibleVersion, 12);
  return header;
})();

type Snappy = typeof SnappyPackage;

export function createSnappyCodec(
  loadSnappy: PackageLoader<Snappy> = lazyPackage<Snappy>('snappy', 'snappy'),
): CompressionCodec {
  return {
    type: CompressionType.Snappy,
    name: 'snappy',
    compress: (records) => compressXerial(loadSnappy(), records),
    decompress: (compressed, uncompressedBytesMax) =>
      decompressXerial(loadSnappy(), compressed, uncompressedBytesMax),
  };
}

function compressXerial(snappy: Snappy, records: Buffer): Buffer {
  const parts: Buffer[] = [xerialHeader];
  for (let start = 0; start < records.length; start += xerialBlockSizeBytes) {
    const block = snappy.compressSync(records.subarray(start, start + xerialBlockSizeBytes));
    const size = Buffer.allocUnsafe(chunkSizeFieldBytes);
    size.writeInt32BE(block.length, 0);
    parts.push(size, block);
  }
  return Buffer.concat(parts);
}

function hasXerialMagic(buffer: Buffer, position: number): boolean {
  return (
    buffer.length - position >= xerialHeaderSizeBytes &&
    buffer.compare(xerialMagic, 0, xerialMagic.length, position, position + xerialMagic.length) ===
      0
  );
}

function decompressXerial(
  snappy: Snappy,
  compressed: Buffer,
  uncompressedBytesMax: number,
): Buffer {
  if (!hasXerialMagic(compressed, 0)) {
    return uncompressBlock(snappy, compressed, uncompressedBytesMax);
  }
  const parts: Buffer[] = [];
  let uncompressedBytes = 0;
  let position = 0;
  while (position < compressed.length) {
    if (hasXerialMagic(compressed, position)) {
      const compatibleVersion = compressed.readInt32BE(position + 12);
      if (compatibleVersion > xerialVersion) {
        throw new Error(`xerial snappy stream needs version ${compatibleVersion}; 1 is known`);
      }
      position += xerialHeaderSizeBytes;
      continue;
    }
    if (compressed.length - position < chunkSizeFieldBytes) {
      throw new Error(`xerial snappy chunk size at byte ${position} is cut off`);
    }
    const chunkSizeBytes = compressed.readInt32BE(position);
    const chunkStart = position + chunkSizeFieldBytes;
    if (chunkSizeBytes < 0 || chunkStart + chunkSizeBytes > compressed.length) {
      throw new Error(`xerial snappy chunk at byte ${position} overruns the input`);
    }
    const chunk = compressed.subarray(chunkStart, chunkStart + chunkSizeBytes);
    const block = uncompressBlock(snappy, chunk, uncompressedBytesMax - uncompressedBytes);
    uncompressedBytes += block.length;
    parts.push(block);
    position = chunkStart + chunkSizeBytes;
  }
  return Buffer.concat(parts, uncompressedBytes);
}

/** One raw snappy block, refused before inflating if its declared length passes the bound. */
function uncompressBlock(snappy: Snappy, block: Buffer, uncompressedBytesMax: number): Buffer {
  const declaredBytes = readSnappyUncompressedLength(block);
  if (declaredBytes > uncompressedBytesMax) {
    throw new Error(
      `a snappy block would inflate to ${declaredBytes} bytes, beyond the ${uncompressedBytesMax} ` +
        'bytes left of the bound',
    );
  }
  const output = snappy.uncompressSync(block, { asBuffer: true });
  if (!Buffer.isBuffer(output) || output.length !== declaredBytes) {
    throw new Error('a snappy block inflated to a size other than the one it declares');
  }
  return output;
}

/** The preamble of a raw snappy block: its uncompressed length as a little-endian varint. */
function readSnappyUncompressedLength(block: Buffer): number {
  let length = 0;
  for (let index = 0; index < 5; index++) {
    if (index >= block.length) break;
    const byte = block[index]!;
    length += (byte & 0x7f) * 2 ** (7 * index);
    if ((byte & 0x80) === 0) return length;
  }
  throw new Error('a snappy block has no valid length preamble');
}
