// Proves the consumer against a fake gateway (a real grpc-js server on loopback that counts the
// credit each Consume stream was granted): assigned partitions are consumed with exact bigint
// offsets past 2^53, end to end from the producer; records below the requested offset in a batch
// that starts before it are skipped; a slow handler holds the credit back, so the gateway stops
// sending until the handler finishes and credit is granted again; OFFSET_OUT_OF_RANGE (before the
// log start, past the end) resets by autoOffsetReset and emits offsetReset, or fails with `none`
// naming partition, offset and range; seek, pause, resume, the async iterator, subscriptions
// without a group, and the refusal of assign in a group (groups: consumer-group.spec.ts).
import { SpoolError } from '@spool/common';
import type { RecordInput } from '@spool/record-batch';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumerOptions } from './config';
import type { Consumer } from './consumer';
import type { OffsetReset } from './consumer-fetcher';
import type { ConsumedMessage } from './message';
import { Spool } from './spool';
import { FakeGateway, expectSteady } from './testing';

let gateway: FakeGateway | undefined;
const clients: { disconnect(): Promise<void> }[] = [];

async function setUp(
  topics: Record<string, number>,
  options: ConsumerOptions = {},
): Promise<{ gateway: FakeGateway; spool: Spool; consumer: Consumer }> {
  gateway = await FakeGateway.start(topics);
  const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
  const consumer = spool.consumer({ retryBackoffMs: 10, ...options });
  clients.push(consumer);
  return { gateway, spool, consumer };
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.disconnect()));
  await gateway?.stop();
  gateway = undefined;
});

function records(values: readonly string[]): RecordInput[] {
  return values.map((value, index) => ({
    key: Buffer.from(`k${index}`),
    value: Buffer.from(value),
    timestampMs: 1_700_000_000_000n + BigInt(index),
  }));
}

