// Proves the idempotent producer against the fake gateway, whose partitions check producer
// epochs and sequences as leaders do: the producer asks InitProducerId once before its first
// send and stamps id, epoch and per-partition sequences (counted in records); answers lost
// after the write are retried with the same sequence and the log holds every record once; with
// five batches in flight, a batch retried after a transient error lands before the later ones
// (OUT_OF_ORDER answers of those are retried, not failed); UNKNOWN_PRODUCER_ID and
// INVALID_PRODUCER_EPOCH bump the epoch and resend a batch that was never possibly written, but
// fail one that may have been (a duplicate cannot be ruled out); a gap fails its batch with
// OUT_OF_ORDER_SEQUENCE_NUMBER and bumps the epoch; a failing InitProducerId fails the sends.
import { SpoolError } from '@spool/common';
import { RecordBatchHeader, decodeRecordBatch } from '@spool/record-batch';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProducerOptions } from './config';
import type { Producer } from './producer';
import { Spool } from './spool';
import { FakeGateway, rejection } from './testing';

let gateway: FakeGateway | undefined;
const producers: Producer[] = [];

async function setUp(
  topics: Record<string, number>,
  options: ProducerOptions = {},
): Promise<{ gateway: FakeGateway; producer: Producer }> {
  gateway = await FakeGateway.start(topics);
  const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
  const producer = spool.producer({
    enableIdempotence: true,
    lingerMs: 0,
    retryBackoffMs: 1,
    ...options,
  });
  producers.push(producer);
  return { gateway, producer };
}

afterEach(async () => {
  gateway?.releaseProduce();
  await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));
  await gateway?.stop();
  gateway = undefined;
});

function stored(topic: string, partition: number): string[] {
  return gateway!
    .storedBatches(topic, partition)
    .flatMap((bytes) =>
      decodeRecordBatch(bytes, 0).records.map((record) => record.value!.toString()),
    );
}

function headers(topic: string, partition: number): RecordBatchHeader[] {
  return gateway!.storedBatches(topic, partition).map((bytes) => new RecordBatchHeader(bytes, 0));
}

/** Polls until `condition` holds; fails after `timeoutMs`. */
const lostAnswer = { code: 'REQUEST_TIMED_OUT', message: 'answer lost', retriable: true };

