import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { gzipCompressionCodec } from './gzip-compression-codec';
import { CompressionType, isKnownCompressionType } from './record-batch-layout';

/**
 * Compression of a batch's records section, keyed by the id in attribute bits 0-2. The header
 * is never compressed. This lib implements `none` and `gzip` (node:zlib); the client SDK
 * registers snappy, lz4 and zstd with their Kafka framings, so that this lib, which the storage
 * nodes load too, carries no native compression dependency. The storage nodes never
 * need a codec on the hot path: they neither decompress nor recompress.
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
]);

/**
 * Makes a codec available to every encoder and decoder in the process, replacing any earlier
 * one for the same type. `none` is part of the format and cannot be replaced.
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
