// Proves the encoder writes Kafka's bytes: a two-record batch compared with bytes derived by
// hand field by field below (the same bytes KafkaJS 2.2.4's RecordBatch v0 encoder produces for
// these records), a null header value as Kafka writes it, gzip applied to exactly the records
// section, and typed errors for input Kafka's MemoryRecordsBuilder also refuses.
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import { crc32cJavaScript } from './crc32c';
import { encodeRecordBatch } from './record-batch-encoder';
import { CompressionType, recordBatchHeaderSizeBytes } from './record-batch-layout';

const timestampMs = 1_700_000_000_000n; // 0x0000018BCFE56800

describe('encodeRecordBatch', () => {
  it('writes the same bytes as Kafka for a small batch', () => {
    // prettier-ignore
    const records = Buffer.from([
      0x12,             // record 0: length 9 (zigzag 18)
      0x00,             // attributes
      0x00,             // timestampDelta 0
      0x00,             // offsetDelta 0
      0x02, 0x6b,       // key length 1, "k"
      0x04, 0x68, 0x69, // value length 2, "hi"
      0x00,             // no headers
      0x18,             // record 1: length 12 (zigzag 24)
      0x00,             // attributes
      0xd8, 0x04,       // timestampDelta 300 (zigzag 600 = 0b100_1011000)
      0x02,             // offsetDelta 1
      0x01,             // key null (-1)
      0x02, 0x76,       // value length 1, "v"
      0x02,             // 1 header
      0x02, 0x68,       // header key length 1, "h"
      0x02, 0x78,       // header value length 1, "x"
    ]);
    // prettier-ignore
    const afterCrc = Buffer.from([
      0x00, 0x00,                                     // attributes: none, CreateTime
      0x00, 0x00, 0x00, 0x01,                         // lastOffsetDelta 1
      0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // baseTimestamp 1_700_000_000_000
      0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x69, 0x2c, // maxTimestamp, 300 later
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // producerId -1
      0xff, 0xff,                                     // producerEpoch -1
      0xff, 0xff, 0xff, 0xff,                         // baseSequence -1
      0x00, 0x00, 0x00, 0x02,                         // recordCount 2
    ]);
    // CRC-32C of afterCrc + records, computed outside this code base (a bitwise CRC-32C).
    const expectedCrc = 0x94084c7d;
    expect(crc32cJavaScript(Buffer.concat([afterCrc, records]))).toBe(expectedCrc);
    // prettier-ignore
    const beforeCrc = Buffer.from([
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // baseOffset 0
      0x00, 0x00, 0x00, 0x48,                         // batchLength 72 = 84 - 12
      0xff, 0xff, 0xff, 0xff,                         // partitionLeaderEpoch -1
      0x02,                                           // magic
      0x94, 0x08, 0x4c, 0x7d,                         // crc
    ]);
    const expected = Buffer.concat([beforeCrc, afterCrc, records]);
    expect(expected.length).toBe(84);

    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      records: [
        { key: Buffer.from('k'), value: Buffer.from('hi'), headers: [], timestampMs },
        {
          key: null,
          value: Buffer.from('v'),
          headers: [{ key: 'h', value: Buffer.from('x') }],
          timestampMs: timestampMs + 300n,
        },
      ],
    });

    expect(encoded.toString('hex')).toBe(expected.toString('hex'));
  });

  it('writes a null header value and a null value as length -1', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: null, headers: [{ key: 'é', value: null }], timestampMs }],
    });
    const record = encoded.subarray(recordBatchHeaderSizeBytes);
    // length 10; attributes; deltas 0, 0; key -1; value -1; 1 header; key "é" (2 bytes); value -1.
    expect(record.toString('hex')).toBe('1400000001010204c3a901');
  });

  it('writes the producer fields, the flags and the log append time into the header', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 5n,
      partitionLeaderEpoch: 7,
      producerId: 1234n,
      producerEpoch: 3,
      baseSequence: 42,
      isTransactional: true,
      logAppendTimeMs: timestampMs + 1n,
      records: [
        { key: null, value: Buffer.from('a'), timestampMs: timestampMs + 10n },
        { key: null, value: Buffer.from('b'), timestampMs: timestampMs, offsetDelta: 3 },
      ],
    });
    expect(encoded.readBigInt64BE(0)).toBe(5n);
    expect(encoded.readInt32BE(12)).toBe(7);
    expect(encoded.readInt16BE(21)).toBe(0x08 | 0x10);
    expect(encoded.readInt32BE(23)).toBe(3);
    expect(encoded.readBigInt64BE(27)).toBe(timestampMs + 10n);
    expect(encoded.readBigInt64BE(35)).toBe(timestampMs + 1n);
    expect(encoded.readBigInt64BE(43)).toBe(1234n);
    expect(encoded.readInt16BE(51)).toBe(3);
    expect(encoded.readInt32BE(53)).toBe(42);
    expect(encoded.readInt32BE(57)).toBe(2);
    expect(encoded.readUInt32BE(17)).toBe(crc32cJavaScript(encoded, 21));
  });

  it('gzips exactly the records section and sets codec 1 in the attributes', () => {
    const records = Array.from({ length: 50 }, (_, index) => ({
      key: Buffer.from(`key-${index}`),
      value: Buffer.alloc(100, index),
      headers: [{ key: 'trace', value: Buffer.from('abc') }],
      timestampMs: timestampMs + BigInt(index),
    }));
    const plain = encodeRecordBatch({ baseOffset: 0n, records });
    const gzipped = encodeRecordBatch({
      baseOffset: 0n,
      records,
      compressionType: CompressionType.Gzip,
    });
    expect(gzipped.length).toBeLessThan(plain.length);
    expect(gzipped.readInt16BE(21)).toBe(1);
    expect(gzipped.readInt32BE(8)).toBe(gzipped.length - 12);
    expect(gunzipSync(gzipped.subarray(61))).toEqual(plain.subarray(61));
    expect(gzipped.subarray(23, 61)).toEqual(plain.subarray(23, 61));
    expect(gzipped.readUInt32BE(17)).toBe(crc32cJavaScript(gzipped, 21));
  });

  it.each([
    ['no records', { records: [] }, 'INVALID_RECORD', /at least one record/],
    [
      'a timestamp below -1',
      { records: [{ key: null, value: null, timestampMs: -2n }] },
      'INVALID_RECORD',
      /record 0 has timestamp -2/,
    ],
    [
      'offset deltas out of order',
      {
        records: [
          { key: null, value: null, timestampMs, offsetDelta: 2 },
          { key: null, value: null, timestampMs, offsetDelta: 2 },
        ],
      },
      'INVALID_RECORD',
      /record 1 has offsetDelta 2 after 2/,
    ],
    [
      'a compression id Kafka does not define',
      {
        records: [{ key: null, value: null, timestampMs }],
        compressionType: 5 as CompressionType,
      },
      'UNSUPPORTED_COMPRESSION_TYPE',
      /compression type id 5 is unknown/,
    ],
  ])('refuses %s', (_name, input, code, message) => {
    try {
      encodeRecordBatch({ baseOffset: 0n, ...input });
    } catch (error) {
      expect(error).toBeInstanceOf(RecordBatchError);
      expect((error as RecordBatchError).code).toBe(code);
      expect((error as RecordBatchError).message).toMatch(message);
      return;
    }
    expect.fail('expected a RecordBatchError');
  });
});
