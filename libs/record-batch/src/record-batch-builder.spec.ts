// Proves the builder writes, record by record, exactly the bytes encodeRecordBatch writes for the
// same records and fields (generated records: null and empty keys and values, headers, timestamps
// before and after the first, no compression and gzip, idempotence fields), that a rebuild with
// new idempotence fields rewrites only the header and a valid CRC, that growing past its initial
// buffer keeps every byte, and that bad timestamps are refused with INVALID_RECORD.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import { RecordBatchBuilder, type RecordBatchFields } from './record-batch-builder';
import { decodeRecordBatch } from './record-batch-decoder';
import { encodeRecordBatch } from './record-batch-encoder';
import { CompressionType } from './record-batch-layout';
import type { RecordInput } from './record';

const bytes = fc.option(
  fc.uint8Array({ maxLength: 300 }).map((array) => Buffer.from(array)),
  {
    nil: null,
  },
);
const record = fc.record({
  key: bytes,
  value: bytes,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 12 }), value: bytes }), {
    maxLength: 3,
  }),
  timestampOffsetMs: fc.integer({ min: -100_000, max: 100_000_000 }),
});

function build(records: readonly RecordInput[], fields: RecordBatchFields, capacity?: number) {
  // An odd capacity also hands the builder a buffer of its own to start in (a pooled one).
  const given = capacity !== undefined && capacity % 2 === 1 ? Buffer.alloc(capacity) : undefined;
  const builder = new RecordBatchBuilder({ expectedSizeBytesMax: capacity, buffer: given });
  if (given !== undefined) expect(builder.backingBuffer).toBe(given);
  for (const input of records) {
    builder.append(Number(input.timestampMs), input.key, input.value, input.headers);
  }
  return Buffer.from(builder.build(fields));
}

describe('RecordBatchBuilder', () => {
  it('writes the bytes encodeRecordBatch writes, for any records and compression', () => {
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 40 }),
        fc.constantFrom<CompressionType>(CompressionType.None, CompressionType.Gzip),
        fc.boolean(),
        fc.integer({ min: 128, max: 4096 }),
        (generated, compressionType, idempotent, capacity) => {
          const records: RecordInput[] = generated.map((entry) => ({
            key: entry.key,
            value: entry.value,
            headers: entry.headers,
            timestampMs: 1_700_000_000_000n + BigInt(entry.timestampOffsetMs),
          }));
          const fields = {
            compressionType,
            producerId: idempotent ? 4242n : -1n,
            producerEpoch: idempotent ? 3 : -1,
            baseSequence: idempotent ? 17 : -1,
          };
          const built = build(records, fields, capacity);
          if (
            compressionType === CompressionType.None ||
            compressionType === CompressionType.Gzip
          ) {
            // Deterministic codecs: byte for byte. (gzip is deterministic for the same input.)
            expect(built.equals(encodeRecordBatch({ baseOffset: 0n, records, ...fields }))).toBe(
              true,
            );
          }
          const decoded = decodeRecordBatch(built, 0, { verifyCrc: true });
          expect(
            decoded.records.map((entry) => [entry.key, entry.value, entry.timestampMs]),
          ).toEqual(records.map((entry) => [entry.key, entry.value, entry.timestampMs]));
          expect(decoded.records.map((entry) => entry.headers)).toEqual(
            records.map((entry) => entry.headers),
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it('rewrites the header and CRC, not the records, when the idempotence fields change', () => {
    const builder = new RecordBatchBuilder();
    for (let index = 0; index < 100; index++) {
      builder.append(1_700_000_000_000 + index, null, Buffer.from(`value-${index}`));
    }
    const first = Buffer.from(
      builder.build({
        compressionType: CompressionType.Gzip,
        producerId: 7n,
        producerEpoch: 1,
        baseSequence: 0,
      }),
    );
    const second = builder.build({
      compressionType: CompressionType.Gzip,
      producerId: 7n,
      producerEpoch: 2,
      baseSequence: 0,
    });
    const decoded = decodeRecordBatch(second, 0, { verifyCrc: true });
    expect(decoded.header.producerEpoch).toBe(2);
    expect(second.subarray(61).equals(first.subarray(61))).toBe(true);
    expect(() => builder.append(1_700_000_000_000, null, null)).toThrow(RecordBatchError);
  });

  it('refuses timestamps that are not integers from -1, or too far apart', () => {
    const builder = new RecordBatchBuilder();
    expect(() => builder.append(-2, null, null)).toThrow(/timestamp -2 is not milliseconds/);
    expect(() => builder.append(1.5, null, null)).toThrow(RecordBatchError);
    builder.append(-1, null, Buffer.from('a'));
    expect(() => builder.append(2 ** 52, null, null)).toThrow(/too far/);
    builder.append(1_700_000_000_000, null, Buffer.from('b'));
    const decoded = decodeRecordBatch(
      builder.build({
        compressionType: CompressionType.None,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      }),
      0,
      { verifyCrc: true },
    );
    expect(decoded.records.map((entry) => entry.timestampMs)).toEqual([-1n, 1_700_000_000_000n]);
    expect(() =>
      new RecordBatchBuilder().build({
        compressionType: 0,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      }),
    ).toThrow(/at least one record/);
  });
});
