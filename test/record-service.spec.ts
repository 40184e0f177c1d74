// Proves the record-level API (spool.v1.RecordService) on real processes (a controller, a storage
// node, a coordinator and a gateway), through a client generated from proto/ by ts-proto:
// - Publish puts keyed records on the partitions Kafka's murmur2 partitioner (the SDK's) picks,
//   answers each record's offset, and Subscribe by partition reads them back decoded (key, value,
//   headers, timestamp), from an offset or as a long poll that gets records published later.
// - A record-level subscriber and an SDK consumer in one group share its partitions, on the same
//   coordinator, and together read every record; Commit writes the offsets the group then holds.
// - A Publish retried with its idempotency key appends nothing again; the same key with other
//   records, or a malformed key, is refused.
// - PublishStream answers every pipelined request with its sequence.
// - Bad input ends the call with a status naming the error (Kafka's name in the message and in
//   the google.rpc.ErrorInfo details) and writes nothing: an unknown topic, a partition out of
//   range, a record over max.message.bytes among valid ones.
// - A subscriber that stops reading (behind a proxy that stops reading from the gateway) holds
//   up its subscription's fetching, is ended after max_poll_interval_ms and leaves its group.
import * as grpc from '@grpc/grpc-js';
import type { Spool } from '@spool/client';
import { partitionForKey, type Admin } from '@spool/client';
import { SpoolError, createGrpcClient } from '@spool/common';
import {
  Acks,
  OffsetReset,
  RecordServiceClient,
  type ConsumedRecord,
  type PublishRequest,
  type PublishStreamResponse,
  type SubscribeRequest,
  type SubscribeResponse,
} from '@spool/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordTestCluster } from './support/record-cluster';
import { StallingProxy } from './support/stalling-proxy';

let cluster: RecordTestCluster;
let spool: Spool;
let admin: Admin;

