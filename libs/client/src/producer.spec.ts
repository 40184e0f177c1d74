// Proves the producer against a fake gateway (a real grpc-js server on loopback): records are
// batched per partition and one Produce request carries batches of many partitions; a batch
// waits lingerMs unless it reaches batchSizeBytes; offsets are the batch's base offset plus the
// record's index, exact as bigints past 2^53; concurrent sends to a partition land whole and in
// call order; keyless records stick to a partition per batch; a full buffer blocks send for
// maxBlockMs and then fails BUFFER_EXHAUSTED; retriable errors are retried with backoff, others
// fail naming topic and partition, and sendEach answers each message with its offset or its
// batch's error; settings that conflict with idempotence fail clearly. Produce requests are pipelined on one ProduceStream, and a gateway
// without it (an older one) is produced to with unary calls.
import type { SpoolError } from '@spool/common';
import { CompressionType, RecordBatchHeader, decodeRecordBatch } from '@spool/record-batch';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProducerOptions } from './config';
import type { Producer } from './producer';
import { Spool } from './spool';
import { expectSteady, FakeGateway, rejection } from './testing';

let gateway: FakeGateway | undefined;
const producers: Producer[] = [];

async function setUp(
  topics: Record<string, number>,
  options: ProducerOptions = {},
  gatewayOptions: { produceStream?: boolean } = {},
): Promise<{ gateway: FakeGateway; producer: Producer }> {
  gateway = await FakeGateway.start(topics, gatewayOptions);
  const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
  const producer = spool.producer(options);
  producers.push(producer);
  return { gateway, producer };
}

afterEach(async () => {
  gateway?.releaseProduce();
  await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));
  await gateway?.stop();
  gateway = undefined;
});

const value = (sizeBytes: number): string => 'v'.repeat(sizeBytes);

