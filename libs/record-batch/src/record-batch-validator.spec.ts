// Proves the validator accepts what the encoder writes and rejects each kind of bad batch with
// Kafka's error code and a message naming the byte position and field: a flipped byte (CRC),
// a wrong magic, a lying length, a lying record count (with a CRC recomputed to match, so only
// the count check can catch it), a truncated tail, an oversize batch, the client-only rules,
// and, with `deep`, records that do not add up to the declared count.
import { describe, expect, it } from 'vitest';
import { RecordBatchError } from './errors';
import { crc32c } from './crc32c';
import { encodeRecordBatch } from './record-batch-encoder';
import type { RecordInput } from './record';
import { CompressionType } from './record-batch-layout';
import type { RecordBatchValidationOptions } from './record-batch-validator';
import { splitRecordBatches, validateRecordBatch } from './record-batch-validator';

const timestampMs = 1_700_000_000_000n;
const options: RecordBatchValidationOptions = { maxBatchSizeBytes: 1 << 20 };

function records(count: number, valueSizeBytes = 8): RecordInput[] {
  return Array.from({ length: count }, (_, index) => ({
    key: Buffer.from(`key-${index}`),
    value: Buffer.alloc(valueSizeBytes, index),
    headers: [{ key: 'h', value: null }],
    timestampMs: timestampMs + BigInt(index),
  }));
}

function batchOf(count: number, valueSizeBytes = 8): Buffer {
  return encodeRecordBatch({ baseOffset: 0n, records: records(count, valueSizeBytes) });
}

/** Recomputes the CRC after a test edits covered bytes, so only the check under test fires. */
function restampCrc(buffer: Buffer, position = 0): Buffer {
  const end = position + buffer.readInt32BE(position + 8) + 12;
  buffer.writeUInt32BE(crc32c(buffer, position + 21, end), position + 17);
  return buffer;
}

function rejection(validate: () => unknown): RecordBatchError {
  try {
    validate();
  } catch (error) {
    expect(error).toBeInstanceOf(RecordBatchError);
    return error as RecordBatchError;
  }
  return expect.fail('expected a RecordBatchError');
}

