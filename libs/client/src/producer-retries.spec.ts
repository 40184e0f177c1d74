// Proves how the producer retries, against the fake gateway: the defaults are Kafka's (retries
// unbounded, deliveryTimeoutMs 120 s and at least lingerMs + requestTimeoutMs, idempotence on
// unless a setting left at its default conflicts); errors are retried by Kafka's classification
// of their code, whatever flag the answer carried; a stale route has the topic described again;
// backoffs double from retryBackoffMs up to retryBackoffMaxMs, within their jitter; and a batch
// fails only once its delivery timeout has passed: retried until then, failed by the first
// answer after it, or taken out of its queue while another batch is in flight. The clock is Date
// faked by vitest: it runs at real pace (timers stay real) and a test moves it on by minutes.
import { SpoolError } from '@spool/common';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveProducerConfig, type ProducerOptions } from './config';
import type { Producer } from './producer';
import { Spool } from './spool';
import { FakeGateway } from './testing';

let gateway: FakeGateway | undefined;
const producers: Producer[] = [];
/** The SDK's log records of the test, parsed. */
let logRecords: Array<Record<string, unknown>> = [];

async function setUp(
  topics: Record<string, number>,
  options: ProducerOptions = {},
): Promise<{ gateway: FakeGateway; producer: Producer }> {
  gateway = await FakeGateway.start(topics);
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void logRecords.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const spool = new Spool({ brokers: [gateway.address], logger });
  const producer = spool.producer({ lingerMs: 0, ...options });
  producers.push(producer);
  return { gateway, producer };
}

afterEach(async () => {
  vi.useRealTimers();
  gateway?.releaseProduce();
  await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));
  await gateway?.stop();
  gateway = undefined;
  logRecords = [];
});

/** Polls (on real timers) until `condition` holds; fails after `timeoutMs`. */
/** The send's outcome, without awaiting it: 'pending' until it settles. */
function track(promise: Promise<unknown>): { state: 'pending' | 'resolved' | SpoolError } {
  const tracked: { state: 'pending' | 'resolved' | SpoolError } = { state: 'pending' };
  promise.then(
    () => (tracked.state = 'resolved'),
    (error: SpoolError) => (tracked.state = error),
  );
  return tracked;
}

const notLeader = { code: 'NOT_LEADER_OR_FOLLOWER', message: 'leader moved', retriable: true };

describe('producer settings for retries', () => {
  it("defaults to Kafka's: unbounded retries, a 120 s delivery timeout, idempotence", () => {
    const config = resolveProducerConfig({});
    expect(config.retries).toBe(2_147_483_647);
    expect(config.deliveryTimeoutMs).toBe(120_000);
    expect(config.enableIdempotence).toBe(true);
  });

  it('lets idempotence give way to a conflicting setting only when it was not asked for', () => {
    expect(resolveProducerConfig({ acks: 1 }).enableIdempotence).toBe(false);
    expect(resolveProducerConfig({ maxInFlight: 6 }).enableIdempotence).toBe(false);
    expect(resolveProducerConfig({ retries: 0 }).enableIdempotence).toBe(false);
    expect(() => resolveProducerConfig({ acks: 1, enableIdempotence: true })).toThrow(
      "setting acks must be 'all' (or -1) with enableIdempotence, got 1",
    );
  });

  it('holds deliveryTimeoutMs to at least lingerMs + requestTimeoutMs', () => {
    expect(() =>
      resolveProducerConfig({ deliveryTimeoutMs: 10_000, lingerMs: 100, requestTimeoutMs: 10_000 }),
    ).toThrow(
      'setting deliveryTimeoutMs must be at least lingerMs + requestTimeoutMs = 100 + 10000 = ' +
        '10100, got 10000',
    );
    // Left unset, the default grows to the sum instead.
    expect(
      resolveProducerConfig({ lingerMs: 1_000, requestTimeoutMs: 150_000 }).deliveryTimeoutMs,
    ).toBe(151_000);
    expect(() => resolveProducerConfig({ deliveryTimeoutMs: 0 })).toThrow(
      /setting deliveryTimeoutMs must be an integer from 1 to 2147483647, got 0/,
    );
  });
});