beforeAll(async () => {
  cluster = await RecordTestCluster.start();
  spool = cluster.spool;
  admin = cluster.admin;
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

function createTopic(
  topic: string,
  partitions: number,
  configEntries: Array<{ name: string; value: string }> = [],
): Promise<void> {
  return cluster.createTopic(topic, partitions, configEntries);
}

function publish(request: Partial<PublishRequest>) {
  return cluster.call(cluster.records.publish, {
    topic: '',
    records: [],
    acks: Acks.ACKS_ALL,
    idempotencyKey: '',
    timeoutMs: 0,
    ...request,
  });
}

async function highWatermarks(topic: string): Promise<bigint[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.sort((a, b) => a.partition - b.partition).map((entry) => entry.high);
}

/** A Subscribe stream and everything it delivered. */
class Subscription {
  readonly records: ConsumedRecord[] = [];
  readonly call: grpc.ClientReadableStream<SubscribeResponse>;
  readonly ended: Promise<grpc.ServiceError | undefined>;
  id = '';

  constructor(request: Partial<SubscribeRequest>, client = cluster.records) {
    this.call = client.subscribe({
      topic: '',
      groupId: '',
      offsetReset: OffsetReset.OFFSET_RESET_UNSPECIFIED,
      autoCommitIntervalMs: 0,
      maxPollIntervalMs: 0,
      ...request,
    });
    this.call.on('data', (response: SubscribeResponse) => {
      if (response.subscriptionId !== '') this.id = response.subscriptionId;
      this.records.push(...response.records);
    });
    this.ended = new Promise((resolve) => {
      this.call.on('error', (error: grpc.ServiceError) => resolve(error));
      this.call.on('end', () => resolve(undefined));
    });
  }

  async cancel(): Promise<void> {
    this.call.cancel();
    await this.ended;
  }
}

/** The failure's Kafka code, and whether the status details carried it as ErrorInfo's reason. */
function statusOf(error: unknown): { grpcCode: number; code: string; inDetails: boolean } {
  expect(error).toBeInstanceOf(SpoolError);
  const cause = (error as SpoolError).cause as grpc.ServiceError;
  const details = cause.metadata.get('grpc-status-details-bin')[0] as Buffer;
  const code = (error as SpoolError).code;
  return {
    grpcCode: cause.code,
    code,
    inDetails:
      details.includes(Buffer.from('google.rpc.ErrorInfo')) && details.includes(Buffer.from(code)),
  };
}

describe('Publish and Subscribe by partition', () => {
  const topic = 'orders';

  it('puts keyed records where the SDK partitioner would and reads them back decoded', async () => {
    await createTopic(topic, 4);
    const records = Array.from({ length: 200 }, (_, index) => ({
      key: Buffer.from(`customer-${index % 37}`),
      value: Buffer.from(`order-${index}`),
      // Kafka's headers are a list: order and repeated names are kept as sent.
      headers: [
        { key: 'source', value: Buffer.from('spec') },
        { key: 'hop', value: Buffer.from('a') },
        { key: 'source', value: Buffer.from('again') },
      ],
      partition: undefined,
      timestampMs: 1_700_000_000_000n + BigInt(index),
    }));
    const { results } = await publish({ topic, records });
    expect(results).toHaveLength(200);
    const nextOffset = [0n, 0n, 0n, 0n];
    results.forEach((result, index) => {
      expect(result.error).toBeUndefined();
      expect(result.partition).toBe(partitionForKey(records[index]!.key, 4));
      // Within a partition, records land in the order sent, one offset after the other.
      expect(result.offset).toBe(nextOffset[result.partition]);
      nextOffset[result.partition]! += 1n;
    });
    expect(await highWatermarks(topic)).toEqual(nextOffset);

    const partition = results[0]!.partition;
    const expected = records.filter((_, index) => results[index]!.partition === partition);
    const subscription = new Subscription({ topic, partition, offset: 0n });
    await expect.poll(() => subscription.records.length).toBe(expected.length);
    subscription.records.forEach((record, index) => {
      expect(record).toEqual({
        topic,
        partition,
        offset: BigInt(index),
        timestampMs: expected[index]!.timestampMs,
        key: expected[index]!.key,
        value: expected[index]!.value,
        headers: expected[index]!.headers,
      });
    });
    // A long poll: a record published now arrives on the open stream.
    const later = await publish({
      topic,
      records: [{ key: undefined, value: Buffer.from('later'), headers: [], partition }],
    });
    await expect.poll(() => subscription.records.length).toBe(expected.length + 1);
    expect(subscription.records.at(-1)!.offset).toBe(later.results[0]!.offset);
    expect(subscription.records.at(-1)!.key).toBeUndefined();
    await subscription.cancel();
  });
});

describe('a group shared with the SDK', () => {
  it('splits partitions between a record-level subscriber and an SDK consumer', async () => {
    const topic = 'shared';
    const groupId = 'shared-group';
    await createTopic(topic, 4);
    const sdkConsumer = spool.consumer({ groupId, autoOffsetReset: 'earliest' });
    const sdkValues: string[] = [];
    await sdkConsumer.subscribe({ topic });
    await sdkConsumer.run({
      eachMessage: async ({ message }) => void sdkValues.push(message.value!.toString()),
    });
    const subscription = new Subscription({
      topic,
      groupId,
      offsetReset: OffsetReset.OFFSET_RESET_EARLIEST,
      autoCommit: false,
    });
    await expect
      .poll(
        async () => {
          const group = await admin.describeGroup(groupId);
          return group.members.map((member) => member.assignment.length).sort();
        },
        { timeout: 20_000, interval: 200 },
      )
      .toEqual([2, 2]);
    const values = Array.from({ length: 400 }, (_, index) => `value-${index}`);
    await publish({
      topic,
      records: values.map((value, index) => ({
        key: Buffer.from(`key-${index}`),
        value: Buffer.from(value),
        headers: [],
      })),
    });
    const received = () =>
      new Set([...sdkValues, ...subscription.records.map((record) => record.value!.toString())]);
    await expect.poll(() => received().size, { timeout: 15_000 }).toBe(values.length);
    expect(sdkValues.length).toBeGreaterThan(0);
    expect(subscription.records.length).toBeGreaterThan(0);

    // Commit: what the subscriber names is what the group then holds.
    const partition = subscription.records[0]!.partition;
    await cluster.call(cluster.records.commit, {
      subscriptionId: subscription.id,
      offsets: [{ partition, offset: 3n }],
    });
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(offsets!.partitions.find((entry) => entry.partition === partition)!.offset).toBe(3n);

    await subscription.cancel();
    await sdkConsumer.close();
  });

  it('refuses a Commit for a subscription it does not serve', async () => {
    const error = await cluster
      .call(cluster.records.commit, { subscriptionId: 'no-such-subscription', offsets: [] })
      .catch((failure: unknown) => failure);
    expect(statusOf(error)).toEqual({
      grpcCode: grpc.status.INVALID_ARGUMENT,
      code: 'INVALID_REQUEST',
      inDetails: true,
    });
  });
});

describe('idempotency keys', () => {
  const topic = 'payments';

  it('answers a retried call from the first one and appends nothing again', async () => {
    await createTopic(topic, 2);
    const request = {
      topic,
      idempotencyKey: 'payment-0001',
      records: [1, 2, 3].map((index) => ({
        key: Buffer.from(`account-${index}`),
        value: Buffer.from(`amount-${index}`),
        headers: [],
      })),
    };
    const first = await publish(request);
    const before = await highWatermarks(topic);
    const retried = await publish(request);
    expect(retried).toEqual(first);
    expect(await highWatermarks(topic)).toEqual(before);

    const reused = await publish({ ...request, records: request.records.slice(1) }).catch(
      (failure: unknown) => failure,
    );
    expect(statusOf(reused).code).toBe('INVALID_REQUEST');
    for (const idempotencyKey of ['has space', 'x'.repeat(129), 'ünïcode']) {
      const malformed = await publish({ ...request, idempotencyKey }).catch(
        (failure: unknown) => failure,
      );
      expect(statusOf(malformed)).toEqual({
        grpcCode: grpc.status.INVALID_ARGUMENT,
        code: 'INVALID_REQUEST',
        inDetails: true,
      });
      expect((malformed as SpoolError).message).toContain('idempotency_key');
    }
    expect(await highWatermarks(topic)).toEqual(before);
  });
});

describe('PublishStream', () => {
  it('answers each pipelined request with its sequence', async () => {
    const topic = 'stream';
    await createTopic(topic, 3);
    const call = cluster.records.publishStream();
    const answers: PublishStreamResponse[] = [];
    call.on('data', (answer: PublishStreamResponse) => answers.push(answer));
    const ended = new Promise<void>((resolve, reject) => {
      call.on('end', resolve);
      call.on('error', reject);
    });
    for (let sequence = 1n; sequence <= 20n; sequence++) {
      call.write({
        sequence,
        request: {
          topic,
          acks: Acks.ACKS_ALL,
          idempotencyKey: '',
          timeoutMs: 0,
          records: Array.from({ length: 50 }, (_, index) => ({
            key: Buffer.from(`k-${sequence}-${index}`),
            value: Buffer.from('v'),
            headers: [],
          })),
        },
      });
    }
    call.write({ sequence: 21n, request: undefined });
    call.end();
    await ended;
    expect(answers.map((answer) => answer.sequence).sort((a, b) => Number(a - b))).toEqual(
      Array.from({ length: 21 }, (_, index) => BigInt(index + 1)),
    );
    const published = answers.flatMap((answer) => answer.response?.results ?? []);
    expect(published).toHaveLength(1_000);
    expect(published.every((result) => result.error === undefined)).toBe(true);
    expect(answers.find((answer) => answer.sequence === 21n)!.error!.code).toBe('INVALID_REQUEST');
    const total = (await highWatermarks(topic)).reduce((sum, offset) => sum + offset, 0n);
    expect(total).toBe(1_000n);
  });
});

describe('bad input', () => {
  const topic = 'limits';

  it('ends each bad call with a status naming the error and writes nothing', async () => {
    await createTopic(topic, 2, [{ name: 'max.message.bytes', value: '2000' }]);
    const record = (sizeBytes: number, partition?: number) => ({
      key: undefined,
      value: Buffer.alloc(sizeBytes, 1),
      headers: [],
      partition,
    });
    const failures: Array<[string, Partial<PublishRequest>]> = [
      ['missing topic', { topic: 'no-such-topic', records: [record(10)] }],
      ['partition out of range', { topic, records: [record(10, 0), record(10, 2)] }],
      ['record over max.message.bytes', { topic, records: [record(10), record(3_000)] }],
      ['no records', { topic, records: [] }],
      ['unknown acks', { topic, records: [record(10)], acks: 7 as Acks }],
    ];
    const statuses = [];
    for (const [, request] of failures) {
      statuses.push(statusOf(await publish(request).catch((failure: unknown) => failure)));
    }
    expect(statuses).toEqual([
      { grpcCode: grpc.status.NOT_FOUND, code: 'UNKNOWN_TOPIC_OR_PARTITION', inDetails: true },
      { grpcCode: grpc.status.NOT_FOUND, code: 'UNKNOWN_TOPIC_OR_PARTITION', inDetails: true },
      { grpcCode: grpc.status.INVALID_ARGUMENT, code: 'MESSAGE_TOO_LARGE', inDetails: true },
      { grpcCode: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', inDetails: true },
      { grpcCode: expect.any(Number), code: 'INVALID_REQUIRED_ACKS', inDetails: true },
    ]);
    expect(await highWatermarks(topic)).toEqual([0n, 0n]);

    // Records that fit one by one go in batches that fit too (the leader refuses a larger one).
    const fitting = await publish({
      topic,
      records: Array.from({ length: 10 }, () => record(900, 1)),
    });
    expect(fitting.results.map((result) => result.error)).toEqual(Array(10).fill(undefined));
    expect(await highWatermarks(topic)).toEqual([0n, 10n]);

    for (const request of [
      { topic: 'no-such-topic', partition: 0 },
      { topic, partition: 5 },
      { topic },
      { topic, groupId: 'g', partition: 0 },
    ]) {
      const subscription = new Subscription(request);
      const error = await subscription.ended;
      expect(error?.details).toMatch(/^(UNKNOWN_TOPIC_OR_PARTITION|INVALID_REQUEST): /);
    }
  });

  it('ends a subscriber that stops reading and takes it out of its group', async () => {
    const slowTopic = 'unread';
    const groupId = 'unread-group';
    await createTopic(slowTopic, 1);
    // More than the loopback sockets between the gateway and the stalled proxy hold.
    const value = Buffer.alloc(1_024, 7);
    await Promise.all(
      Array.from({ length: 24 }, () =>
        publish({
          topic: slowTopic,
          records: Array.from({ length: 1_000 }, () => ({ value, headers: [] })),
        }),
      ),
    );
    const [host, port] = cluster.gatewayAddress.split(':');
    const proxy = await StallingProxy.start({ host: host!, port: Number(port) });
    const client = createGrpcClient(RecordServiceClient, proxy.address);
    try {
      const subscription = new Subscription(
        {
          topic: slowTopic,
          groupId,
          offsetReset: OffsetReset.OFFSET_RESET_EARLIEST,
          maxPollIntervalMs: 2_000,
        },
        client,
      );
      await expect
        .poll(() => subscription.records.length, { timeout: 20_000, interval: 100 })
        .toBeGreaterThan(0);
      proxy.stall();
      // The gateway gives up on it: its member leaves the group.
      await expect
        .poll(async () => (await admin.describeGroup(groupId)).members.length, {
          timeout: 20_000,
          interval: 200,
        })
        .toBe(0);
      proxy.resume();
      const error = await subscription.ended;
      expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(error?.details).toMatch(/^REQUEST_TIMED_OUT: the subscriber read nothing for 2000 ms/);
      // It got what was on its way before the gateway stopped; the rest was never fetched.
      expect(subscription.records.length).toBeLessThan(24_000);
    } finally {
      client.close();
      await proxy.close();
    }
  });
});