describe('validateRecordBatch', () => {
  it('accepts what the encoder writes, shallow and deep, plain and gzip', () => {
    const plain = batchOf(20);
    const gzip = encodeRecordBatch({
      baseOffset: 0n,
      records: records(20, 500),
      compressionType: CompressionType.Gzip,
    });
    for (const batch of [plain, gzip]) {
      const header = validateRecordBatch(batch, 0, options);
      expect(header.sizeBytes).toBe(batch.length);
      expect(validateRecordBatch(batch, 0, { ...options, deep: true }).recordCount).toBe(20);
    }
  });

  it('rejects a flipped byte anywhere under the CRC as CORRUPT_MESSAGE, retriable', () => {
    const batch = batchOf(3);
    for (const position of [21, 30, 60, 61, batch.length - 1]) {
      const damaged = Buffer.from(batch);
      damaged[position]! ^= 0x01;
      const error = rejection(() => validateRecordBatch(damaged, 0, options));
      expect(error.code).toBe('CORRUPT_MESSAGE');
      expect(error.retriable).toBe(true);
      expect(error.message).toMatch(/record batch at position 0: field crc at byte 17/);
    }
  });

  it('rejects magic 0 and 1 as UNSUPPORTED_VERSION and any other as CORRUPT_MESSAGE', () => {
    for (const [magic, code] of [
      [0, 'UNSUPPORTED_VERSION'],
      [1, 'UNSUPPORTED_VERSION'],
      [3, 'CORRUPT_MESSAGE'],
      [-1, 'CORRUPT_MESSAGE'],
    ] as const) {
      const batch = batchOf(1);
      batch.writeInt8(magic, 16);
      const error = rejection(() => validateRecordBatch(batch, 0, options));
      expect(error.code).toBe(code);
      expect(error.message).toMatch(/field magic/);
    }
  });

  it('rejects a batchLength that overruns the buffer or is shorter than a header', () => {
    const long = batchOf(2);
    long.writeInt32BE(long.length - 12 + 1, 8);
    const overrun = rejection(() => validateRecordBatch(long, 0, options));
    expect(overrun.code).toBe('CORRUPT_MESSAGE');
    expect(overrun.message).toMatch(/batchLength says the batch has \d+ bytes but only \d+/);

    const short = batchOf(2);
    short.writeInt32BE(48, 8);
    const underrun = rejection(() => validateRecordBatch(short, 0, options));
    expect(underrun.code).toBe('CORRUPT_MESSAGE');
    expect(underrun.message).toMatch(/field batchLength at byte 8 is 48/);

    const shrunk = batchOf(2);
    shrunk.writeInt32BE(shrunk.length - 12 - 1, 8);
    expect(rejection(() => validateRecordBatch(shrunk, 0, options)).code).toBe('CORRUPT_MESSAGE');
  });

  it('rejects a buffer too short to hold the header', () => {
    const batch = batchOf(1);
    for (const sizeBytes of [0, 11, 16]) {
      const error = rejection(() => validateRecordBatch(batch.subarray(0, sizeBytes), 0, options));
      expect(error.code).toBe('CORRUPT_MESSAGE');
      expect(error.message).toMatch(/truncated/);
    }
  });

  it('rejects a batch above maxBatchSizeBytes as MESSAGE_TOO_LARGE', () => {
    const batch = batchOf(10, 100);
    expect(validateRecordBatch(batch, 0, { maxBatchSizeBytes: batch.length }).sizeBytes).toBe(
      batch.length,
    );
    const error = rejection(() =>
      validateRecordBatch(batch, 0, { maxBatchSizeBytes: batch.length - 1 }),
    );
    expect(error.code).toBe('MESSAGE_TOO_LARGE');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(`${batch.length} bytes, more than the ${batch.length - 1}`);
  });

  it('rejects a record count that disagrees with lastOffsetDelta', () => {
    for (const recordCount of [4, 2, 0, -1]) {
      const batch = batchOf(3);
      batch.writeInt32BE(recordCount, 57);
      restampCrc(batch);
      const error = rejection(() => validateRecordBatch(batch, 0, options));
      expect(error.code).toBe('INVALID_RECORD');
      expect(error.message).toMatch(/field recordCount at byte 57 is -?\d+/);
    }
  });

  it('rejects, without reading records, more records than the bytes can hold', () => {
    const batch = batchOf(3);
    batch.writeInt32BE(1000, 57);
    batch.writeInt32BE(999, 23);
    restampCrc(batch);
    const error = rejection(() => validateRecordBatch(batch, 0, options));
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.message).toMatch(/cannot hold that many records/);
  });

  it('with deep, catches a count that lies consistently with lastOffsetDelta', () => {
    const batch = batchOf(3);
    batch.writeInt32BE(2, 57);
    batch.writeInt32BE(1, 23);
    restampCrc(batch);
    expect(validateRecordBatch(batch, 0, options).recordCount).toBe(2);
    const tooFew = rejection(() => validateRecordBatch(batch, 0, { ...options, deep: true }));
    expect(tooFew.code).toBe('INVALID_RECORD');
    expect(tooFew.message).toMatch(/position 0: \d+ bytes remain after the 2 records/);

    const withTrailingBytes = Buffer.concat([batchOf(2), Buffer.alloc(7)]);
    withTrailingBytes.writeInt32BE(withTrailingBytes.length - 12, 8);
    restampCrc(withTrailingBytes);
    expect(validateRecordBatch(withTrailingBytes, 0, options).recordCount).toBe(2);
    const leftOver = rejection(() =>
      validateRecordBatch(withTrailingBytes, 0, { ...options, deep: true }),
    );
    expect(leftOver.code).toBe('INVALID_RECORD');
    expect(leftOver.message).toMatch(/7 bytes remain after the 2 records/);
  });

  it('with deep, catches a record whose length disagrees with its fields', () => {
    const batch = batchOf(2);
    batch[61] = batch[61]! + 2; // record 0 claims one byte more (zigzag +2)
    restampCrc(batch);
    const error = rejection(() => validateRecordBatch(batch, 0, { ...options, deep: true }));
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.message).toMatch(/record batch at position 0: record 0 fields end at byte/);
  });

  it('with deep, reports a truncated varint inside a record as INVALID_RECORD', () => {
    const batch = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: null, timestampMs }],
    });
    batch.fill(0xff, 63, batch.length); // timestampDelta and everything after it continue forever
    restampCrc(batch);
    const error = rejection(() => validateRecordBatch(batch, 0, { ...options, deep: true }));
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.message).toMatch(/record batch at position 0: record 0: varlong at byte/);
  });

  it('rejects compression ids Kafka does not define', () => {
    const batch = batchOf(1);
    batch.writeInt16BE(5, 21);
    restampCrc(batch);
    const error = rejection(() => validateRecordBatch(batch, 0, options));
    expect(error.code).toBe('UNSUPPORTED_COMPRESSION_TYPE');
  });

  it('holds client batches to Kafka client rules and lets log batches through', () => {
    const withOffset = encodeRecordBatch({ baseOffset: 100n, records: records(2) });
    const control = encodeRecordBatch({ baseOffset: 0n, records: records(1), isControl: true });
    const noSequence = encodeRecordBatch({ baseOffset: 0n, records: records(1), producerId: 5n });
    for (const [batch, message] of [
      [withOffset, /field baseOffset is 100/],
      [control, /control batch/],
      [noSequence, /field baseSequence is -1 in a batch with producerId 5/],
    ] as const) {
      const error = rejection(() => validateRecordBatch(batch, 0, options));
      expect(error.code).toBe('INVALID_RECORD');
      expect(error.message).toMatch(message);
      expect(
        validateRecordBatch(batch, 0, { ...options, origin: 'log', deep: true }),
      ).toBeDefined();
    }
  });

  it('lets a log batch thinned by compaction through, and not a client batch', () => {
    const compacted = encodeRecordBatch({
      baseOffset: 0n,
      records: records(3).map((record, index) => ({ ...record, offsetDelta: index * 4 })),
    });
    expect(new Set([compacted.readInt32BE(23), compacted.readInt32BE(57)])).toEqual(
      new Set([8, 3]),
    );
    const logOptions = { ...options, origin: 'log', deep: true } as const;
    expect(validateRecordBatch(compacted, 0, logOptions).lastOffset).toBe(8n);
    expect(rejection(() => validateRecordBatch(compacted, 0, options)).code).toBe('INVALID_RECORD');

    const empty = Buffer.from(batchOf(1).subarray(0, 61));
    empty.writeInt32BE(61 - 12, 8);
    empty.writeInt32BE(0, 57);
    restampCrc(empty);
    expect(validateRecordBatch(empty, 0, logOptions).recordCount).toBe(0);
    expect(rejection(() => validateRecordBatch(empty, 0, options)).code).toBe('INVALID_RECORD');
  });
});

