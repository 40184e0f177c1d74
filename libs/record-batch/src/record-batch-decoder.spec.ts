// Proves encode → decode is the identity with fast-check over random batches: null and empty
// keys and values, Unicode header keys, null header values, timestamps from -1 to far future,
// offset gaps as compaction leaves them, producer fields, flags, LogAppendTime, and every
// codec (none, gzip, and a codec registered at run time as the client SDK registers lz4);
// deep validation accepts every such batch. Also proves the decoder's typed errors.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import type { CompressionCodec } from './compression-codec';
import { compressionCodecFor, registerCompressionCodec } from './compression-codec';
import type { RecordInput } from './record';
import { decodeRecordBatch, decodeRecordBatches, openRecordBatch } from './record-batch-decoder';
import type { RecordBatchInput } from './record-batch-encoder';
import { encodeRecordBatch } from './record-batch-encoder';
import { CompressionType, crcPosition, TimestampType } from './record-batch-layout';
import { validateRecordBatch } from './record-batch-validator';
import type { RecordFields } from './record-reader';

/** Stands in for the SDK's lz4: any reversible transformation proves the plumbing. */
const xorLz4Codec: CompressionCodec = {
  type: CompressionType.Lz4,
  name: 'lz4',
  compress: (records) => Buffer.from(records.map((byte) => byte ^ 0x5a)),
  decompress: (compressed) => Buffer.from(compressed.map((byte) => byte ^ 0x5a)),
};
registerCompressionCodec(xorLz4Codec);

const bytesOrNull = fc.option(
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
  { nil: null, freq: 4 },
);
const timestampMs = fc.oneof(
  fc.constant(-1n),
  fc.bigInt({ min: 1_600_000_000_000n, max: 1_800_000_000_000n }),
  fc.bigInt({ min: 0n, max: 2n ** 62n }),
);
const recordArbitrary = fc.record({
  key: bytesOrNull,
  value: bytesOrNull,
  headers: fc.array(
    fc.record({ key: fc.string({ unit: 'binary', maxLength: 8 }), value: bytesOrNull }),
    {
      maxLength: 3,
    },
  ),
  timestampMs,
});
const batchArbitrary = fc
  .record({
    records: fc.array(recordArbitrary, { minLength: 1, maxLength: 25 }),
    offsetGaps: fc.option(fc.array(fc.nat(4), { minLength: 25, maxLength: 25 }), {
      nil: undefined,
    }),
    baseOffset: fc.bigInt({ min: 0n, max: 2n ** 62n }),
    partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
    producerId: fc.bigInt({ min: -1n, max: 2n ** 40n }),
    producerEpoch: fc.integer({ min: -1, max: 32_767 }),
    baseSequence: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
    compressionType: fc.constantFrom(
      CompressionType.None,
      CompressionType.Gzip,
      CompressionType.Lz4,
    ),
    isTransactional: fc.boolean(),
    isControl: fc.boolean(),
    logAppendTimeMs: fc.option(fc.bigInt({ min: 0n, max: 2n ** 50n }), { nil: undefined }),
  })
  .map(({ records, offsetGaps, ...fields }): RecordBatchInput => {
    let offsetDelta = -1;
    const withOffsets: RecordInput[] = records.map((record, index) => {
      offsetDelta += 1 + (offsetGaps?.[index] ?? 0);
      return offsetGaps === undefined ? record : { ...record, offsetDelta };
    });
    return { ...fields, records: withOffsets };
  });

