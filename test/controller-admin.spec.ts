// Proves the controller's admin and broker contracts on a real controller process (local
// metadata backend): topics are created with Kafka's placement and validation, every bad input
// gets Kafka's error name and a message naming the field while nothing is partially created,
// WatchMetadata streams a snapshot then deltas, a broker that stops heartbeating loses its
// leaderships within the session timeout and gets its preferred leaderships back when it returns,
// a second live process claiming a broker id is refused, and topics survive a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpoolError } from '@spool/common';
import { ControllerTestClient, FakeBroker, eventually } from './support/controller-client';
import { startServiceProcess, type ServiceProcess } from './support/service-process';

const sessionTimeoutMs = 1_500;
const directory = mkdtempSync(path.join(tmpdir(), 'spool-controller-'));
const controllerArgs = [
  '--metadata-path',
  path.join(directory, 'metadata.journal'),
  '--broker-session-timeout-ms',
  String(sessionTimeoutMs),
  '--leader-imbalance-check-interval-ms',
  '200',
];
let controller: ServiceProcess;
let client: ControllerTestClient;
const brokers: FakeBroker[] = [];

beforeAll(async () => {
  controller = await startServiceProcess('controller', controllerArgs);
  client = new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`);
  await eventually(() => client.call(client.client.describeCluster, {}), 10_000);
  for (let brokerId = 0; brokerId < 3; brokerId++) {
    const broker = new FakeBroker(() => client, brokerId);
    await broker.register();
    broker.startHeartbeats(200);
    brokers.push(broker);
  }
});

afterAll(async () => {
  for (const broker of brokers) broker.stopHeartbeats();
  client?.close();
  controller?.child.kill('SIGTERM');
  await controller?.exited;
  rmSync(directory, { recursive: true, force: true });
});

async function errorOf(promise: Promise<unknown>): Promise<SpoolError> {
  return (await promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  )) as SpoolError;
}

describe('controller admin', () => {
  it('creates a topic with balanced replicas and describes it', async () => {
    const created = await client.createTopic('orders', 6, 3, [
      { name: 'retention.ms', value: '60000' },
    ]);
    expect(created.results[0]!.error).toBeUndefined();
    const described = await client.call(client.client.describeTopics, { names: ['orders'] });
    const partitions = described.topics[0]!.topic!.partitions;
    expect(partitions).toHaveLength(6);
    for (const partition of partitions) {
      expect(new Set(partition.replicas).size).toBe(3);
      expect(partition.isr).toEqual(partition.replicas);
      expect(partition.leaderId).toBe(partition.replicas[0]);
    }
    const leaders = partitions.map((partition) => partition.leaderId);
    for (const brokerId of [0, 1, 2])
      expect(leaders.filter((leader) => leader === brokerId)).toHaveLength(2);
    const configs = await client.call(client.client.describeConfigs, { topics: ['orders'] });
    expect(configs.results[0]!.configs).toContainEqual({
      name: 'retention.ms',
      value: '60000',
      isDefault: false,
    });
    expect(configs.results[0]!.configs).toContainEqual({
      name: 'min.insync.replicas',
      value: '1',
      isDefault: true,
    });
  });

  it.each([
    ['an empty name', '', 1, 1, [], 'INVALID_TOPIC_EXCEPTION', /topic name is empty/],
    ['"."', '.', 1, 1, [], 'INVALID_TOPIC_EXCEPTION', /cannot be "\."/],
    ['".."', '..', 1, 1, [], 'INVALID_TOPIC_EXCEPTION', /cannot be "\.\."/],
    ['a space', 'my topic', 1, 1, [], 'INVALID_TOPIC_EXCEPTION', /illegal/],
    ['250 characters', 'x'.repeat(250), 1, 1, [], 'INVALID_TOPIC_EXCEPTION', /250 characters.*249/],
    ['zero partitions', 'zero', 0, 1, [], 'INVALID_PARTITIONS', /num_partitions is 0/],
    ['negative partitions', 'negative', -3, 1, [], 'INVALID_PARTITIONS', /num_partitions is -3/],
    [
      'a replication factor above the brokers',
      'wide',
      1,
      4,
      [],
      'INVALID_REPLICATION_FACTOR',
      /4 is larger than the 3 live/,
    ],
    [
      'a zero replication factor',
      'narrow',
      1,
      0,
      [],
      'INVALID_REPLICATION_FACTOR',
      /replication_factor is 0/,
    ],
    [
      'an unknown config',
      'typo',
      1,
      1,
      [{ name: 'retention.msx', value: '1' }],
      'INVALID_CONFIG',
      /unknown topic config "retention\.msx"/,
    ],
    [
      'a negative retention',
      'neg',
      1,
      1,
      [{ name: 'retention.ms', value: '-5' }],
      'INVALID_CONFIG',
      /retention\.ms.*from -1/,
    ],
    [
      'a dirty ratio above 1',
      'dirty',
      1,
      1,
      [{ name: 'min.cleanable.dirty.ratio', value: '1.5' }],
      'INVALID_CONFIG',
      /min\.cleanable\.dirty\.ratio: expected a number from 0 to 1/,
    ],
    [
      'a minimum compaction lag above the maximum',
      'lagged',
      1,
      1,
      [
        { name: 'min.compaction.lag.ms', value: '10' },
        { name: 'max.compaction.lag.ms', value: '5' },
      ],
      'INVALID_CONFIG',
      /min\.compaction\.lag\.ms \(10\) > max\.compaction\.lag\.ms \(5\)/,
    ],
    ['an existing name', 'orders', 1, 1, [], 'TOPIC_ALREADY_EXISTS', /already exists/],
  ])('refuses %s', async (_, name, partitions, factor, configs, code, message) => {
    const response = await client.createTopic(name, partitions, factor, configs);
    expect(response.results[0]!.error?.code).toBe(code);
    expect(response.results[0]!.error?.message).toMatch(message);
    const listed = await client.call(client.client.listTopics, { includeInternal: true });
    expect(listed.names).toEqual(['orders']);
  });

  it('answers the other admin calls with Kafka error names', async () => {
    const deleted = await client.call(client.client.deleteTopics, { names: ['missing'] });
    expect(deleted.results[0]!.error?.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    const shrink = await client.call(client.client.createPartitions, {
      topics: [{ name: 'orders', count: 3 }],
      validateOnly: false,
    });
    expect(shrink.results[0]!.error).toMatchObject({
      code: 'INVALID_PARTITIONS',
      message: expect.stringMatching(/can only grow/),
    });
    const alter = await client.call(client.client.alterConfigs, {
      topics: [
        {
          topic: 'orders',
          set: [{ name: 'segment.bytes', value: '1', isDefault: false }],
          delete: [],
        },
      ],
      validateOnly: false,
    });
    expect(alter.results[0]!.error).toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/segment\.bytes/),
    });
    const stale = await client.call(client.client.alterPartition, {
      brokerId: 0,
      brokerEpoch: brokers[0]!.brokerEpoch,
      topics: [
        {
          topic: 'orders',
          partitions: [{ partition: 99, leaderEpoch: 0, partitionEpoch: 0, newIsr: [0] }],
        },
      ],
    });
    expect(stale.error).toBeUndefined();
    expect(stale.topics[0]!.partitions[0]!.error?.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    const staleBroker = await client.call(client.client.alterPartition, {
      brokerId: 0,
      brokerEpoch: 12345n,
      topics: [],
    });
    expect(staleBroker.error?.code).toBe('STALE_BROKER_EPOCH');
    const badEpoch = await errorOf(
      client.call(client.client.controlledShutdown, { brokerId: 1, brokerEpoch: 12345n }),
    );
    expect(badEpoch.code).toBe('STALE_BROKER_EPOCH');
    const grown = await client.call(client.client.createPartitions, {
      topics: [{ name: 'orders', count: 8 }],
      validateOnly: false,
    });
    expect(grown.results[0]!.error).toBeUndefined();
    const described = await client.call(client.client.describeTopics, {
      names: ['orders', 'missing'],
    });
    expect(described.topics[0]!.topic!.partitions).toHaveLength(8);
    expect(described.topics[1]!.error?.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('refuses a second live process claiming a broker id', async () => {
    const impostor = new FakeBroker(() => client, 1);
    const error = await errorOf(impostor.register());
    expect(error.code).toBe('DUPLICATE_BROKER_REGISTRATION');
    expect(error.message).toMatch(
      /broker id 1 is registered by incarnation \S+, whose session has not expired/,
    );
  });

  it('streams a snapshot, then deltas with increasing versions', async () => {
    const watch = client.watch();
    try {
      await eventually(async () => expect(watch.messages.length).toBeGreaterThan(0), 5_000);
      const snapshot = watch.messages[0]!;
      expect(snapshot.snapshot).toBe(true);
      expect(snapshot.brokers.map((broker) => broker.brokerId)).toEqual([0, 1, 2]);
      await client.createTopic('events', 2, 2);
      await eventually(
        async () =>
          expect(
            watch.messages.some((message) =>
              message.topics.some((topic) => topic.name === 'events'),
            ),
          ).toBe(true),
        5_000,
      );
      const versions = watch.messages.map((message) => message.metadataVersion);
      expect([...versions].sort((a, b) => (a < b ? -1 : 1))).toEqual(versions);
    } finally {
      watch.stop();
    }
  });

  it('moves leaderships off a silent broker and restores preferred leaders when it returns', async () => {
    const silent = brokers[0]!;
    silent.stopHeartbeats();
    const stoppedAt = Date.now();
    await eventually(async () => {
      const described = await client.call(client.client.describeTopics, { names: ['orders'] });
      const partitions = described.topics[0]!.topic!.partitions;
      expect(
        partitions.every((partition) => partition.leaderId !== 0 && !partition.isr.includes(0)),
      ).toBe(true);
    }, sessionTimeoutMs + 3_000);
    expect(Date.now() - stoppedAt).toBeLessThan(sessionTimeoutMs + 2_000);

    await silent.register();
    silent.startHeartbeats(200);
    // The leaders let broker 0 back into their ISRs, as replication will once it catches up.
    const described = await client.call(client.client.describeTopics, { names: ['orders'] });
    for (const partition of described.topics[0]!.topic!.partitions) {
      if (!partition.replicas.includes(0)) continue;
      const leader = brokers[partition.leaderId]!;
      const response = await client.call(client.client.alterPartition, {
        brokerId: leader.brokerId,
        brokerEpoch: leader.brokerEpoch,
        topics: [
          {
            topic: 'orders',
            partitions: [
              {
                partition: partition.partition,
                leaderEpoch: partition.leaderEpoch,
                partitionEpoch: partition.partitionEpoch,
                newIsr: [...partition.isr, 0],
              },
            ],
          },
        ],
      });
      expect(response.error).toBeUndefined();
      expect(response.topics[0]!.partitions[0]!.error).toBeUndefined();
      expect(response.topics[0]!.partitions[0]!.partitionMetadata?.isr).toContain(0);
    }
    await eventually(async () => {
      const after = await client.call(client.client.describeTopics, { names: ['orders'] });
      for (const partition of after.topics[0]!.topic!.partitions)
        expect(partition.leaderId).toBe(partition.replicas[0]);
    }, 5_000);
  });

  it('keeps every topic across a restart', async () => {
    controller.child.kill('SIGTERM');
    expect(await controller.exited).toBe(0);
    client.close();
    controller = await startServiceProcess('controller', controllerArgs);
    client = new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`);
    const listed = await eventually(
      () => client.call(client.client.listTopics, { includeInternal: false }),
      10_000,
    );
    expect(listed.names).toEqual(['events', 'orders']);
  });
});
