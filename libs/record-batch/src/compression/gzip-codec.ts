import { gunzipSync, gzipSync } from 'node:zlib';
import type { CompressionCodec } from '../compression-codec';
import { CompressionType } from '../record-batch-layout';

/**
 * Kafka's gzip: a plain gzip stream (RFC 1952) of the records section, at zlib's default level
 * like Kafka's compression.gzip.level default. Synchronous, because a batch is at most a few
 * MiB and the producer compresses one batch at a time.
 */
export const gzipCompressionCodec: CompressionCodec = {
  type: CompressionType.Gzip,
  name: 'gzip',
  compress: (records) => gzipSync(records),
  decompress: (compressed, uncompressedBytesMax) =>
    gunzipSync(compressed, { maxOutputLength: uncompressedBytesMax }),
};
