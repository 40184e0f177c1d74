// Proves that topic changes larger than one metadata-store transaction (128 operations) are
// atomic to readers, on real controller processes with both backends (a local journal, a real
// etcd): a 10,000-partition topic (RF 3 on 3 brokers) is created, grown (CreatePartitions 10 →
// 5,000) and deleted while a WatchMetadata stream never shows it partial (every message that
// names the topic names all of its partitions, and a delete is one message); a controller
// SIGKILLed in the middle of a create or a grow (a test hook pauses it after a chunk) leaves the
// whole change or none once the next controller has taken over: here none, it rolls back, and
// no partition key is left in the store. A broker that dies leading thousands of partitions loses
// every leadership (the election is written in chunks). Nothing here is timed; the create times
// are printed for the record.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  EtcdMetadataStore,
  LocalMetadataStore,
  MetadataKeys,
  type MetadataStore,
} from '@spool/metadata';
import { startEtcdServer, type EtcdTestCluster } from '@spool/metadata/testing';
import type { WatchMetadataResponse } from '@spool/protocol';
import { ControllerTestClient, FakeBroker, eventually } from './support/controller-client';
import { startServiceProcess, type ServiceProcess } from './support/service-process';

const bigTopicPartitions = 10_000;
const directory = mkdtempSync(path.join(tmpdir(), 'spool-partition-scale-'));
const sessionTimeoutMs = 2_000;
/** Creating 10,000 partitions takes a few seconds on a loaded 2-core machine; give it room. */
const bigCallDeadlineMs = 60_000;
let etcd: EtcdTestCluster;
let clusterNumber = 0;

beforeAll(async () => {
  etcd = await startEtcdServer();
});

/** Every cluster a test started, stopped after it whatever its outcome. */
const running: Array<{ stop(): Promise<void> }> = [];

afterEach(async () => {
  for (const cluster of running.splice(0)) await cluster.stop();
});

afterAll(async () => {
  await etcd?.stop();
  rmSync(directory, { recursive: true, force: true });
});

type Backend = 'local' | 'etcd';

/** Controller arguments for a fresh cluster on the backend, and a way to read its store. */
function clusterOn(backend: Backend): {
  args: string[];
  openStore: () => Promise<MetadataStore>;
  keys: MetadataKeys;
} {
  clusterNumber++;
  const clusterName = `scale-${clusterNumber}`;
  const keys = new MetadataKeys(clusterName);
  const common = ['--cluster-name', clusterName, '--log-level', 'info'];
  const timeouts = ['--broker-session-timeout-ms', String(sessionTimeoutMs)];
  if (backend === 'local') {
    const journal = path.join(directory, `${clusterName}.journal`);
    return {
      args: [...common, ...timeouts, '--metadata-path', journal],
      openStore: () => LocalMetadataStore.open({ path: journal }),
      keys,
    };
  }
  return {
    args: [
      ...common,
      ...timeouts,
      ...['--metadata-backend', 'etcd', '--etcd-endpoints', etcd.endpoints.join(',')],
      ...['--controller-lease-ttl-ms', '2000'],
    ],
    openStore: () => EtcdMetadataStore.connect({ endpoints: etcd.endpoints }),
    keys,
  };
}

