// Proves Kafka's replication guarantees with three real storage nodes: records acknowledged
// with acks=all survive SIGKILLs of partition leaders and sit at their acknowledged offsets
// afterwards, with every replica's segment files byte-identical; a leader that wrote records
// locally and died before its follower fetched them cannot make the logs diverge (KIP-101: it
// truncates its unreplicated tail when it returns as a follower); min.insync.replicas=2 refuses
// acks=all with NOT_ENOUGH_REPLICAS when two of three nodes are down and loses nothing when they
// return; a rolling restart (SIGTERM each node in turn) under a steady producer fails no send
// after retries and loses no record.
import { afterEach, describe, expect, it } from 'vitest';
import { Acks } from '@spool/protocol';
import { eventually } from './support/controller-client';
import {
  produceWithRetry,
  recordBatch,
  recordsOnDisk,
  logBytesOnDisk,
  type Acknowledged,
} from './support/replication-support';
import { StorageTestCluster } from './support/storage-cluster';

let cluster: StorageTestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function describePartition(topic: string, partition: number) {
  const described = await cluster!.admin.call(cluster!.admin.client.describeTopics, {
    names: [topic],
  });
  return described.topics[0]!.topic!.partitions.find(
    (candidate) => candidate.partition === partition,
  )!;
}

/** Waits until every replica of every partition is back in the ISR and the logs match on disk. */
async function expectReplicasIdentical(
  topic: string,
  partitions: number,
  timeoutMs = 20_000,
): Promise<void> {
  for (let partition = 0; partition < partitions; partition++) {
    await eventually(async () => {
      const state = await describePartition(topic, partition);
      expect(state.isr.length).toBe(state.replicas.length);
      const copies = state.replicas.map((brokerId) =>
        logBytesOnDisk(cluster!.dataDirOf(brokerId), topic, partition),
      );
      for (const copy of copies) expect(copy.equals(copies[0]!)).toBe(true);
    }, timeoutMs);
  }
}

/** Every acknowledged record is at its acknowledged offset, read from broker 0's files. */
function expectAcknowledgedPresent(topic: string, acknowledged: readonly Acknowledged[]): void {
  for (const record of acknowledged) {
    const stored = recordsOnDisk(cluster!.dataDirOf(0), topic, record.partition);
    const found = stored.find((candidate) => candidate.offset === record.offset);
    expect(found?.value, `record ${record.value} at ${record.partition}/${record.offset}`).toBe(
      record.value,
    );
  }
}