describe('splitRecordBatches', () => {
  it('returns one header per batch, in order, and none for an empty buffer', () => {
    const batches = [batchOf(1), batchOf(5), batchOf(2)];
    const headers = splitRecordBatches(Buffer.concat(batches), options);
    expect(headers.map((header) => [header.position, header.recordCount])).toEqual([
      [0, 1],
      [batches[0]!.length, 5],
      [batches[0]!.length + batches[1]!.length, 2],
    ]);
    expect(splitRecordBatches(Buffer.alloc(0), options)).toEqual([]);
  });

  it('rejects a truncated last batch, naming its position', () => {
    const first = batchOf(2);
    const second = batchOf(3);
    for (const cut of [1, 16, 30, second.length - 1]) {
      const buffer = Buffer.concat([first, second.subarray(0, cut)]);
      const error = rejection(() => splitRecordBatches(buffer, options));
      expect(error.code).toBe('CORRUPT_MESSAGE');
      expect(error.message).toMatch(new RegExp(`^record batch at position ${first.length}: `));
      expect(error.message).toMatch(/truncated/);
    }
  });

  it('rejects a damaged batch in the middle, naming its position', () => {
    const first = batchOf(2);
    const second = batchOf(2);
    second[70]! ^= 0x80;
    const buffer = Buffer.concat([first, second, batchOf(1)]);
    const error = rejection(() => splitRecordBatches(buffer, { ...options, origin: 'log' }));
    expect(error.code).toBe('CORRUPT_MESSAGE');
    expect(error.message).toMatch(
      new RegExp(
        `^record batch at position ${first.length}: field crc at byte ${first.length + 17}`,
      ),
    );
  });
});
