// Proves a storage node's death is acted on when its connection closes, not after a silent
// session: with broker.session.timeout.ms at 60 s, kill -9 of a node that leads partitions
// gets each of them a new leader from its ISR, which serves them, and the controller says it
// fenced the node because its controller stream closed. The failover reaches watchers as
// deltas of the moved partitions alone (WatchMetadata changed_partitions), never the whole
// topic again, and a node that merely stops in order (controlled shutdown) is not fenced so.
// Real processes on loopback: a controller and three storage nodes.
import { callOnce } from '@spool/common';
import type { WatchMetadataResponse } from '@spool/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventually } from './support/controller-client';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'failover';
const partitionCount = 24;

let cluster: StorageTestCluster | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function leaders(current: StorageTestCluster): Promise<Map<number, number>> {
  const response = await current.admin.call(current.admin.client.describeTopics, {
    names: [topic],
  });
  const partitions = response.topics[0]!.topic!.partitions;
  return new Map(partitions.map((partition) => [partition.partition, partition.leaderId]));
}

describe('storage node failover', () => {
  it('moves a killed node’s leaderships once its connection closes, as partition deltas', async () => {
    cluster = await StorageTestCluster.start(3, {
      controllerArgs: ['--broker-session-timeout-ms', '60000'],
    });
    await cluster.createTopic(topic, partitionCount, 3);
    const before = await leaders(cluster);
    const victim = before.get(0)!;
    const led = [...before]
      .filter(([, leader]) => leader === victim)
      .map(([partition]) => partition);
    const watch = cluster.admin.watch();
    await eventually(async () => expect(watch.messages.length).toBeGreaterThan(0), 5_000);

    await cluster.stopNode(victim, 'SIGKILL');
    const after = await eventually(async () => {
      const current = await leaders(cluster!);
      for (const partition of led) {
        expect(current.get(partition)).not.toBe(victim);
        expect(current.get(partition)).toBeGreaterThanOrEqual(0);
      }
      return current;
    }, 20_000);
    // The elections commit before the fence mark and its log line (see BrokerLifecycle.fence),
    // so a describe can see the new leaders a moment before the line is written.
    await eventually(async () => {
      expect(cluster!.controller.logLines.join('\n')).toMatch(
        /broker fenced: its controller stream closed/,
      );
    }, 5_000);

    // Each new leader serves its partition.
    for (const partition of led) {
      const client = cluster.storageClient(after.get(partition)!);
      try {
        const offsets = await callOnce(client, client.listOffsets, {
          partitions: [{ topic, partition, spec: 1, timestampMs: 0n }],
        });
        expect(offsets.results[0]!.error).toBeUndefined();
      } finally {
        client.close();
      }
    }

    // The stream carried the elections as partition deltas, never the topic whole again.
    watch.stop();
    const deltas = watch.messages.slice(1);
    const moved = new Set<number>();
    for (const message of deltas as WatchMetadataResponse[]) {
      expect(message.snapshot).toBe(false);
      expect(message.topics.map((entry) => entry.name)).not.toContain(topic);
      for (const partition of message.changedPartitions) {
        if (partition.topic === topic && partition.leaderId !== victim) {
          moved.add(partition.partition);
        }
      }
    }
    expect([...moved].sort((left, right) => left - right)).toEqual(
      expect.arrayContaining([...led].sort((left, right) => left - right)),
    );
  });

  it('does not fence a node that stopped in order when its stream closes', async () => {
    cluster = await StorageTestCluster.start(3, {
      controllerArgs: ['--broker-session-timeout-ms', '60000'],
    });
    await cluster.createTopic(topic, 3, 3);
    expect(await cluster.stopNode(2, 'SIGTERM')).toBe(0);
    // After the reconnect grace (1 s) the controller decides, and says when it does not fence.
    const decided = (line: string) => line.includes('"brokerId":2') && line.includes('not fenced');
    await vi.waitFor(() => expect(cluster!.controller.logLines.some(decided)).toBe(true), {
      timeout: 10_000,
      interval: 20,
    });
    expect(cluster.controller.logLines.join('\n')).not.toMatch(/broker fenced/);
  });
});
