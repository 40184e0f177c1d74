import { registerCompressionCodec } from '@spool/record-batch';
import { createLz4Codec } from './lz4-codec';
import { createSnappyCodec } from './snappy-codec';
import { createZstdCodec } from './zstd-codec';

/**
 * The codecs the SDK adds to the record-batch lib's none and gzip, registered once per process when
 * the SDK is imported. Each loads its package on first use (lazy-package.ts), so registering
 * never fails; a package that cannot load fails the batch that needs it, with its reason.
 */
let registered = false;

export function registerClientCompressionCodecs(): void {
  if (registered) return;
  registered = true;
  registerCompressionCodec(createSnappyCodec());
  registerCompressionCodec(createLz4Codec());
  registerCompressionCodec(createZstdCodec());
}