describe('producer retries', () => {
  it("retries by Kafka's classification of the code, not the flag the answer carried", async () => {
    const { gateway, producer } = await setUp({ orders: 2 }, { retryBackoffMs: 1 });
    gateway.produceErrorHook = (_topic, partition, attempt) => {
      // A storage node calls a stale leader epoch final; for a client it means "ask again".
      if (partition === 0 && attempt === 1) {
        return { code: 'FENCED_LEADER_EPOCH', message: 'epoch 3 < 4', retriable: false };
      }
      // A malformed record fails however the answer is flagged.
      if (partition === 1) return { code: 'INVALID_RECORD', message: 'bad', retriable: true };
      return undefined;
    };
    const [landed] = await producer.send({
      topic: 'orders',
      messages: [{ partition: 0, value: 'a' }],
    });
    expect(landed!.offset).toBe(0n);
    const error = await producer
      .send({ topic: 'orders', messages: [{ partition: 1, value: 'b' }] })
      .catch((caught: SpoolError) => caught);
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe('INVALID_RECORD');
    expect((error as SpoolError).retriable).toBe(false);
    // Partition 0: two attempts; partition 1: one.
    expect(gateway.produceRequests).toHaveLength(3);
  });

  it('describes the topic again after a stale route, while sends go on', async () => {
    const { gateway, producer } = await setUp({ orders: 1 }, { retryBackoffMs: 1 });
    gateway.produceErrorHook = (_topic, _partition, attempt) =>
      attempt <= 2 ? notLeader : undefined;
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    // The first send's describe, then one per stale answer (each after the last one finished).
    await expect.poll(() => gateway.describeTopicsCalls >= 2, { timeout: 10_000 }).toBe(true);
    expect(gateway.describeTopicsCalls).toBeLessThanOrEqual(3);
  });

  it('backs off from retryBackoffMs, doubling up to retryBackoffMaxMs, with jitter', async () => {
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { retryBackoffMs: 8, retryBackoffMaxMs: 32 },
    );
    gateway.produceErrorHook = (_topic, _partition, attempt) =>
      attempt <= 6 ? notLeader : undefined;
    await producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    const backoffs = logRecords
      .filter((record) => record.msg === 'retrying a produce batch')
      .map((record) => ({ attempt: record.attempt as number, waitMs: record.backoffMs as number }));
    expect(backoffs.map((backoff) => backoff.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const { attempt, waitMs } of backoffs) {
      const ceilingMs = Math.min(32, 8 * 2 ** (attempt - 1));
      // Full jitter over the upper half: between half the exponential value and all of it.
      expect(waitMs).toBeGreaterThanOrEqual(ceilingMs / 2);
      expect(waitMs).toBeLessThanOrEqual(ceilingMs);
    }
  });

  it('retries until the delivery timeout and fails with the first answer past it', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000, shouldAdvanceTime: true });
    const { gateway, producer } = await setUp(
      { orders: 1 },
      { retryBackoffMs: 1, retryBackoffMaxMs: 2, deliveryTimeoutMs: 60_000 },
    );
    gateway.produceErrorHook = () => notLeader;
    const send = track(producer.send({ topic: 'orders', messages: [{ value: 'a' }] }));
    // Well within the delivery timeout, however many attempts fail, the batch is retried.
    await expect.poll(() => gateway.produceRequests.length >= 20, { timeout: 10_000 }).toBe(true);
    expect(send.state).toBe('pending');
    // The next attempt is held in flight while the clock passes the delivery timeout.
    gateway.holdProduce();
    const attemptsBefore = gateway.produceRequests.length;
    await expect
      .poll(() => gateway.produceRequests.length > attemptsBefore, { timeout: 10_000 })
      .toBe(true);
    vi.setSystemTime(1_000_000 + 61_000);
    gateway.releaseProduce();
    await expect.poll(() => send.state !== 'pending', { timeout: 10_000 }).toBe(true);
    const error = send.state as SpoolError;
    expect(error.code).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(error.message).toMatch(
      /^orders\[0\]: leader moved; not retried: 6\d{4} ms passed since the batch was created, past deliveryTimeoutMs=60000/,
    );
  });

  it('expires a queued batch behind one in flight, naming the error it was retried for', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000, shouldAdvanceTime: true });
    const { gateway, producer } = await setUp(
      { orders: 2 },
      { retryBackoffMs: 1, retryBackoffMaxMs: 1, deliveryTimeoutMs: 60_000, maxInFlight: 1 },
    );
    gateway.produceErrorHook = (_topic, partition, attempt) =>
      partition === 0 && attempt === 1 ? notLeader : undefined;
    // The first batch of partition 0 fails once; its retry is held in flight.
    gateway.holdProduce();
    const first = track(
      producer.send({ topic: 'orders', messages: [{ partition: 0, value: 'a' }] }),
    );
    await expect.poll(() => gateway.produceRequests.length === 1, { timeout: 10_000 }).toBe(true);
    gateway.releaseProduce();
    gateway.holdProduce();
    await expect.poll(() => gateway.produceRequests.length === 2, { timeout: 10_000 }).toBe(true);
    // A second batch of partition 0 queues behind it (one in flight per partition).
    vi.setSystemTime(1_000_000 + 30_000);
    const second = track(
      producer.send({ topic: 'orders', messages: [{ partition: 0, value: 'b' }] }),
    );
    // Admitted (the topic's partitions are cached) before the clock moves on.
    await new Promise((resolve) => setImmediate(resolve));
    // Created 30 s after the first, it has 30 s left when the first's time is up...
    vi.setSystemTime(1_000_000 + 60_000);
    // ...and nothing that is only queued outlives its timeout: a send elsewhere wakes the sender.
    const elsewhere = producer.send({ topic: 'orders', messages: [{ partition: 1, value: 'c' }] });
    await expect.poll(() => gateway.produceRequests.length === 3, { timeout: 10_000 }).toBe(true);
    expect(first.state).toBe('pending');
    expect(second.state).toBe('pending');
    // A second past its timeout (the clock also runs on at real pace from each setting).
    vi.setSystemTime(1_000_000 + 30_000 + 61_000);
    const later = producer.send({ topic: 'orders', messages: [{ partition: 1, value: 'd' }] });
    await expect.poll(() => second.state !== 'pending', { timeout: 10_000 }).toBe(true);
    const error = second.state as SpoolError;
    expect(error.code).toBe('REQUEST_TIMED_OUT');
    expect(error.message).toMatch(
      /^orders\[0\]: 1 record expired: 6\d{4} ms passed since the batch was created, past deliveryTimeoutMs=60000, after 0 attempts$/,
    );
    expect(first.state).toBe('pending');
    gateway.releaseProduce();
    await expect.poll(() => first.state !== 'pending', { timeout: 10_000 }).toBe(true);
    // The first was in flight at its timeout: its answer, a success, is final.
    expect(first.state).toBe('resolved');
    await Promise.all([elsewhere, later]);
  });
});
