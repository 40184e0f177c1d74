// Proves the hand-written produce-path codec is the generated one without the copies: for random
// requests (negative int32s, empty and non-ASCII topics, empty records included) it writes the
// same bytes as the generated encoder, decodes what the generated encoder wrote to equal values,
// skips unknown fields alike, returns views rather than copies, and fails on truncated input.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  AppendRequest,
  AppendStreamRequest,
  PartitionBatches,
  ProduceRequest,
  ProduceStreamRequest,
} from './index';
import { decodeBatchesRequest, encodeBatchesRequest } from './partition-batches-codec';
import type { BatchesRequest } from './partition-batches-codec';

const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const request: fc.Arbitrary<BatchesRequest> = fc.record({
  partitions: fc.array(
    fc.record({
      topic: fc.oneof(fc.constant(''), fc.string(), fc.string({ unit: 'grapheme' })),
      partition: int32,
      records: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    }),
    { maxLength: 5 },
  ),
  acks: int32,
  timeoutMs: int32,
});

describe('partition batches codec', () => {
  // A field added to these messages in proto/ would be dropped by the hand-written codec: this
  // fails first, so whoever adds it extends partition-batches-codec.ts (and these lists).
  it('knows every field of the messages it replaces', () => {
    expect(Object.keys(ProduceRequest.fromPartial({})).sort()).toEqual([
      'acks',
      'partitions',
      'timeoutMs',
    ]);
    expect(Object.keys(AppendRequest.fromPartial({})).sort()).toEqual([
      'acks',
      'partitions',
      'timeoutMs',
    ]);
    for (const streamed of [AppendStreamRequest, ProduceStreamRequest]) {
      expect(Object.keys(streamed.fromPartial({})).sort()).toEqual([
        'acks',
        'correlationId',
        'partitions',
        'timeoutMs',
      ]);
    }
    expect(Object.keys(PartitionBatches.fromPartial({})).sort()).toEqual([
      'partition',
      'records',
      'topic',
    ]);
  });

  it('encodes exactly as the generated encoder', () => {
    fc.assert(
      fc.property(request, (value) => {
        const generated = Buffer.from(AppendRequest.encode(value).finish());
        expect(encodeBatchesRequest(value).equals(generated)).toBe(true);
      }),
    );
  });

  it('encodes and decodes AppendStreamRequest and ProduceStreamRequest (field 15, the correlation id) as generated', () => {
    const correlationId = fc.integer({ min: 0, max: 0xffffffff });
    fc.assert(
      fc.property(request, correlationId, (value, id) => {
        const streamed = { ...value, correlationId: id };
        for (const generatedCodec of [AppendStreamRequest, ProduceStreamRequest]) {
          const generated = Buffer.from(generatedCodec.encode(streamed).finish());
          expect(encodeBatchesRequest(streamed).equals(generated)).toBe(true);
          expect({ correlationId: 0, ...decodeBatchesRequest(generated) }).toEqual(
            generatedCodec.decode(generated),
          );
        }
      }),
    );
  });

  it('decodes what the generated encoder wrote to the same values', () => {
    fc.assert(
      fc.property(request, (value) => {
        const bytes = Buffer.from(ProduceRequest.encode(value).finish());
        expect(decodeBatchesRequest(bytes)).toEqual(ProduceRequest.decode(bytes));
      }),
    );
  });

  it('skips unknown fields and returns records as views of the message', () => {
    const value = {
      partitions: [{ topic: 'orders', partition: 7, records: Buffer.from([1, 2, 3]) }],
      acks: 1,
      timeoutMs: 500,
    };
    // Field 9 (varint), field 10 (length-delimited) and field 11 (fixed32) ahead of the rest.
    const unknown = Buffer.from([0x48, 0x96, 0x01, 0x52, 0x02, 0xaa, 0xbb, 0x5d, 1, 2, 3, 4]);
    const message = Buffer.concat([unknown, encodeBatchesRequest(value)]);
    const decoded = decodeBatchesRequest(message);
    expect(decoded).toEqual(ProduceRequest.decode(message));
    expect(decoded.partitions[0]!.records.buffer).toBe(message.buffer);
  });

  it('fails on a truncated message', () => {
    const bytes = encodeBatchesRequest({
      partitions: [{ topic: 'orders', partition: 1, records: Buffer.alloc(100, 7) }],
      acks: 1,
      timeoutMs: 1000,
    });
    expect(() => decodeBatchesRequest(bytes.subarray(0, 50))).toThrow(/premature EOF/);
  });
});
