// Proves a storage node that is killed and started again rejoins the ISR of every partition it
// holds, and that the leaders ask for it in batches: 600 partitions RF3 on three nodes, kill -9
// of one (the controller fences it and takes it out of every ISR), the same node started again
// on the same data, every partition back to three in sync. The controller applies each leader's
// AlterPartition many partitions at a time (Kafka's AlterPartition is batched; one request and
// one metadata write per partition were what kept thousands of partitions out of sync).
// Real processes on loopback: a controller and three storage nodes.
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { StorageTestCluster } from './support/storage-cluster';

const topics = ['rejoin-a', 'rejoin-b', 'rejoin-c'];
const partitionsPerTopic = 200;
const partitionCount = topics.length * partitionsPerTopic;
const victim = 1;

let cluster: StorageTestCluster | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

/** Every partition's ISR, by topic-partition. */
async function isrs(current: StorageTestCluster): Promise<Map<string, number[]>> {
  const response = await current.admin.call(current.admin.client.describeTopics, {
    names: topics,
  });
  const result = new Map<string, number[]>();
  for (const entry of response.topics) {
    for (const partition of entry.topic?.partitions ?? []) {
      result.set(`${partition.topic}-${partition.partition}`, partition.isr);
    }
  }
  return result;
}

/** The controller's 'ISR changed' lines: one per AlterPartition request that changed any ISR. */
function isrChanges(current: StorageTestCluster): Array<{ brokerId: number; partitions: number }> {
  const changes: Array<{ brokerId: number; partitions: number }> = [];
  for (const line of current.controller.logLines) {
    if (!line.includes('"ISR changed"')) continue;
    const parsed = JSON.parse(line) as { brokerId: number; partitions: number };
    changes.push({ brokerId: parsed.brokerId, partitions: parsed.partitions });
  }
  return changes;
}

describe('ISR rejoin after a restart', () => {
  it('brings a killed node back into the ISR of all 600 partitions, in batched requests', async () => {
    cluster = await StorageTestCluster.start(3);
    for (const topic of topics) {
      const response = await cluster.admin.createTopic(topic, partitionsPerTopic, 3);
      expect(response.results[0]!.error).toBeUndefined();
    }
    await eventually(async () => {
      const current = await isrs(cluster!);
      expect(current.size).toBe(partitionCount);
      for (const isr of current.values()) expect(isr).toHaveLength(3);
    }, 60_000);

    await cluster.stopNode(victim, 'SIGKILL');
    await eventually(async () => {
      for (const isr of (await isrs(cluster!)).values()) expect(isr).not.toContain(victim);
    }, 20_000);
    const changesBefore = isrChanges(cluster).length;

    await cluster.startNode(victim);
    await eventually(async () => {
      const current = await isrs(cluster!);
      const outOfSync = [...current].filter(([, isr]) => !isr.includes(victim));
      expect(outOfSync.map(([name]) => name).slice(0, 5)).toEqual([]);
    }, 60_000);

    // Every partition rejoined through a leader's AlterPartition: the controller wrote each one,
    // and far fewer requests than partitions carried them.
    // The controller logs a change after committing it, so the last line may trail the describe.
    const rejoins = await eventually(async () => {
      const changes = isrChanges(cluster!).slice(changesBefore);
      const rejoined = changes.reduce((sum, change) => sum + change.partitions, 0);
      expect(rejoined).toBeGreaterThanOrEqual(partitionCount);
      return changes;
    }, 5_000);
    expect(rejoins.length).toBeLessThan(partitionCount / 10);
    expect(rejoins.some((change) => change.partitions > 1)).toBe(true);
  });
});
