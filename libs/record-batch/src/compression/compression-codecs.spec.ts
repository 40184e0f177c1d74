// Proves every compression codec round-trips a record batch through the record-batch lib's encoder
// and decoder (small batches and ones spanning many blocks), writes Kafka's framings (xerial
// snappy, the LZ4 frame descriptor Kafka writes), decodes batches that Kafka's own Java client
// compressed, refuses input that would inflate past the bound before inflating it, and that a
// codec whose package cannot load fails when used, with the package named, not when imported.
import {
  CompressionType,
  compressionCodecFor,
  decodeRecordBatch,
  encodeRecordBatch,
  RecordBatchError,
  type RecordInput,
} from '../index';
import { compressSync as snappyCompressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import {
  kafkaCompressedBatchesHex,
  kafkaFixtureRecord,
  kafkaRecordCount,
} from '../testing/kafka-compressed-batches';
import { lazyPackage } from './lazy-package';
import { createLz4Codec, lz4FrameInflationBoundBytes } from './lz4-codec';
import { createSnappyCodec, xerialBlockSizeBytes } from './snappy-codec';
import { createZstdCodec, zstdInflationBoundBytes } from './zstd-codec';

const codecs = [
  ['none', CompressionType.None],
  ['gzip', CompressionType.Gzip],
  ['snappy', CompressionType.Snappy],
  ['lz4', CompressionType.Lz4],
  ['zstd', CompressionType.Zstd],
] as const;

function records(count: number, valueBytes: number): RecordInput[] {
  return Array.from({ length: count }, (_, index) => ({
    key: index % 7 === 0 ? null : Buffer.from(`key-${index}`),
    value: Buffer.from(`value ${index} `.repeat(Math.ceil(valueBytes / 8)).slice(0, valueBytes)),
    headers: [{ key: 'index', value: Buffer.from(String(index)) }],
    timestampMs: 1_700_000_000_000n + BigInt(index),
  }));
}

describe('compression codecs', () => {
  it.each(codecs)(
    'round-trips a small and a many-block batch with %s',
    (_name, compressionType) => {
      for (const input of [records(3, 20), records(2_000, 150)]) {
        const encoded = encodeRecordBatch({ baseOffset: 42n, records: input, compressionType });
        const decoded = decodeRecordBatch(encoded);
        expect(decoded.header.compressionType).toBe(compressionType);
        expect(decoded.records.map((record) => record.offset)).toEqual(
          input.map((_, index) => 42n + BigInt(index)),
        );
        // Joined, because comparing thousands of Buffers one by one is slow in expect.
        const text = (values: (Buffer | null)[]): string =>
          values.map((value) => value?.toString() ?? '<null>').join('|');
        expect(text(decoded.records.map((record) => record.value))).toBe(
          text(input.map((record) => record.value)),
        );
        expect(text(decoded.records.map((record) => record.key))).toBe(
          text(input.map((record) => record.key)),
        );
        expect(decoded.records[1]!.headers).toEqual(input[1]!.headers);
      }
    },
  );

  it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)(
    'decodes a batch that Kafka compressed with %s',
    (name) => {
      const decoded = decodeRecordBatch(Buffer.from(kafkaCompressedBatchesHex[name], 'hex'));
      expect(decoded.records).toHaveLength(kafkaRecordCount);
      decoded.records.forEach((record, index) => {
        const expected = kafkaFixtureRecord(index);
        expect(record.offset).toBe(BigInt(index));
        expect(record.timestampMs).toBe(1_700_000_000_000n + BigInt(index));
        expect(record.key?.toString()).toBe(expected.key);
        expect(record.value?.toString()).toBe(expected.value);
        expect(record.headers).toEqual([{ key: 'trace', value: Buffer.from(expected.trace) }]);
      });
    },
  );

  it('writes snappy in the xerial framing Kafka uses, in 32 KiB blocks', () => {
    const input = Buffer.alloc(xerialBlockSizeBytes * 2 + 10, 'spool ');
    const compressed = compressionCodecFor(CompressionType.Snappy).compress(input);
    expect(compressed.subarray(0, 16).toString('hex')).toBe(
      '82534e415050590000000001' + '00000001',
    );
    let position = 16;
    let chunks = 0;
    while (position < compressed.length) {
      position += 4 + compressed.readInt32BE(position);
      chunks += 1;
    }
    expect(position).toBe(compressed.length);
    expect(chunks).toBe(3);
  });

  it('reads a raw snappy block without the xerial header, as snappy-java does', () => {
    const raw = snappyCompressSync(Buffer.from('legacy'));
    expect(createSnappyCodec().decompress(raw, 100).toString()).toBe('legacy');
  });

  it("writes Kafka's LZ4 frame descriptor: independent blocks, no checksums, 64 KiB blocks", () => {
    const compressed = compressionCodecFor(CompressionType.Lz4).compress(
      Buffer.from('x'.repeat(1000)),
    );
    // Magic 0x184D2204 (LE), FLG 0x60, BD 0x40, HC 0x82: byte for byte Kafka's header.
    expect(compressed.subarray(0, 7).toString('hex')).toBe('04224d18604082');
  });

  it('refuses snappy, lz4 and zstd input that would inflate past the bound, before inflating', () => {
    const input = Buffer.alloc(300_000, 0);
    for (const type of [CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd]) {
      const codec = compressionCodecFor(type);
      const compressed = codec.compress(input);
      expect(compressed.length).toBeLessThan(20_000);
      expect(codec.decompress(compressed, 300_000 + 128 * 1024 * 32).equals(input)).toBe(true);
      expect(() => codec.decompress(compressed, 100_000)).toThrow(/beyond/);
    }
    expect(
      lz4FrameInflationBoundBytes(compressionCodecFor(CompressionType.Lz4).compress(input)),
    ).toBeGreaterThanOrEqual(300_000);
    expect(
      zstdInflationBoundBytes(compressionCodecFor(CompressionType.Zstd).compress(input)),
    ).toBeGreaterThanOrEqual(300_000);
  });

  it('rejects truncated frames with an error that names the format', () => {
    const input = Buffer.from('truncate me '.repeat(1000));
    for (const type of [CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd]) {
      const codec = compressionCodecFor(type);
      const compressed = codec.compress(input);
      expect(() =>
        codec.decompress(compressed.subarray(0, compressed.length - 5), 1 << 20),
      ).toThrow();
    }
  });

  it('fails on use, not on creation, when a codec package cannot load, naming it', () => {
    const missing = lazyPackage<never>('zstd', '@spool/no-such-zstd-package');
    const codecsWithoutPackages = [
      createZstdCodec(missing),
      createLz4Codec(lazyPackage<never>('lz4', '@spool/no-such-lz4-package')),
      createSnappyCodec(lazyPackage<never>('snappy', '@spool/no-such-snappy-package')),
    ];
    for (const codec of codecsWithoutPackages) {
      const error = (() => {
        try {
          codec.compress(Buffer.from('x'));
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(RecordBatchError);
      expect((error as RecordBatchError).code).toBe('UNSUPPORTED_COMPRESSION_TYPE');
      expect((error as RecordBatchError).message).toMatch(/needs the package @spool\/no-such-/);
    }
  });
});