describe('replication', () => {
  it('keeps every acks=all record through leader SIGKILLs, replicas byte-identical', async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--replica-lag-time-max-ms', '2000'],
    });
    await cluster.createTopic('replicated', 6, 3);
    const acknowledged: Acknowledged[] = [];
    const killer = (async () => {
      for (let round = 0; round < 3; round++) {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const leader = await cluster!.leaderOf('replicated', round % 6);
        if (leader < 0) continue;
        await cluster!.stopNode(leader, 'SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await cluster!.startNode(leader);
      }
    })();
    let sequence = 0;
    let producing = true;
    void killer.finally(() => (producing = false));
    while (producing) {
      await Promise.all(
        Array.from({ length: 6 }, async (_, partition) => {
          const value = `record-${sequence}-${partition}`;
          const offset = await produceWithRetry(cluster!, 'replicated', partition, value);
          acknowledged.push({ partition, offset, value });
        }),
      );
      sequence++;
    }
    await killer;
    expect(acknowledged.length).toBeGreaterThan(60);
    await expectReplicasIdentical('replicated', 6);
    expectAcknowledgedPresent('replicated', acknowledged);
  });

  it("truncates a returning leader's unreplicated tail so the logs never diverge (KIP-101)", async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--replica-lag-time-max-ms', '20000'],
    });
    await cluster.createTopic('kip101', 1, 2);
    for (let index = 0; index < 5; index++)
      await produceWithRetry(cluster, 'kip101', 0, `committed-${index}`);
    const before = await describePartition('kip101', 0);
    const leader = before.leaderId;
    const follower = before.replicas.find((id) => id !== leader)!;
    await eventually(async () => {
      expect(logBytesOnDisk(cluster!.dataDirOf(follower), 'kip101', 0).length).toBe(
        logBytesOnDisk(cluster!.dataDirOf(leader), 'kip101', 0).length,
      );
    }, 10_000);

    // The follower's fetcher is paused; the leader writes three records only it has, then dies.
    cluster.nodes.get(follower)!.process.child.kill('SIGSTOP');
    // Let the follower's pending long poll expire empty, so nothing it asked for carries the
    // leader's next records.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    for (let index = 0; index < 3; index++) {
      const result = (
        await cluster.append('kip101', 0, recordBatch(`lost-${index}`), Acks.ACKS_LEADER)
      ).results[0]!;
      expect(result.error).toBeUndefined();
    }
    await cluster.stopNode(leader, 'SIGKILL');
    cluster.nodes.get(follower)!.process.child.kill('SIGCONT');

    await eventually(
      async () => expect((await describePartition('kip101', 0)).leaderId).toBe(follower),
      15_000,
    );
    for (let index = 0; index < 2; index++)
      await produceWithRetry(cluster, 'kip101', 0, `after-${index}`);
    await cluster.startNode(leader);
    await expectReplicasIdentical('kip101', 1);
    const values = recordsOnDisk(cluster.dataDirOf(leader), 'kip101', 0).map(
      (record) => `${record.offset}:${record.value}`,
    );
    expect(values).toEqual([
      '0:committed-0',
      '1:committed-1',
      '2:committed-2',
      '3:committed-3',
      '4:committed-4',
      '5:after-0',
      '6:after-1',
    ]);
  });

  it('refuses acks=all below min.insync.replicas and loses nothing when replicas return', async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--replica-lag-time-max-ms', '1000'],
    });
    await cluster.createTopic('guarded', 1, 3, [{ name: 'min.insync.replicas', value: '2' }]);
    const acknowledged: Acknowledged[] = [];
    for (let index = 0; index < 5; index++) {
      acknowledged.push({
        partition: 0,
        offset: await produceWithRetry(cluster, 'guarded', 0, `before-${index}`),
        value: `before-${index}`,
      });
    }
    const state = await describePartition('guarded', 0);
    const others = state.replicas.filter((id) => id !== state.leaderId);
    for (const id of others) await cluster.stopNode(id, 'SIGKILL');
    const refusal = await eventually(async () => {
      const result = (await cluster!.append('guarded', 0, recordBatch('refused'), Acks.ACKS_ALL))
        .results[0]!;
      expect(result.error?.code).toMatch(/NOT_ENOUGH_REPLICAS/);
      return result.error!;
    }, 15_000);
    expect(refusal.retriable).toBe(true);
    const leaderMetrics = async (): Promise<string> =>
      (
        await fetch(
          `http://127.0.0.1:${cluster!.nodes.get(state.leaderId)!.process.metricsPort}/metrics`,
        )
      ).text();
    const gauge = (text: string, name: string): number =>
      Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? -1);
    const degraded = await leaderMetrics();
    expect(gauge(degraded, 'spool_under_replicated_partitions')).toBe(1);
    expect(gauge(degraded, 'spool_under_min_isr_partitions')).toBe(1);
    expect(gauge(degraded, 'spool_isr_shrinks_total')).toBeGreaterThanOrEqual(1);
    for (const id of others) await cluster.startNode(id);
    acknowledged.push({
      partition: 0,
      offset: await produceWithRetry(cluster, 'guarded', 0, 'after'),
      value: 'after',
    });
    await expectReplicasIdentical('guarded', 1);
    await eventually(async () => {
      const healed = await leaderMetrics();
      expect(gauge(healed, 'spool_under_replicated_partitions')).toBe(0);
      expect(gauge(healed, 'spool_under_min_isr_partitions')).toBe(0);
      expect(healed).toMatch(/^spool_follower_lag_bytes\{[^}]*\} 0$/m);
    }, 10_000);
    for (const record of acknowledged) {
      const stored = recordsOnDisk(cluster.dataDirOf(state.leaderId), 'guarded', 0);
      expect(stored.find((candidate) => candidate.offset === record.offset)?.value).toBe(
        record.value,
      );
    }
  });

  it('fails no send and loses no record through a rolling restart', async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--replica-lag-time-max-ms', '2000'],
    });
    await cluster.createTopic('rolling', 3, 3, [{ name: 'min.insync.replicas', value: '2' }]);
    const acknowledged: Acknowledged[] = [];
    let producing = true;
    const producer = (async () => {
      for (let sequence = 0; producing; sequence++) {
        const partition = sequence % 3;
        const value = `rolling-${sequence}`;
        acknowledged.push({
          partition,
          offset: await produceWithRetry(cluster!, 'rolling', partition, value),
          value,
        });
      }
    })();
    for (const id of [0, 1, 2]) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await cluster.stopNode(id, 'SIGTERM')).toBe(0);
      await cluster.startNode(id);
    }
    producing = false;
    await producer;
    expect(acknowledged.length).toBeGreaterThan(30);
    await expectReplicasIdentical('rolling', 3);
    for (const record of acknowledged) {
      const stored = recordsOnDisk(cluster.dataDirOf(0), 'rolling', record.partition);
      expect(stored.find((candidate) => candidate.offset === record.offset)?.value).toBe(
        record.value,
      );
    }
  });
});
