// Proves the admin client against a fake gateway (a real grpc-js server on loopback): topics are
// created, listed, described and deleted; per-topic errors throw one SpoolError that names each
// failed topic and code (createTopics resolves false when every topic already existed, as in
// KafkaJS); partition offsets come back as bigints.
import { afterEach, describe, expect, it } from 'vitest';
import type { Admin } from './admin';
import { Spool } from './spool';
import { FakeGateway, rejection } from './testing';

let gateway: FakeGateway | undefined;
let admin: Admin | undefined;

async function setUp(
  topics: Record<string, number>,
): Promise<{ gateway: FakeGateway; admin: Admin }> {
  gateway = await FakeGateway.start(topics);
  admin = new Spool({ brokers: [gateway.address], logLevel: 'silent' }).admin({ retries: 0 });
  return { gateway, admin };
}

afterEach(async () => {
  await admin?.disconnect();
  await gateway?.stop();
  gateway = undefined;
  admin = undefined;
});

describe('Admin', () => {
  it('creates, lists, describes and deletes topics', async () => {
    const { admin } = await setUp({ existing: 1 });
    await admin.connect();
    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] })).toBe(
      true,
    );
    expect(await admin.listTopics()).toEqual(['existing', 'orders']);
    const [orders] = await admin.describeTopics({ topics: ['orders'] });
    expect(orders!.partitions.map((partition) => partition.partition)).toEqual([0, 1, 2]);
    const metadata = await admin.fetchTopicMetadata({ topics: ['orders'] });
    expect(metadata.topics[0]!.partitions[2]).toMatchObject({ partitionId: 2, leader: 1 });
    await admin.deleteTopics({ topics: ['orders'] });
    expect(await admin.listTopics()).toEqual(['existing']);
  });

  it('resolves createTopics false when every topic already exists, and throws otherwise', async () => {
    const { admin } = await setUp({ existing: 1 });
    expect(await admin.createTopics({ topics: [{ topic: 'existing' }] })).toBe(false);
    const single = await rejection(
      admin.createTopics({ topics: [{ topic: 'empty', numPartitions: 0 }] }),
    );
    expect(single.code).toBe('INVALID_PARTITIONS');
    expect(single.message).toBe('create topics: topic empty: needs partitions');
    const several = await rejection(
      admin.createTopics({
        topics: [{ topic: 'empty', numPartitions: 0 }, { topic: 'existing' }, { topic: 'fine' }],
      }),
    );
    expect(several.code).toBe('INVALID_PARTITIONS');
    expect(several.message).toMatch(
      /failed for 2 topics: topic empty: INVALID_PARTITIONS .*topic existing: TOPIC_ALREADY_EXISTS/,
    );
    expect(several.details).toEqual({
      empty: 'INVALID_PARTITIONS',
      existing: 'TOPIC_ALREADY_EXISTS',
    });
  });

  it('throws UNKNOWN_TOPIC_OR_PARTITION naming a missing topic', async () => {
    const { admin } = await setUp({});
    const described = await rejection(admin.describeTopics({ topics: ['ghost'] }));
    expect(described.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(described.message).toMatch(/^topic ghost: /);
    const deleted = await rejection(admin.deleteTopics({ topics: ['ghost'] }));
    expect(deleted.message).toMatch(/topic ghost/);
  });

  it('fetches partition offsets as bigints: log start (low) and high watermark', async () => {
    const { gateway, admin } = await setUp({ orders: 2 });
    gateway.setLogStartOffset('orders', 1, 2n ** 60n);
    gateway.appendBatch('orders', 1, [{ key: null, value: Buffer.from('x'), timestampMs: 1n }]);
    expect(await admin.fetchTopicOffsets('orders')).toEqual([
      { partition: 0, offset: 0n, high: 0n, low: 0n },
      { partition: 1, offset: 2n ** 60n + 1n, high: 2n ** 60n + 1n, low: 2n ** 60n },
    ]);
  });
});