describe('idempotent Producer', () => {
  it('gets a producer id once and numbers batches per partition in records', async () => {
    const { gateway, producer } = await setUp({ orders: 2 });
    await producer.send({ topic: 'orders', messages: [{ partition: 0, value: 'a' }] });
    await producer.send({
      topic: 'orders',
      messages: [
        { partition: 0, value: 'b' },
        { partition: 0, value: 'c' },
      ],
    });
    await producer.send({ topic: 'orders', messages: [{ partition: 1, value: 'd' }] });
    await producer.send({ topic: 'orders', messages: [{ partition: 0, value: 'e' }] });
    expect(gateway.initProducerIdRequests).toEqual([{ producerId: -1n, producerEpoch: -1 }]);
    expect(
      headers('orders', 0).map((header) => [
        header.producerId,
        header.producerEpoch,
        header.baseSequence,
      ]),
    ).toEqual([
      [1000n, 0, 0],
      [1000n, 0, 1],
      [1000n, 0, 3],
    ]);
    expect(headers('orders', 1).map((header) => header.baseSequence)).toEqual([0]);
  });

  it('retries answers lost after the write; the log holds every record once', async () => {
    const { gateway, producer } = await setUp({ orders: 1 });
    // Every other attempt is written but its answer is lost.
    gateway.produceAnswerHook = (_topic, _partition, attempt) =>
      attempt % 2 === 1 ? lostAnswer : undefined;
    const results = [];
    for (let index = 0; index < 6; index++) {
      results.push(
        ...(await producer.send({ topic: 'orders', messages: [{ value: `m${index}` }] })),
      );
    }
    expect(results.map((result) => result.offset)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    expect(stored('orders', 0)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    expect(gateway.produceRequests.length).toBe(12);
  });

  it('with five in flight, lands a retried batch before the later ones', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      // One record per batch, so five batches are in flight at once.
      { maxInFlight: 5, retries: 10, batchSizeBytes: 1 },
    );
    gateway.holdProduce();
    // The second batch's first attempt is refused before it is written.
    gateway.produceErrorHook = (_topic, _partition, attempt) =>
      attempt === 2
        ? { code: 'NOT_LEADER_OR_FOLLOWER', message: 'moved', retriable: true }
        : undefined;
    const sends = [0, 1, 2, 3, 4].map((index) =>
      producer.send({ topic: 'orders', messages: [{ value: `m${index}` }] }),
    );
    // All five are in flight at once (the gateway holds its answers).
    await expect.poll(() => gateway.produceRequests.length === 5, { timeout: 10_000 }).toBe(true);
    gateway.releaseProduce();
    const results = (await Promise.all(sends)).flat();
    expect(results.map((result) => result.offset)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(stored('orders', 0)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    // Batches 3-5 were refused OUT_OF_ORDER behind batch 2 and sent again, under the same epoch.
    expect(gateway.produceRequests.length).toBeGreaterThanOrEqual(9);
    expect(headers('orders', 0).map((header) => header.baseSequence)).toEqual([0, 1, 2, 3, 4]);
    expect(gateway.initProducerIdRequests).toHaveLength(1);
  });

  it('retries UNKNOWN_PRODUCER_ID behind its first batch instead of bumping the epoch', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { maxInFlight: 5, retries: 10, batchSizeBytes: 1 },
    );
    gateway.holdProduce();
    // The first batch misses the leader, so the leader does not know the producer when the
    // next four arrive.
    gateway.produceErrorHook = (_topic, _partition, attempt) =>
      attempt === 1
        ? { code: 'NOT_LEADER_OR_FOLLOWER', message: 'moved', retriable: true }
        : undefined;
    const sends = [0, 1, 2, 3, 4].map((index) =>
      producer.send({ topic: 'orders', messages: [{ value: `m${index}` }] }),
    );
    // All five are in flight at once (the gateway holds its answers).
    await expect.poll(() => gateway.produceRequests.length === 5, { timeout: 10_000 }).toBe(true);
    gateway.releaseProduce();
    const results = (await Promise.all(sends)).flat();
    expect(results.map((result) => result.offset)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(
      headers('orders', 0).map((header) => [header.producerEpoch, header.baseSequence]),
    ).toEqual([0, 1, 2, 3, 4].map((sequence) => [0, sequence]));
    expect(gateway.initProducerIdRequests).toHaveLength(1);
  });

  it('bumps the epoch on UNKNOWN_PRODUCER_ID and resends a batch never written', async () => {
    const { gateway, producer } = await setUp({ orders: 1 });
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }, { value: 'b' }] });
    gateway.setProducerState('orders', 0, 1000n, undefined);
    const [result] = await producer.send({ topic: 'orders', messages: [{ value: 'c' }] });
    expect(result!.offset).toBe(2n);
    expect(gateway.initProducerIdRequests.at(-1)).toEqual({ producerId: 1000n, producerEpoch: 0 });
    expect(
      headers('orders', 0).map((header) => [header.producerEpoch, header.baseSequence]),
    ).toEqual([
      [0, 0],
      [1, 0],
    ]);
    expect(stored('orders', 0)).toEqual(['a', 'b', 'c']);
  });

  it('fails a batch that may have been written when the leader forgot the producer', async () => {
    const { gateway, producer } = await setUp({ orders: 1 });
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    // The next batch is written, its answer is lost, and the leader forgets the producer
    // before the retry arrives: the retry cannot be told from a new batch any more.
    gateway.produceAnswerHook = (_topic, _partition, attempt) => {
      if (attempt !== 2) return undefined;
      gateway.setProducerState('orders', 0, 1000n, undefined);
      return lostAnswer;
    };
    const error = await rejection(producer.send({ topic: 'orders', messages: [{ value: 'b' }] }));
    expect(error.code).toBe('UNKNOWN_PRODUCER_ID');
    expect(error.retriable).toBe(false);
    expect(error.message).toMatch(/orders\[0\].*may or may not be in the log/);
    // The producer carries on under a new epoch.
    const [result] = await producer.send({ topic: 'orders', messages: [{ value: 'c' }] });
    expect(result!.offset).toBe(2n);
    expect(stored('orders', 0)).toEqual(['a', 'b', 'c']);
    expect(headers('orders', 0).at(-1)).toMatchObject({ producerEpoch: 1, baseSequence: 0 });
  });

  it('moves past a newer epoch that fenced it (INVALID_PRODUCER_EPOCH)', async () => {
    const { gateway, producer } = await setUp({ orders: 1 });
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    gateway.setProducerState('orders', 0, 1000n, { producerEpoch: 1, batches: [] });
    const [result] = await producer.send({ topic: 'orders', messages: [{ value: 'b' }] });
    expect(result!.offset).toBe(1n);
    expect(headers('orders', 0).at(-1)).toMatchObject({ producerEpoch: 1, baseSequence: 0 });
  });

  it('fails the batch after a gap with OUT_OF_ORDER_SEQUENCE_NUMBER and bumps the epoch', async () => {
    const { gateway, producer } = await setUp({ orders: 1 });
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }, { value: 'b' }] });
    // The leader lost the acknowledged batch (an unclean election): the next one is a gap.
    gateway.setProducerState('orders', 0, 1000n, {
      producerEpoch: 0,
      batches: [{ baseSequence: 7, lastSequence: 7, baseOffset: 0n, lastOffset: 0n }],
    });
    const error = await rejection(producer.send({ topic: 'orders', messages: [{ value: 'c' }] }));
    expect(error.code).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(error.message).toMatch(/orders\[0\].*bumps its epoch/);
    const [result] = await producer.send({ topic: 'orders', messages: [{ value: 'd' }] });
    expect(result!.offset).toBe(2n);
    expect(headers('orders', 0).at(-1)).toMatchObject({ producerEpoch: 1, baseSequence: 0 });
  });

  it('fails the sends when InitProducerId keeps failing, and tries again later', async () => {
    gateway = await FakeGateway.start({ orders: 1 });
    const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
    const producer = spool.producer({
      enableIdempotence: true,
      lingerMs: 0,
      retries: 1,
      retryBackoffMs: 1,
    });
    producers.push(producer);
    const realInit = gateway.initProducerIdRequests;
    let failures = 2;
    gateway.initProducerIdHook = () =>
      failures-- > 0
        ? new SpoolError('COORDINATOR_NOT_AVAILABLE', 'no coordinator', { retriable: true })
        : undefined;
    const error = await rejection(producer.send({ topic: 'orders', messages: [{ value: 'a' }] }));
    expect(error.code).toBe('COORDINATOR_NOT_AVAILABLE');
    expect(error.message).toMatch(/InitProducerId/);
    const [result] = await producer.send({ topic: 'orders', messages: [{ value: 'b' }] });
    expect(result!.offset).toBe(0n);
    expect(realInit).toHaveLength(3);
  });
});