/** A controller process, a client, and three heartbeating brokers registered with it. */
async function startCluster(args: string[], extraArgs: string[] = []) {
  const controller = await startServiceProcess('controller', [...args, ...extraArgs]);
  const client = new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`);
  const brokers: FakeBroker[] = [];
  let stopped = false;
  const cluster = {
    controller,
    client,
    brokers,
    /** SIGKILLs the controller (the store is what must be right) and waits for its exit. */
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const broker of brokers) broker.stopHeartbeats();
      client.close();
      controller.child.kill('SIGKILL');
      await controller.exited;
    },
  };
  running.push(cluster);
  await eventually(() => client.call(client.client.describeCluster, {}), 15_000);
  for (let brokerId = 0; brokerId < 3; brokerId++) {
    const broker = new FakeBroker(() => client, brokerId);
    await eventually(() => broker.register(), 15_000);
    broker.startHeartbeats(200);
    brokers.push(broker);
  }
  return cluster;
}

/**
 * Follows WatchMetadata and records, for one topic, the partition counts of every message that
 * names it: a partial topic would show up as a count other than the expected ones.
 */
function watchTopic(client: ControllerTestClient, topic: string) {
  const watch = client.watch();
  const seen = (): Array<{ partitions: number; deleted: boolean; message: number }> =>
    watch.messages.flatMap((message: WatchMetadataResponse, index) => [
      ...message.topics
        .filter((entry) => entry.name === topic)
        .map((entry) => ({ partitions: entry.partitions.length, deleted: false, message: index })),
      ...(message.deletedTopics.includes(topic)
        ? [{ partitions: 0, deleted: true, message: index }]
        : []),
    ]);
  return { watch, seen };
}

async function partitionKeysOf(
  openStore: () => Promise<MetadataStore>,
  keys: MetadataKeys,
  topic: string,
): Promise<{ partitionKeys: number; topicKey: boolean }> {
  const store = await openStore();
  try {
    const partitions = await store.getPrefix(keys.partitions(topic));
    const topicKey = await store.get(keys.topic(topic));
    return { partitionKeys: partitions.entries.length, topicKey: topicKey !== undefined };
  } finally {
    await store.close();
  }
}

async function describePartitions(client: ControllerTestClient, topic: string): Promise<number> {
  const described = await client.call(
    client.client.describeTopics,
    { names: [topic] },
    bigCallDeadlineMs,
  );
  const entry = described.topics[0]!;
  return entry.error === undefined ? entry.topic!.partitions.length : -1;
}

function parseLogRecord(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Resolves once the process logged that the test hook paused it. */
async function pausedByTestHook(controller: ServiceProcess): Promise<void> {
  await eventually(
    async () => {
      if (!controller.logLines.some((line) => line.includes('"test-hook-paused"')))
        throw new Error('the controller has not reached the test hook yet');
    },
    60_000,
    20,
  );
}

describe.each<Backend>(['local', 'etcd'])('partition scale on the %s backend', (backend) => {
  it('creates, grows and deletes topics of thousands of partitions atomically to a watcher', async () => {
    const { args, openStore, keys } = clusterOn(backend);
    const cluster = await startCluster(args);
    try {
      const { client } = cluster;
      const { watch, seen } = watchTopic(client, 'big');
      const startedAt = performance.now();
      const created = await client.call(
        client.client.createTopics,
        {
          topics: [
            { name: 'big', numPartitions: bigTopicPartitions, replicationFactor: 3, configs: [] },
          ],
          validateOnly: false,
        },
        bigCallDeadlineMs,
      );
      const createMs = performance.now() - startedAt;
      console.log(
        `${backend}: created ${bigTopicPartitions} partitions (RF 3) in ${createMs.toFixed(0)} ms`,
      );
      expect(created.results[0]!.error).toBeUndefined();
      expect(await describePartitions(client, 'big')).toBe(bigTopicPartitions);
      const described = await client.call(
        client.client.describeTopics,
        { names: ['big'] },
        bigCallDeadlineMs,
      );
      const leaders = new Map<number, number>();
      for (const partition of described.topics[0]!.topic!.partitions) {
        expect(new Set(partition.replicas).size).toBe(3);
        leaders.set(partition.leaderId, (leaders.get(partition.leaderId) ?? 0) + 1);
      }
      for (const brokerId of [0, 1, 2]) expect(leaders.get(brokerId)).toBeGreaterThan(3_300);

      // Grow a small topic to 5,000: the watcher sees 10 partitions, then 5,000, nothing between.
      const { seen: seenGrown } = watchTopic(client, 'grown');
      expect((await client.createTopic('grown', 10, 3)).results[0]!.error).toBeUndefined();
      const grown = await client.call(
        client.client.createPartitions,
        { topics: [{ name: 'grown', count: 5_000 }], validateOnly: false },
        bigCallDeadlineMs,
      );
      expect(grown.results[0]!.error).toBeUndefined();
      expect(await describePartitions(client, 'grown')).toBe(5_000);
      await eventually(async () => {
        expect(seenGrown().map((entry) => entry.partitions)).toEqual([10, 5_000]);
      }, 10_000);

      // Delete the big topic: one message says it is gone, none shows it shrinking.
      const deleted = await client.call(
        client.client.deleteTopics,
        { names: ['big'] },
        bigCallDeadlineMs,
      );
      expect(deleted.results[0]!.error).toBeUndefined();
      expect(await describePartitions(client, 'big')).toBe(-1);
      await eventually(async () => {
        expect(seen().map((entry) => [entry.partitions, entry.deleted])).toEqual([
          [bigTopicPartitions, false],
          [0, true],
        ]);
      }, 10_000);
      expect(watch.errors).toEqual([]);
      watch.stop();
      await cluster.stop();
      expect(await partitionKeysOf(openStore, keys, 'big')).toEqual({
        partitionKeys: 0,
        topicKey: false,
      });
    } finally {
      await cluster.stop();
    }
  });

  it('rolls back a create and a grow whose controller was SIGKILLed in the middle', async () => {
    const { args, openStore, keys } = clusterOn(backend);
    // The first controller pauses after 20 of the ~100 transactions of the create.
    const first = await startCluster(args, ['--test-pause-after-metadata-chunk', '20']);
    const { seen } = watchTopic(first.client, 'big');
    const creating = first.client
      .call(
        first.client.client.createTopics,
        {
          topics: [
            { name: 'big', numPartitions: bigTopicPartitions, replicationFactor: 3, configs: [] },
          ],
          validateOnly: false,
        },
        bigCallDeadlineMs,
      )
      .catch((error: unknown) => error);
    await pausedByTestHook(first.controller);
    const written = await (backend === 'etcd'
      ? partitionKeysOf(openStore, keys, 'big')
      : Promise.resolve(undefined));
    if (written !== undefined) expect(written.partitionKeys).toBeGreaterThan(1_000);
    expect(await describePartitions(first.client, 'big')).toBe(-1);
    await first.stop();
    expect(await creating).toBeInstanceOf(Error);
    expect(seen()).toEqual([]);

    // The next controller rolls the half-written topic back before it serves topic commands, so
    // once a create has gone through it, the store holds nothing of the first attempt.
    const second = await startCluster(args);
    expect((await second.client.createTopic('grown', 10, 3)).results[0]!.error).toBeUndefined();
    expect(second.controller.logLines.join('\n')).toContain('rolled back the creation of a topic');
    expect(await describePartitions(second.client, 'big')).toBe(-1);
    await second.stop();
    expect(await partitionKeysOf(openStore, keys, 'big')).toEqual({
      partitionKeys: 0,
      topicKey: false,
    });

    // A grow from 10 to 5,000 killed after 10 transactions leaves the topic at 10.
    const third = await startCluster(args, ['--test-pause-after-metadata-chunk', '10']);
    const growing = third.client
      .call(
        third.client.client.createPartitions,
        { topics: [{ name: 'grown', count: 5_000 }], validateOnly: false },
        bigCallDeadlineMs,
      )
      .catch((error: unknown) => error);
    await pausedByTestHook(third.controller);
    expect(await describePartitions(third.client, 'grown')).toBe(10);
    await third.stop();
    expect(await growing).toBeInstanceOf(Error);

    // The next controller rolls back exactly the 10 chunks of 99 keys written, and the grow,
    // retried as a client would, then succeeds whole.
    const fourth = await startCluster(args);
    const rollback = await eventually(async () => {
      const record = fourth.controller.logLines
        .map(parseLogRecord)
        .find((entry) => entry?.['msg'] === 'rolled back partitions added to a topic');
      if (record === undefined) throw new Error('no rollback logged yet');
      return record;
    }, 20_000);
    expect(rollback).toMatchObject({
      topic: 'grown',
      partitionCount: 10,
      pendingPartitionCount: 5_000,
      partitionKeysRemoved: 10 * 99,
    });
    expect(await describePartitions(fourth.client, 'grown')).toBe(10);
    const retried = await fourth.client.call(
      fourth.client.client.createPartitions,
      { topics: [{ name: 'grown', count: 5_000 }], validateOnly: false },
      bigCallDeadlineMs,
    );
    expect(retried.results[0]!.error).toBeUndefined();
    expect(await describePartitions(fourth.client, 'grown')).toBe(5_000);
    await fourth.stop();
    expect(await partitionKeysOf(openStore, keys, 'grown')).toEqual({
      partitionKeys: 5_000,
      topicKey: true,
    });
  });
});

describe('elections at scale', () => {
  it('moves every leadership of a broker that dies leading thousands of partitions', async () => {
    const { args } = clusterOn('local');
    const cluster = await startCluster(args);
    try {
      const { client, brokers } = cluster;
      const created = await client.call(
        client.client.createTopics,
        {
          topics: [{ name: 'wide', numPartitions: 6_000, replicationFactor: 3, configs: [] }],
          validateOnly: false,
        },
        bigCallDeadlineMs,
      );
      expect(created.results[0]!.error).toBeUndefined();
      brokers[2]!.stopHeartbeats();
      await eventually(
        async () => {
          const described = await client.call(
            client.client.describeTopics,
            { names: ['wide'] },
            bigCallDeadlineMs,
          );
          const partitions = described.topics[0]!.topic!.partitions;
          expect(partitions.filter((partition) => partition.leaderId === 2)).toEqual([]);
          expect(partitions.filter((partition) => partition.isr.includes(2))).toEqual([]);
        },
        sessionTimeoutMs + 20_000,
        200,
      );
    } finally {
      await cluster.stop();
    }
  });
});