/** Runs eachMessage until `count` messages arrived; returns them. */
async function collect(consumer: Consumer, count: number): Promise<ConsumedMessage[]> {
  const received: ConsumedMessage[] = [];
  await new Promise<void>((resolve, reject) => {
    consumer.on('crash', reject);
    void consumer
      .run({
        eachMessage: async ({ message }) => {
          received.push(message);
          if (received.length === count) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.stop();
  return received;
}

describe('Consumer', () => {
  it('consumes produced records with exact bigint offsets beyond 2^53, end to end', async () => {
    const { gateway, spool, consumer } = await setUp({ events: 1 });
    const start = 2n ** 53n + 1n;
    gateway.setLogStartOffset('events', 0, start);
    const producer = spool.producer({ lingerMs: 0 });
    clients.push(producer);
    const produced = await producer.send({
      topic: 'events',
      messages: ['a', 'b', 'c'].map((value) => ({ value, headers: { trace: ['t1', 't2'] } })),
    });
    expect(produced.map((result) => result.offset)).toEqual([start, start + 1n, start + 2n]);
    consumer.assign([{ topic: 'events', partition: 0, offset: start + 1n }]);
    const received = await collect(consumer, 2);
    expect(received.map((message) => [message.offset, message.value?.toString()])).toEqual([
      [9_007_199_254_740_994n, 'b'],
      [9_007_199_254_740_995n, 'c'],
    ]);
    expect(received[0]!.headers).toEqual([
      { key: 'trace', value: Buffer.from('t1') },
      { key: 'trace', value: Buffer.from('t2') },
    ]);
    expect(typeof received[0]!.timestamp).toBe('bigint');
    expect(consumer.position('events', 0)).toBe(start + 3n);
  });

  it('keeps a list of headers in its order, repeated names included, and refuses a bad header', async () => {
    const { spool, consumer } = await setUp({ events: 1 });
    const producer = spool.producer({ lingerMs: 0 });
    clients.push(producer);
    const headers = [
      { key: 'a', value: '1' },
      { key: 'b', value: null },
      { key: 'a', value: Buffer.from('2') },
    ];
    await producer.send({ topic: 'events', messages: [{ value: 'v', headers }] });
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const [received] = await collect(consumer, 1);
    expect(received!.headers).toEqual([
      { key: 'a', value: Buffer.from('1') },
      { key: 'b', value: null },
      { key: 'a', value: Buffer.from('2') },
    ]);
    await expect(
      producer.send({
        topic: 'events',
        messages: [{ value: 'v', headers: [{ value: 'no key' }] as never }],
      }),
    ).rejects.toThrow(/topic events message 0: header 0 must be \{ key: string, value \}/);
  });

  it('skips the records below the requested offset in a batch that starts before it', async () => {
    const { gateway, consumer } = await setUp({ events: 1 });
    gateway.appendBatch('events', 0, records(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']));
    consumer.assign([{ topic: 'events', partition: 0, offset: 4n }]);
    const received = await collect(consumer, 2);
    expect(received.map((message) => message.offset)).toEqual([4n, 5n]);
    expect(gateway.consumeStreams[0]!.partitions[0]!.fetchOffset).toBe(4n);
  });

  it('holds credit back while the handler is busy, so the gateway stops sending', async () => {
    const batchCount = 40;
    const { gateway, consumer } = await setUp(
      { events: 1 },
      { maxBytesPerPartition: 4_096, maxBytes: 4_096 },
    );
    for (let index = 0; index < batchCount; index++) {
      gateway.appendBatch('events', 0, records([`${index}:`.padEnd(900, '.')]));
    }
    const batchBytes = gateway.storedBatches('events', 0)[0]!.length;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const received: bigint[] = [];
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (received.length === 0) await released;
          received.push(message.offset);
          if (received.length === batchCount) resolve();
        },
      });
    });
    await expect.poll(() => (gateway.consumeStreams[0]?.sentBytes ?? 0) > 0).toBe(true);
    const stream = gateway.consumeStreams.at(-1)!;
    await expectSteady(
      () => [stream.grantedCreditBytes, stream.regrantCount],
      300,
      'the credit of a blocked consumer',
    );
    // Blocked: only the initial grant, and the gateway sent what it covered and no more.
    expect(stream.grantedCreditBytes).toBe(4_096);
    expect(stream.regrantCount).toBe(0);
    expect(stream.sentBytes).toBeLessThanOrEqual(4_096 + batchBytes);
    expect(stream.sentBytes).toBeLessThan(batchCount * batchBytes);
    release();
    await done;
    expect(received).toEqual(Array.from({ length: batchCount }, (_, index) => BigInt(index)));
    expect(stream.regrantCount).toBeGreaterThan(0);
    expect(stream.grantedCreditBytes).toBeGreaterThan(4_096);
    // The gateway never got ahead of the credit by more than the batch it was sending.
    expect(stream.sentBytes).toBeLessThanOrEqual(stream.grantedCreditBytes + batchBytes);
  });

  it('moves to a new assignment while running', async () => {
    const { gateway, consumer } = await setUp({ events: 2 });
    gateway.appendBatch('events', 0, records(['p0']));
    gateway.appendBatch('events', 1, records(['p1']));
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString());
          if (seen.length === 1) consumer.assign([{ topic: 'events', partition: 1, offset: 0n }]);
          if (seen.length === 2) resolve();
        },
      });
    });
    expect(seen).toEqual(['p0', 'p1']);
    expect(consumer.assignment()).toEqual([{ topic: 'events', partition: 1 }]);
  });

  it('resets a position before the log start to it with autoOffsetReset earliest, and says so', async () => {
    const { gateway, consumer } = await setUp({ events: 1 }, { autoOffsetReset: 'earliest' });
    gateway.setLogStartOffset('events', 0, 100n);
    gateway.appendBatch('events', 0, records(['first', 'second']));
    const resets: OffsetReset[] = [];
    consumer.on('offsetReset', (reset) => resets.push(reset));
    consumer.assign([{ topic: 'events', partition: 0, offset: 5n }]);
    const received = await collect(consumer, 2);
    expect(received.map((message) => message.offset)).toEqual([100n, 101n]);
    expect(resets).toEqual([
      {
        topic: 'events',
        partition: 0,
        offset: 5n,
        logStartOffset: 100n,
        highWatermark: 102n,
        policy: 'earliest',
        resetTo: 100n,
      },
    ]);
  });

  it('resets a position past the end to the high watermark with latest, and reads on', async () => {
    const { gateway, consumer } = await setUp({ events: 1 }, { autoOffsetReset: 'latest' });
    gateway.appendBatch('events', 0, records(['a', 'b', 'c']));
    const reset = new Promise<OffsetReset>((resolve) => consumer.on('offsetReset', resolve));
    consumer.assign([{ topic: 'events', partition: 0, offset: 1_000_000_000n }]);
    const collecting = collect(consumer, 1);
    expect(await reset).toMatchObject({ offset: 1_000_000_000n, policy: 'latest', resetTo: 3n });
    gateway.appendBatch('events', 0, records(['d']));
    const [message] = await collecting;
    expect([message!.offset, message!.value?.toString()]).toEqual([3n, 'd']);
  });

  it('fails with OFFSET_OUT_OF_RANGE naming partition, offset and range with none', async () => {
    const { gateway, consumer } = await setUp({ events: 2 }, { autoOffsetReset: 'none' });
    gateway.setLogStartOffset('events', 1, 100n);
    gateway.appendBatch('events', 1, records(['a', 'b']));
    consumer.assign([{ topic: 'events', partition: 1, offset: 1_000_000_000n }]);
    const crash = new Promise<Error>((resolve) => consumer.on('crash', resolve));
    await consumer.run({ eachMessage: async () => {} });
    const error = (await crash) as SpoolError;
    expect(error).toBeInstanceOf(SpoolError);
    expect(error.code).toBe('OFFSET_OUT_OF_RANGE');
    expect(error.retriable).toBe(false);
    expect(error.message).toBe(
      'events[1]: offset 1000000000 is out of range: valid offsets are 100 to 102 (the log ' +
        'start offset to the high watermark), and autoOffsetReset is none',
    );
  });

  it('starts at the high watermark without an offset (latest) and refuses none', async () => {
    const { gateway, spool, consumer } = await setUp({ events: 1 });
    gateway.appendBatch('events', 0, records(['old']));
    consumer.assign([{ topic: 'events', partition: 0 }]);
    const collecting = collect(consumer, 1);
    await expect.poll(() => gateway.consumeStreams.length > 0).toBe(true);
    gateway.appendBatch('events', 0, records(['new']));
    expect((await collecting).map((message) => message.value?.toString())).toEqual(['new']);

    const strict = spool.consumer({ autoOffsetReset: 'none' });
    clients.push(strict);
    strict.assign([{ topic: 'events', partition: 0 }]);
    const error = await strict
      .run({ eachMessage: async () => {} })
      .then(() => new Promise<Error>((resolve) => strict.on('crash', resolve)));
    expect((error as SpoolError).code).toBe('NO_OFFSET_FOR_PARTITION');
  });

  it('iterates with for await, and breaking out stops the consumer', async () => {
    const { gateway, consumer } = await setUp({ events: 1 });
    gateway.appendBatch('events', 0, records(['a', 'b', 'c', 'd']));
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const values: string[] = [];
    for await (const message of consumer) {
      values.push(message.value!.toString());
      if (values.length === 3) break;
    }
    expect(values).toEqual(['a', 'b', 'c']);
    expect(consumer.position('events', 0)).toBe(3n);
    await expect.poll(() => gateway.consumeStreams.every((stream) => stream.ended)).toBe(true);
  });

  it('seeks while running, and pauses and resumes a partition', async () => {
    const { gateway, consumer } = await setUp({ events: 2 });
    gateway.appendBatch('events', 0, records(['a0', 'a1', 'a2']));
    gateway.appendBatch('events', 1, records(['b0']));
    consumer.assign([
      { topic: 'events', partition: 0, offset: 0n },
      { topic: 'events', partition: 1, offset: 0n },
    ]);
    consumer.pause([{ topic: 'events', partitions: [1] }]);
    expect(consumer.paused()).toEqual([{ topic: 'events', partitions: [1] }]);
    const seen: string[] = [];
    let seeked = false;
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString());
          if (message.value!.toString() === 'a2' && !seeked) {
            seeked = true;
            consumer.seek({ topic: 'events', partition: 0, offset: 1n });
            consumer.resume([{ topic: 'events' }]);
          }
          if (seen.includes('b0') && seen.filter((value) => value === 'a2').length === 2) resolve();
        },
      });
    });
    expect(seen.slice(0, 3)).toEqual(['a0', 'a1', 'a2']);
    expect(seen.slice(3).sort()).toEqual(['a1', 'a2', 'b0']);
  });

  it('seeks 1,500 times on one connection: each old stream is half-closed, never reset', async () => {
    // HTTP/2 servers limit how fast a client resets streams (nghttp2: a burst of 1,000, then 33 a
    // second) and close the connection past it; a consumer that cancelled a stream per seek lost
    // its connection after about 1,000 quick seeks.
    const { gateway, consumer } = await setUp({ events: 1 });
    const values = Array.from({ length: 50 }, (_, index) => `r${index}`);
    gateway.appendBatch('events', 0, records(values));
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const seeks = 1_500;
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer.on('crash', reject);
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString());
          if (seen.length > seeks) return resolve();
          consumer.seek({ topic: 'events', partition: 0, offset: BigInt((seen.length * 7) % 50) });
        },
      });
    });
    // Each seek's first message is the record at the offset sought.
    expect(seen.slice(1, 4)).toEqual(['r7', 'r14', 'r21']);
    expect(gateway.consumeStreams.length).toBeGreaterThan(seeks);
    await expect
      .poll(() => gateway.consumeStreams.slice(0, seeks).every((stream) => stream.ended === true))
      .toBe(true);
    const endings = gateway.consumeStreams.slice(0, seeks).map((stream) => stream.endedBy);
    expect(endings.filter((endedBy) => endedBy !== 'client-end')).toEqual([]);
  }, 60_000);

  it('delivers whole batches with eachBatch', async () => {
    const { gateway, consumer } = await setUp({ events: 1 });
    gateway.appendBatch('events', 0, records(['a', 'b']));
    gateway.appendBatch('events', 0, records(['c']));
    consumer.assign([{ topic: 'events', partition: 0, offset: 1n }]);
    const batches: string[][] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachBatch: async ({ batch, isStale, isRunning }) => {
          expect(isStale()).toBe(false);
          expect(isRunning()).toBe(true);
          expect(batch.highWatermark).toBe(3n);
          batches.push(batch.messages.map((message) => message.value!.toString()));
          if (batches.flat().length === 2) resolve();
        },
      });
    });
    expect(batches.flat()).toEqual(['b', 'c']);
  });

  it('subscribes without a group to every partition of named and matching topics', async () => {
    const { gateway, consumer } = await setUp({ 'audit-a': 2, 'audit-b': 1, other: 1 });
    gateway.appendBatch('audit-a', 1, records(['a1']));
    gateway.appendBatch('audit-b', 0, records(['b0']));
    gateway.appendBatch('other', 0, records(['o0']));
    await consumer.subscribe({ topics: [/^audit-/], fromBeginning: true });
    const received = await collect(consumer, 2);
    expect(received.map((message) => `${message.topic}[${message.partition}]`).sort()).toEqual([
      'audit-a[1]',
      'audit-b[0]',
    ]);
    expect(consumer.assignment()).toHaveLength(3);
  });

  it('refuses assign in a group, and group settings without a groupId, naming them', async () => {
    const { spool } = await setUp({ events: 1 });
    const member = spool.consumer({ groupId: 'billing' });
    clients.push(member);
    let error: SpoolError | undefined;
    try {
      member.assign([{ topic: 'events', partition: 0 }]);
    } catch (caught) {
      error = caught as SpoolError;
    }
    expect(error?.code).toBe('INVALID_REQUEST');
    expect(error?.message).toMatch(/member of group billing.*subscribe instead/);
    expect(() => spool.consumer({ enableAutoCommit: false })).toThrow(
      /setting enableAutoCommit must be used with groupId/,
    );
    expect(() =>
      spool.consumer({ groupId: 'g', groupRemoteAssignor: 'sticky' as 'range' }),
    ).toThrow(/setting groupRemoteAssignor must be one of uniform, range, got "sticky"/);
    await expect(member.commit()).rejects.toThrow(/not running in group billing/);
  });
});