function expectDecodedToMatch(input: RecordBatchInput, buffer: Buffer, position: number): void {
  const { header, records } = decodeRecordBatch(buffer, position);
  expect(header.baseOffset).toBe(input.baseOffset);
  expect(header.partitionLeaderEpoch).toBe(input.partitionLeaderEpoch);
  expect(header.producerId).toBe(input.producerId);
  expect(header.producerEpoch).toBe(input.producerEpoch);
  expect(header.baseSequence).toBe(input.baseSequence);
  expect(header.compressionType).toBe(input.compressionType);
  expect(header.isTransactional).toBe(input.isTransactional);
  expect(header.isControl).toBe(input.isControl);
  expect(header.timestampType).toBe(
    input.logAppendTimeMs === undefined ? TimestampType.CreateTime : TimestampType.LogAppendTime,
  );
  expect(header.recordCount).toBe(input.records.length);
  expect(records).toHaveLength(input.records.length);
  records.forEach((record, index) => {
    const expected = input.records[index]!;
    expect(record.offset).toBe(input.baseOffset + BigInt(expected.offsetDelta ?? index));
    expect(record.timestampMs).toBe(input.logAppendTimeMs ?? expected.timestampMs);
    expect(record.key).toEqual(expected.key);
    expect(record.value).toEqual(expected.value);
    expect(record.headers).toEqual(expected.headers);
  });
  const last = input.records.at(-1)!;
  expect(header.lastOffset).toBe(
    input.baseOffset + BigInt(last.offsetDelta ?? input.records.length - 1),
  );
  const createTimes = input.records.map((record) => record.timestampMs);
  const maxCreateTime = createTimes.reduce((max, time) => (time > max ? time : max), -1n);
  expect(header.maxTimestampMs).toBe(input.logAppendTimeMs ?? maxCreateTime);
}

