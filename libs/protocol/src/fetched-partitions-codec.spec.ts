// Proves the hand-written codec of ConsumeResponse and FetchResponse is the generated one without
// the copies: for random responses (errors, negative and large int64s, empty and non-ASCII topics,
// empty records included) it writes the same bytes as the generated encoder, decodes what the
// generated encoder wrote to equal values, keeps the last records field and unknown fields as the
// generated decoder does, returns records as views, and the services use it both ways.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ConsumeResponse,
  FetchedPartition,
  FetchResponse,
  GatewayServiceClient,
  GatewayServiceService,
  type ConsumeRequest,
} from './index';
import {
  SerializeScratch,
  decodeFetchedPartitions,
  encodeFetchedPartitions,
} from './fetched-partitions-codec';

const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const response = fc.record({
  partitions: fc.array(
    fc.record({
      topic: fc.oneof(fc.constant(''), fc.string(), fc.string({ unit: 'grapheme' })),
      partition: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
      error: fc.option(
        fc.record({ code: fc.string(), message: fc.string(), retriable: fc.boolean() }),
        { nil: undefined },
      ),
      highWatermark: int64,
      logStartOffset: int64,
      records: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    }),
    { maxLength: 5 },
  ),
});

describe('fetched partitions codec', () => {
  // A field added to FetchedPartition after records would be written after it by the generated
  // encoder, not before: this fails first, so whoever adds it revisits the codec.
  it('knows the fields of the messages it replaces', () => {
    expect(Object.keys(ConsumeResponse.fromPartial({}))).toEqual(['partitions']);
    expect(Object.keys(FetchResponse.fromPartial({}))).toEqual(['partitions']);
    expect(Object.keys(FetchedPartition.fromPartial({})).at(-1)).toBe('records');
  });

  it('encodes exactly as the generated encoder', () => {
    fc.assert(
      fc.property(response, (value) => {
        const generated = Buffer.from(ConsumeResponse.encode(value).finish());
        expect(encodeFetchedPartitions(value).equals(generated)).toBe(true);
      }),
    );
  });

  it('decodes what the generated encoder wrote to the same values', () => {
    fc.assert(
      fc.property(response, (value) => {
        const bytes = Buffer.from(FetchResponse.encode(value).finish());
        expect(decodeFetchedPartitions(bytes)).toEqual(FetchResponse.decode(bytes));
      }),
    );
  });

  it('keeps the last records field, skips unknown fields, and returns views', () => {
    const head = Buffer.from(
      FetchedPartition.encode(
        FetchedPartition.fromPartial({ topic: 'orders', partition: 3, highWatermark: 9n }),
      ).finish(),
    );
    // records [1, 2], then field 9 (varint) and field 10 (length-delimited), then records [7].
    const body = Buffer.concat([
      Buffer.from([0x32, 0x02, 1, 2]),
      head,
      Buffer.from([0x48, 0x96, 0x01, 0x52, 0x02, 0xaa, 0xbb]),
      Buffer.from([0x32, 0x01, 7]),
    ]);
    const message = Buffer.concat([Buffer.from([0x0a, body.length]), body]);
    const decoded = decodeFetchedPartitions(message);
    expect(decoded).toEqual(ConsumeResponse.decode(message));
    expect([...decoded.partitions[0]!.records]).toEqual([7]);
    expect(decoded.partitions[0]!.records.buffer).toBe(message.buffer);
  });

  it('writes into a scratch buffer again and again, up to its bound', () => {
    // Sizes past Buffer's 4 KiB pool, so that each buffer has its own memory.
    const scratch = new SerializeScratch(64 * 1024);
    const small = ConsumeResponse.fromPartial({
      partitions: [{ topic: 'a', records: Buffer.alloc(10_000, 1) }],
    });
    const other = ConsumeResponse.fromPartial({
      partitions: [{ topic: 'b', records: Buffer.alloc(12_000, 2) }],
    });
    const first = encodeFetchedPartitions(small, scratch);
    expect(first.equals(encodeFetchedPartitions(small))).toBe(true);
    const second = encodeFetchedPartitions(other, scratch);
    expect(second.equals(encodeFetchedPartitions(other))).toBe(true);
    // The same memory: the first result is gone once the second is written.
    expect(second.buffer).toBe(first.buffer);
    expect(first.equals(encodeFetchedPartitions(small))).toBe(false);
    const large = ConsumeResponse.fromPartial({
      partitions: [{ topic: 'c', records: Buffer.alloc(100_000, 3) }],
    });
    const third = encodeFetchedPartitions(large, scratch);
    expect(third.buffer).not.toBe(first.buffer);
    expect(third.equals(encodeFetchedPartitions(large))).toBe(true);
  });

  it('fails on a truncated message', () => {
    const bytes = encodeFetchedPartitions({
      partitions: [FetchedPartition.fromPartial({ topic: 'orders', records: Buffer.alloc(100) })],
    });
    expect(() => decodeFetchedPartitions(bytes.subarray(0, 50))).toThrow(/premature EOF/);
  });

  it('is what the gateway service serializes and deserializes with', () => {
    const value = ConsumeResponse.fromPartial({
      partitions: [{ topic: 'orders', partition: 2, records: Buffer.alloc(64, 9) }],
    });
    const generated = Buffer.from(ConsumeResponse.encode(value).finish());
    for (const method of [GatewayServiceService.consume, GatewayServiceService.fetch]) {
      expect(method.responseSerialize(value).equals(generated)).toBe(true);
      const decoded = method.responseDeserialize(generated);
      expect(decoded).toEqual(value);
      expect(decoded.partitions[0]!.records.buffer).toBe(generated.buffer);
    }
  });

  // The scratch buffer relies on grpc-js copying each response before it serializes the next: a
  // grpc-js that kept the serializer's output (compression, a deferred copy) fails this test.
  it('reaches a grpc-js client intact when responses are written back to back', async () => {
    const fills = [1, 2, 3, 4];
    const server = new grpc.Server();
    server.addService(GatewayServiceService, {
      consume: (call: grpc.ServerDuplexStream<ConsumeRequest, ConsumeResponse>) => {
        // No waiting for drain: grpc-js queues the later ones while it sends the first.
        for (const fill of fills) {
          call.write(
            ConsumeResponse.fromPartial({
              partitions: [{ topic: 't', records: Buffer.alloc(256 * 1024, fill) }],
            }),
          );
        }
        call.end();
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const client = new GatewayServiceClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const received = await new Promise<number[][]>((resolve, reject) => {
        const call = client.consume();
        const contents: number[][] = [];
        call.on('data', (response: ConsumeResponse) => {
          contents.push([...new Set(response.partitions[0]!.records)]);
        });
        call.on('error', reject);
        call.on('end', () => resolve(contents));
        call.end();
      });
      expect(received).toEqual(fills.map((fill) => [fill]));
    } finally {
      client.close();
      server.forceShutdown();
    }
  });
});