describe('Consumer stream failures', () => {
  it('opens a new stream after retriable failures and gives up after `retries`', async () => {
    const { gateway, spool, consumer } = await setUp({ events: 1 }, { retries: 3 });
    gateway.appendBatch('events', 0, records(['survived']));
    gateway.failConsumeStreams(
      2,
      new SpoolError('NOT_LEADER_OR_FOLLOWER', 'moved', { retriable: true }),
    );
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    expect((await collect(consumer, 1))[0]!.value?.toString()).toBe('survived');
    expect(gateway.consumeStreams.length).toBeGreaterThanOrEqual(3);

    gateway.failConsumeStreams(10, new SpoolError('UNAVAILABLE', 'down', { retriable: true }));
    const stubborn = spool.consumer({ retries: 2, retryBackoffMs: 5 });
    clients.push(stubborn);
    stubborn.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const crash = new Promise<Error>((resolve) => stubborn.on('crash', resolve));
    await stubborn.run({ eachMessage: async () => {} });
    const error = (await crash) as SpoolError;
    expect(error.code).toBe('UNAVAILABLE');

    gateway.failConsumeStreams(
      1,
      new SpoolError('TOPIC_AUTHORIZATION_FAILED', 'no', { retriable: false }),
    );
    const refused = spool.consumer();
    clients.push(refused);
    refused.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const iterator = refused[Symbol.asyncIterator]();
    const failure = await iterator.next().then(
      () => undefined,
      (caught: unknown) => caught as SpoolError,
    );
    expect(failure?.code).toBe('TOPIC_AUTHORIZATION_FAILED');
  });

  it('passes a handler error on unchanged and stops at the failed message', async () => {
    const { gateway, consumer } = await setUp({ events: 1 });
    gateway.appendBatch('events', 0, records(['ok', 'boom', 'after']));
    consumer.assign([{ topic: 'events', partition: 0, offset: 0n }]);
    const handlerError = new Error('handler failed');
    const crash = new Promise<Error>((resolve) => consumer.on('crash', resolve));
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value!.toString() === 'boom') throw handlerError;
      },
    });
    expect(await crash).toBe(handlerError);
    expect(consumer.position('events', 0)).toBe(1n);
  });
});