describe('Producer', () => {
  it('pipelines its produce requests on one ProduceStream, answered in any order', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 0, maxInFlight: 5 });
    // Answers held back: five requests wait on the stream at once, then all are answered.
    gateway.holdProduce();
    const sends = [];
    for (let index = 0; index < 5; index++) {
      sends.push(producer.send({ topic: 'orders', messages: [{ value: `m${index}` }] }));
      // Each send its own request: the next one starts once this one is on the stream.
      await expect.poll(() => gateway.produceRequests.length).toBeGreaterThan(index);
    }
    gateway.releaseProduce();
    const offsets = (await Promise.all(sends)).map(([landed]) => landed!.offset);
    expect(offsets).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(gateway.produceStreamsOpened).toBe(1);
  });

  it('produces with unary calls to a gateway that has no ProduceStream', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { lingerMs: 0 },
      { produceStream: false },
    );
    const first = await producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    const second = await producer.send({ topic: 'orders', messages: [{ value: 'b' }] });
    expect([first[0]!.offset, second[0]!.offset]).toEqual([0n, 1n]);
    expect(gateway.produceStreamsOpened).toBe(0);
    expect(gateway.produceRequests).toHaveLength(2);
  });

  it('batches per partition, many partitions in one Produce request', async () => {
    const { gateway, producer } = await setUp({ orders: 3 }, { lingerMs: 60_000 });
    const sends = [0, 1, 2, 0, 1, 2].map((partition, index) =>
      producer.send({ topic: 'orders', messages: [{ partition, value: `m${index}` }] }),
    );
    // Every record joins its partition's batch while they linger; flush sends them together
    // (each batch's own lingerMs would otherwise expire a millisecond apart). flush covers only
    // records already appended, so wait for the topic's metadata first: on a loaded machine the
    // first call's connection set-up alone can take longer than a fixed pause.
    await expect.poll(() => gateway.describeTopicsCalls).toBeGreaterThan(0);
    // Lingering: nothing is sent before flush (a claim of absence; the window bounds it).
    await expectSteady(() => gateway.produceRequests.length, 200, 'the produce requests sent');
    expect(gateway.produceRequests).toHaveLength(0);
    await producer.flush();
    const results = (await Promise.all(sends)).flat();
    expect(gateway.produceRequests).toHaveLength(1);
    const request = gateway.produceRequests[0]!;
    expect(request.partitions.map((entry) => entry.partition).sort()).toEqual([0, 1, 2]);
    for (const entry of request.partitions) {
      expect(new RecordBatchHeader(entry.records, 0).recordCount).toBe(2);
    }
    expect(results.map(({ partition, offset }) => [partition, offset])).toEqual([
      [0, 0n],
      [1, 0n],
      [2, 0n],
      [0, 1n],
      [1, 1n],
      [2, 1n],
    ]);
  });

  it('flushes sends made before flush, even those still waiting for metadata', async () => {
    const { gateway, producer } = await setUp({ orders: 2 }, { lingerMs: 60_000 });
    // No await between the sends and flush: none of them has its metadata yet.
    const sends = [0, 1, 0].map((partition, index) =>
      producer.send({ topic: 'orders', messages: [{ partition, value: `early-${index}` }] }),
    );
    await producer.flush();
    const results = (await Promise.all(sends)).flat();
    expect(results.map(({ partition, offset }) => [partition, offset])).toEqual([
      [0, 0n],
      [1, 0n],
      [0, 1n],
    ]);
    expect(gateway.produceRequests.length).toBeGreaterThanOrEqual(1);
  });

  it('sends a batch once it reaches batchSizeBytes, without waiting for linger', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { lingerMs: 60_000, batchSizeBytes: 600 },
    );
    const startedAtMs = Date.now();
    const sends = Array.from({ length: 12 }, () =>
      producer.send({ topic: 'orders', messages: [{ value: value(100) }] }),
    );
    // The last batch is not full; flush sends it instead of waiting a minute.
    await Promise.all(sends.slice(0, 8));
    expect(Date.now() - startedAtMs).toBeLessThan(10_000);
    await producer.flush();
    await Promise.all(sends);
    const counts = gateway
      .storedBatches('orders', 0)
      .map((bytes) => decodeRecordBatch(bytes).records.length);
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(12);
    expect(Math.max(...counts)).toBe(3);
    for (const bytes of gateway.storedBatches('orders', 0))
      expect(bytes.length).toBeLessThanOrEqual(600);
  });

  it('holds a lone record for lingerMs before sending it', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 300 });
    const startedAtMs = Date.now();
    await producer.send({ topic: 'orders', messages: [{ value: 'alone' }] });
    expect(Date.now() - startedAtMs).toBeGreaterThanOrEqual(280);
    expect(gateway.produceRequests).toHaveLength(1);
  });

  it('returns base offset + index per record, exact as bigints beyond 2^53', async () => {
    const { gateway, producer } = await setUp({ orders: 2 }, { lingerMs: 0 });
    const start = 2n ** 53n + 5n;
    gateway.setLogStartOffset('orders', 1, start);
    const results = await producer.send({
      topic: 'orders',
      messages: [
        { partition: 1, value: 'a' },
        { partition: 1, value: 'b' },
        { partition: 1, value: 'c' },
      ],
    });
    expect(results).toEqual([
      { topic: 'orders', partition: 1, offset: start },
      { topic: 'orders', partition: 1, offset: start + 1n },
      { topic: 'orders', partition: 1, offset: start + 2n },
    ]);
    expect(results[2]!.offset).toBe(9_007_199_254_740_999n);
  });

  it('keeps concurrent sends to a partition whole and in call order, each with its offsets', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 20 });
    // Three sends in one batch: each send's records are admitted together, never interleaved.
    const sends = ['a', 'b', 'c'].map((name) =>
      producer.send({
        topic: 'orders',
        messages: [0, 1, 2].map((index) => ({ partition: 0, value: `${name}${index}` })),
      }),
    );
    const offsets = (await Promise.all(sends)).map((landed) =>
      landed.map((record) => record.offset),
    );
    expect(offsets).toEqual([
      [0n, 1n, 2n],
      [3n, 4n, 5n],
      [6n, 7n, 8n],
    ]);
    const stored = gateway
      .storedBatches('orders', 0)
      .flatMap((bytes) =>
        decodeRecordBatch(bytes, 0).records.map((record) => String(record.value)),
      );
    expect(stored).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'b2', 'c0', 'c1', 'c2']);
  });

  it('routes keyed records by murmur2 and keeps keyless records on one partition per batch', async () => {
    const { producer } = await setUp({ orders: 8 }, { lingerMs: 50 });
    const keyed = await producer.send({
      topic: 'orders',
      messages: [
        { key: 'foobar', value: '1' },
        { key: 'foobar', value: '2' },
      ],
    });
    // Kafka's murmur2("foobar") is -790332482: toPositive gives 1357151166, and % 8 is 6.
    expect(keyed.map((result) => result.partition)).toEqual([6, 6]);
    const first = await producer.send({
      topic: 'orders',
      messages: Array.from({ length: 5 }, (_, index) => ({ value: `a${index}` })),
    });
    expect(new Set(first.map((result) => result.partition)).size).toBe(1);
    const second = await producer.send({
      topic: 'orders',
      messages: Array.from({ length: 5 }, (_, index) => ({ value: `b${index}` })),
    });
    expect(new Set(second.map((result) => result.partition)).size).toBe(1);
    expect(second[0]!.partition).not.toBe(first[0]!.partition);
  });

  it('makes send wait for buffer space up to maxBlockMs, then fail BUFFER_EXHAUSTED', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { lingerMs: 0, bufferMemoryBytes: 1_000, maxBlockMs: 250 },
    );
    gateway.holdProduce();
    const held = [1, 2].map(() =>
      producer.send({ topic: 'orders', messages: [{ value: value(400) }] }),
    );
    const startedAtMs = Date.now();
    const error = await rejection(
      producer.send({ topic: 'orders', messages: [{ value: value(400) }] }),
    );
    expect(Date.now() - startedAtMs).toBeGreaterThanOrEqual(240);
    expect(error.code).toBe('BUFFER_EXHAUSTED');
    expect(error.retriable).toBe(true);
    expect(error.message).toMatch(/bufferMemoryBytes=1000.*maxBlockMs=250/);
    // Space freed in time lets a waiting send through.
    const waiting = producer.send({ topic: 'orders', messages: [{ value: value(400) }] });
    setTimeout(() => gateway.releaseProduce(), 50);
    await Promise.all([...held, waiting]);
  });

  it('refuses a record larger than the whole buffer at once', async () => {
    const { producer } = await setUp({ orders: 1 }, { bufferMemoryBytes: 500 });
    const error = await rejection(
      producer.send({ topic: 'orders', messages: [{ value: value(600) }] }),
    );
    expect(error.code).toBe('MESSAGE_TOO_LARGE');
  });

  it('retries retriable errors with backoff and fails others naming the partition', async () => {
    const { gateway, producer } = await setUp(
      { orders: 2 },
      { lingerMs: 0, retries: 3, retryBackoffMs: 10 },
    );
    gateway.produceErrorHook = (_topic, partition, attempt) => {
      if (partition === 0 && attempt <= 2) {
        return { code: 'NOT_LEADER_OR_FOLLOWER', message: 'leader moved', retriable: true };
      }
      if (partition === 1) {
        return { code: 'INVALID_RECORD', message: 'bad timestamp', retriable: false };
      }
      return undefined;
    };
    const [result] = await producer.send({
      topic: 'orders',
      messages: [{ partition: 0, value: 'x' }],
    });
    expect(result!.offset).toBe(0n);
    expect(gateway.produceRequests).toHaveLength(3);
    const error = await rejection(
      producer.send({ topic: 'orders', messages: [{ partition: 1, value: 'y' }] }),
    );
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.message).toBe('orders[1]: bad timestamp');
    expect(gateway.produceRequests).toHaveLength(4);
  });

  it('answers sendEach message by message: offsets where batches landed, errors where not', async () => {
    const { gateway, producer } = await setUp({ orders: 2 }, { lingerMs: 0, retries: 0 });
    gateway.produceErrorHook = (_topic, partition) =>
      partition === 1
        ? { code: 'INVALID_RECORD', message: 'bad timestamp', retriable: false }
        : undefined;
    const outcomes = await producer.sendEach({
      topic: 'orders',
      messages: [
        { partition: 0, value: 'a' },
        { partition: 1, value: 'b' },
        { partition: 0, value: 'c' },
      ],
    });
    expect(outcomes.map(({ partition, offset }) => ({ partition, offset }))).toEqual([
      { partition: 0, offset: 0n },
      { partition: 1, offset: -1n },
      { partition: 0, offset: 1n },
    ]);
    expect(outcomes.map((outcome) => outcome.error?.code)).toEqual([
      undefined,
      'INVALID_RECORD',
      undefined,
    ]);
    expect(outcomes[1]!.error!.message).toBe('orders[1]: bad timestamp');
  });

  it('gives up after the retries with the last retriable error', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { lingerMs: 0, retries: 2, retryBackoffMs: 5 },
    );
    gateway.produceErrorHook = () => ({
      code: 'NOT_ENOUGH_REPLICAS',
      message: 'isr 1',
      retriable: true,
    });
    const error = await rejection(producer.send({ topic: 'orders', messages: [{ value: 'x' }] }));
    expect(error.code).toBe('NOT_ENOUGH_REPLICAS');
    expect(error.retriable).toBe(true);
    expect(gateway.produceRequests).toHaveLength(3);
  });

  it('describes the topic again after UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 0, retryBackoffMs: 5 });
    gateway.produceErrorHook = (_topic, _partition, attempt) =>
      attempt === 1
        ? { code: 'UNKNOWN_TOPIC_OR_PARTITION', message: 'not here yet', retriable: true }
        : undefined;
    await producer.send({ topic: 'orders', messages: [{ value: 'x' }] });
    await producer.send({ topic: 'orders', messages: [{ value: 'y' }] });
    expect(gateway.describeTopicsCalls).toBe(2);
  });

  it('fails a send to a missing topic after maxBlockMs, and to a missing partition', async () => {
    const { producer } = await setUp({ orders: 2 }, { maxBlockMs: 200, retryBackoffMs: 20 });
    const missingTopic = await rejection(
      producer.send({ topic: 'nope', messages: [{ value: 'x' }] }),
    );
    expect(missingTopic.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(missingTopic.message).toMatch(/topic nope/);
    const missingPartition = await rejection(
      producer.send({ topic: 'orders', messages: [{ partition: 5, value: 'x' }] }),
    );
    expect(missingPartition.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(missingPartition.message).toMatch(/orders\[5\]: the topic has 2 partitions/);
  });

  it('compresses batches with the configured codec', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 0, compression: 'zstd' });
    await producer.send({ topic: 'orders', messages: [{ value: value(1_000) }] });
    const [stored] = gateway.storedBatches('orders', 0);
    const decoded = decodeRecordBatch(stored!);
    expect(decoded.header.compressionType).toBe(CompressionType.Zstd);
    expect(decoded.records[0]!.value!.toString()).toBe(value(1_000));
  });

  it('flushes lingering records on disconnect and refuses sends afterwards', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { lingerMs: 60_000 });
    const pending = producer.send({ topic: 'orders', messages: [{ value: 'late' }] });
    // The record lingers in its batch once the topic's metadata came: then disconnect.
    await expect.poll(() => gateway.describeTopicsCalls).toBeGreaterThan(0);
    await producer.disconnect();
    expect((await pending)[0]!.offset).toBe(0n);
    expect(gateway.produceRequests).toHaveLength(1);
    const error = await rejection(producer.send({ topic: 'orders', messages: [{ value: 'x' }] }));
    expect(error.code).toBe('CLIENT_CLOSED');
  });

  it('refuses settings that conflict with idempotence and bad settings with clear errors', async () => {
    const spool = new Spool({ brokers: ['127.0.0.1:1'], logLevel: 'silent' });
    const conflicting = (options: ProducerOptions): SpoolError | undefined => {
      try {
        spool.producer({ enableIdempotence: true, ...options });
      } catch (error) {
        return error as SpoolError;
      }
      return undefined;
    };
    expect(conflicting({ acks: 1 })).toMatchObject({
      code: 'INVALID_CONFIG',
      message: "setting acks must be 'all' (or -1) with enableIdempotence, got 1",
    });
    expect(conflicting({ maxInFlight: 6 })?.message).toBe(
      'setting maxInFlight must be at most 5 with enableIdempotence, got 6',
    );
    expect(conflicting({ retries: 0 })?.message).toBe(
      'setting retries must be at least 1 with enableIdempotence, got 0',
    );
    expect(conflicting({ acks: -1, maxInFlight: 5, retries: 1 })).toBeUndefined();
    expect(() => spool.producer({ enableIdempotence: 'yes' as never })).toThrow(
      /setting enableIdempotence must be one of true, false, got "yes"/,
    );
    expect(() => spool.producer({ lingerMs: -1 })).toThrow(/setting lingerMs must be .*got -1/);
    expect(() => spool.producer({ compression: 'brotli' as never })).toThrow(
      /setting compression must be one of none, gzip, snappy, lz4, zstd, got "brotli"/,
    );
    expect(() => new Spool({ brokers: ['no-port'] })).toThrow(/setting brokers must be host:port/);
  });
});
