// Proves splitRecordBatchPositions accepts and refuses exactly what splitRecordBatches does, with
// the same error code and message: a property test over random runs of encoded batches (plain
// and gzip, idempotent or not), damaged by random header field values (with and without a CRC
// recomputed to match, so every check gets its turn), flipped bytes, cut tails and noise, under
// both origins and random size limits; plus the valid and the deep cases by example.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import { crc32c } from './crc32c';
import { splitRecordBatchPositions } from './record-batch-append-validator';
import { encodeRecordBatch } from './record-batch-encoder';
import { CompressionType } from './record-batch-layout';
import { splitRecordBatches, type RecordBatchValidationOptions } from './record-batch-validator';

type Outcome = { positions: number[] } | { code: string; message: string };

function outcomeOf(split: () => number[]): Outcome {
  try {
    return { positions: split() };
  } catch (error) {
    expect(error).toBeInstanceOf(RecordBatchError);
    const { code, message } = error as RecordBatchError;
    return { code, message };
  }
}

function bothOutcomes(buffer: Buffer, options: RecordBatchValidationOptions): [Outcome, Outcome] {
  const reference = outcomeOf(() =>
    splitRecordBatches(buffer, options).map((header) => header.position),
  );
  const lean = outcomeOf(() => splitRecordBatchPositions(buffer, options));
  return [reference, lean];
}

const batchArbitrary = fc
  .record({
    recordCount: fc.integer({ min: 1, max: 6 }),
    valueSizeBytes: fc.integer({ min: 0, max: 40 }),
    gzip: fc.boolean(),
    idempotent: fc.boolean(),
    isControl: fc.boolean(),
  })
  .map(({ recordCount, valueSizeBytes, gzip, idempotent, isControl }) =>
    encodeRecordBatch({
      baseOffset: 0n,
      compressionType: gzip ? CompressionType.Gzip : CompressionType.None,
      ...(idempotent ? { producerId: 5n, producerEpoch: 1, baseSequence: 0 } : {}),
      isControl,
      records: Array.from({ length: recordCount }, (_, index) => ({
        key: null,
        value: Buffer.alloc(valueSizeBytes, index),
        timestampMs: 1_700_000_000_000n + BigInt(index),
      })),
    }),
  );

/** One damage to a run of batches; positions and values are fractions, scaled to the buffer. */
const damageArbitrary = fc.oneof(
  fc.record({
    kind: fc.constant('field' as const),
    batch: fc.nat(),
    fieldPosition: fc.constantFrom(0, 4, 8, 12, 16, 21, 23, 43, 47, 53, 57),
    width: fc.constantFrom(1, 2, 4),
    value: fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff }),
    restampCrc: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('noise' as const), bytes: fc.uint8Array({ maxLength: 80 }) }),
);

type Damage = typeof damageArbitrary extends fc.Arbitrary<infer T> ? T : never;

function damaged(batches: readonly Buffer[], damage: Damage): Buffer {
  const starts: number[] = [];
  let total = 0;
  for (const batch of batches) {
    starts.push(total);
    total += batch.length;
  }
  const buffer = Buffer.concat(batches);
  switch (damage.kind) {
    case 'field': {
      if (batches.length === 0) return buffer;
      const index = damage.batch % batches.length;
      const at = starts[index]! + damage.fieldPosition;
      if (damage.width === 1) buffer.writeInt8((damage.value << 24) >> 24, at);
      else if (damage.width === 2) buffer.writeInt16BE((damage.value << 16) >> 16, at);
      else buffer.writeInt32BE(damage.value, at);
      if (damage.restampCrc) {
        const start = starts[index]!;
        const end = start + batches[index]!.length;
        buffer.writeUInt32BE(crc32c(buffer, start + 21, end), start + 17);
      }
      return buffer;
    }
    case 'flip':
      if (buffer.length > 0) buffer[Math.floor(damage.at * (buffer.length - 1))]! ^= 0x10;
      return buffer;
    case 'cut':
      return buffer.subarray(0, Math.floor(damage.at * buffer.length));
    case 'noise':
      return Buffer.concat([buffer, Buffer.from(damage.bytes)]);
  }
}

describe('splitRecordBatchPositions', () => {
  it('gives the same positions or the same error as splitRecordBatches', () => {
    fc.assert(
      fc.property(
        fc.array(batchArbitrary, { maxLength: 4 }),
        fc.option(damageArbitrary, { nil: undefined }),
        fc.constantFrom('client' as const, 'log' as const),
        fc.integer({ min: 0, max: 1200 }),
        (batches, damage, origin, maxBatchSizeBytes) => {
          const buffer = damage === undefined ? Buffer.concat(batches) : damaged(batches, damage);
          const [reference, lean] = bothOutcomes(buffer, { maxBatchSizeBytes, origin });
          expect(lean).toEqual(reference);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('returns each batch position in order, none for an empty buffer, and checks deep', () => {
    const batches = [1, 5, 2].map((count) =>
      encodeRecordBatch({
        baseOffset: 0n,
        records: Array.from({ length: count }, () => ({
          key: null,
          value: Buffer.from('v'),
          timestampMs: 1n,
        })),
      }),
    );
    const options = { maxBatchSizeBytes: 1 << 20 };
    expect(splitRecordBatchPositions(Buffer.concat(batches), options)).toEqual([
      0,
      batches[0]!.length,
      batches[0]!.length + batches[1]!.length,
    ]);
    expect(splitRecordBatchPositions(Buffer.alloc(0), options)).toEqual([]);
    expect(splitRecordBatchPositions(Buffer.concat(batches), { ...options, deep: true })).toEqual([
      0,
      batches[0]!.length,
      batches[0]!.length + batches[1]!.length,
    ]);
  });
});