describe('decodeRecordBatch', () => {
  it('returns what was encoded, for random batches and every codec', () => {
    fc.assert(
      fc.property(batchArbitrary, (input) => {
        const encoded = encodeRecordBatch(input);
        expectDecodedToMatch(input, encoded, 0);
        const header = validateRecordBatch(encoded, 0, {
          maxBatchSizeBytes: encoded.length,
          origin: 'log',
          deep: true,
        });
        expect(header.sizeBytes).toBe(encoded.length);
      }),
      { numRuns: 400 },
    );
  });

  it('decodes batches at any position of a buffer of many', () => {
    fc.assert(
      fc.property(fc.array(batchArbitrary, { minLength: 1, maxLength: 4 }), (inputs) => {
        const encoded = inputs.map((input) => encodeRecordBatch(input));
        const buffer = Buffer.concat(encoded);
        const batches = decodeRecordBatches(buffer);
        expect(batches).toHaveLength(inputs.length);
        let position = 0;
        inputs.forEach((input, index) => {
          expect(batches[index]!.header.position).toBe(position);
          expectDecodedToMatch(input, buffer, position);
          position += encoded[index]!.length;
        });
      }),
      { numRuns: 50 },
    );
  });

  it('reads into one RecordFields what decodeRecordBatch returns record by record', () => {
    fc.assert(
      fc.property(batchArbitrary, (input) => {
        const encoded = encodeRecordBatch(input);
        const { records } = decodeRecordBatch(encoded);
        const { header, reader } = openRecordBatch(encoded);
        const fields: RecordFields = {
          offset: 0n,
          timestampMs: 0n,
          key: null,
          value: null,
          headers: [],
          offsetDelta: 0,
        };
        for (let index = 0; index < header.recordCount; index++) {
          expect(reader.readInto(fields)).toBe(fields);
          const { sequence, ...expected } = records[index]!;
          expect(sequence).toBeTypeOf('number');
          expect({ ...fields, offsetDelta: undefined }).toEqual({
            ...expected,
            offsetDelta: undefined,
          });
          expect(fields.offset - header.baseOffset).toBe(BigInt(fields.offsetDelta));
        }
        reader.finish();
      }),
      { numRuns: 200 },
    );
  });

  // readInto's fast path makes its own checks; the deep validation (RecordReader.skip) is the
  // reference: a record section it accepts decodes, one it refuses fails with a RecordBatchError.
  it('accepts and refuses damaged records exactly as the deep validation does', () => {
    const damage = fc.array(fc.record({ at: fc.nat(), byte: fc.nat(255) }), {
      minLength: 1,
      maxLength: 3,
    });
    fc.assert(
      fc.property(batchArbitrary, damage, (input, flips) => {
        const encoded = encodeRecordBatch({ ...input, compressionType: CompressionType.None });
        const recordsStart = 61;
        if (encoded.length <= recordsStart) return;
        for (const { at, byte } of flips) {
          encoded[recordsStart + (at % (encoded.length - recordsStart))] = byte;
        }
        const header = openRecordBatch(encoded, 0, { verifyCrc: false }).header;
        encoded.writeUInt32BE(header.computeCrc(), crcPosition);
        let validationError: unknown;
        try {
          validateRecordBatch(encoded, 0, {
            maxBatchSizeBytes: encoded.length,
            origin: 'log',
            deep: true,
          });
        } catch (error) {
          validationError = error;
        }
        if (validationError === undefined) {
          expect(decodeRecordBatch(encoded).records).toHaveLength(header.recordCount);
        } else {
          expect(validationError).toBeInstanceOf(RecordBatchError);
          expect(() => decodeRecordBatch(encoded)).toThrow(RecordBatchError);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a record whose length says more than its fields use', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from('abc'), timestampMs: 1n }],
    });
    // One byte more in the record's length, in batchLength, and at the end; a CRC to match.
    const recordsStart = 61;
    const longer = Buffer.concat([encoded, Buffer.from([0])]);
    expect(longer[recordsStart]! & 0x80).toBe(0);
    longer[recordsStart] = longer[recordsStart]! + 2;
    longer.writeInt32BE(longer.readInt32BE(8) + 1, 8);
    const header = openRecordBatch(longer, 0, { verifyCrc: false }).header;
    longer.writeUInt32BE(header.computeCrc(), crcPosition);
    expect(() => decodeRecordBatch(longer)).toThrow(/fields end at byte position/);
  });

  it('reports producer sequences per record, wrapping past Int32 max', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      producerId: 1n,
      producerEpoch: 0,
      baseSequence: 2 ** 31 - 2,
      records: [0n, 1n, 2n].map((delta) => ({ key: null, value: null, timestampMs: delta })),
    });
    const { records } = decodeRecordBatch(encoded);
    expect(records.map((record) => record.sequence)).toEqual([2 ** 31 - 2, 2 ** 31 - 1, 0]);
  });

  it('checks the CRC unless told not to, as Kafka check.crcs', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from('abc'), timestampMs: 1n }],
    });
    encoded[encoded.length - 2] = 'x'.charCodeAt(0); // the last byte of the value, before the header count
    expect(() => decodeRecordBatch(encoded)).toThrow(
      expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
    );
    const { records } = decodeRecordBatch(encoded, 0, { verifyCrc: false });
    expect(records[0]!.value).toEqual(Buffer.from('abx'));
  });

  it('bounds how far a compressed batch may inflate', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      compressionType: CompressionType.Gzip,
      records: [{ key: null, value: Buffer.alloc(1 << 20), timestampMs: 1n }],
    });
    expect(encoded.length).toBeLessThan(5000);
    const error = (() => {
      try {
        decodeRecordBatch(encoded, 0, { uncompressedBytesMax: 1 << 16 });
      } catch (caught) {
        return caught as RecordBatchError;
      }
      return expect.fail('expected the decoder to refuse');
    })();
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.message).toMatch(/does not decompress with gzip/);
    expect(error.cause).toBeInstanceOf(Error);
    expect(decodeRecordBatch(encoded).records[0]!.value!.length).toBe(1 << 20);
  });

  it('refuses a compression id that has no codec with UNSUPPORTED_COMPRESSION_TYPE', () => {
    const encoded = encodeRecordBatch({
      baseOffset: 0n,
      compressionType: CompressionType.Lz4,
      records: [{ key: null, value: null, timestampMs: 1n }],
    });
    encoded.writeInt16BE(5, 21);
    expect(() => decodeRecordBatch(encoded, 0, { verifyCrc: false })).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_COMPRESSION_TYPE', retriable: false }),
    );
  });
});

describe('compression codec registry', () => {
  it('knows all five of Kafka codecs, and takes replacements for Kafka ids 1-4 only', () => {
    expect(compressionCodecFor(CompressionType.None).name).toBe('none');
    expect(compressionCodecFor(CompressionType.Gzip).name).toBe('gzip');
    expect(compressionCodecFor(CompressionType.Snappy).name).toBe('snappy');
    expect(compressionCodecFor(CompressionType.Zstd).name).toBe('zstd');
    expect(compressionCodecFor(CompressionType.Lz4)).toBe(xorLz4Codec);
    expect(() => compressionCodecFor(6)).toThrow(RecordBatchError);
    expect(() => registerCompressionCodec({ ...xorLz4Codec, type: CompressionType.None })).toThrow(
      RangeError,
    );
    expect(() => registerCompressionCodec({ ...xorLz4Codec, type: 7 as CompressionType })).toThrow(
      RangeError,
    );
  });
});
