import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { gzipCompressionCodec } from './compression/gzip-codec';
import { createLz4Codec } from './compression/lz4-codec';
import { createSnappyCodec } from './compression/snappy-codec';
import { createZstdCodec } from './compression/zstd-codec';
import { CompressionType, isKnownCompressionType } from './record-batch-layout';

/**
 * Compression of a batch's records section, keyed by the id in attribute bits 0-2. The header
 * is never compressed. Every process that loads this lib (the SDK, the storage nodes, the
 * gateway) has all five of Kafka's codecs: none, gzip (node:zlib), and snappy, lz4 and zstd with
 * their Kafka framings (compression/). The native packages behind the last three load on first
 * use (compression/lazy-package.ts), so a process that never meets, say, zstd runs even where its
 * binary cannot load. The storage nodes inflate batches only off the fetch path: to check that
 * every record of a compacted topic has a key, and in the log cleaner, which recompresses a batch
 * that loses records with that batch's own codec.
 */
export interface CompressionCodec {
  readonly type: CompressionType;
  /** Kafka's compression.type name: none, gzip, snappy, lz4, zstd. */
  readonly name: string;
  compress(records: Buffer): Buffer;
  /**
   * Inflates a records section. Must refuse to produce more than `uncompressedBytesMax` bytes
   * (a small batch can inflate to gigabytes), and may throw anything on bad input: the caller
   * reports it as an invalid record with the error as its cause.
   */
  decompress(compressed: Buffer, uncompressedBytesMax: number): Buffer;
}

export const noCompressionCodec: CompressionCodec = {
  type: CompressionType.None,
  name: 'none',
  compress: (records) => records,
  decompress: (records) => records,
};

const codecsByType = new Map<number, CompressionCodec>([
  [CompressionType.None, noCompressionCodec],
  [CompressionType.Gzip, gzipCompressionCodec],
  [CompressionType.Snappy, createSnappyCodec()],
  [CompressionType.Lz4, createLz4Codec()],
  [CompressionType.Zstd, createZstdCodec()],
]);

/**
 * Makes a codec available to every encoder and decoder in the process, replacing the built-in
 * or earlier one for the same type (tests use it to count or fail a codec's calls). `none` is part of the format and cannot be replaced.
 */
export function registerCompressionCodec(codec: CompressionCodec): void {
  if (!isKnownCompressionType(codec.type) || codec.type === CompressionType.None) {
    throw new RangeError(`cannot register a compression codec for type id ${codec.type}`);
  }
  codecsByType.set(codec.type, codec);
}

/** The codec for a compression id, or UNSUPPORTED_COMPRESSION_TYPE if there is none here. */
export function compressionCodecFor(type: number): CompressionCodec {
  const codec = codecsByType.get(type);
  if (codec === undefined) {
    const known = isKnownCompressionType(type);
    throw new RecordBatchError(
      RecordBatchErrorCode.UnsupportedCompressionType,
      known
        ? `compression type ${compressionTypeName(type)} (id ${type}) has no codec registered ` +
            'in this process'
        : `compression type id ${type} is unknown`,
    );
  }
  return codec;
}

function compressionTypeName(type: CompressionType): string {
  const names: Record<CompressionType, string> = {
    0: 'none',
    1: 'gzip',
    2: 'snappy',
    3: 'lz4',
    4: 'zstd',
  };
  return names[type];
}
