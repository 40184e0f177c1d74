// Proves a full disk is an operating error handled as Kafka handles a failed log directory, not
// a crash, a corruption or an outage of the partitions the node led: three storage nodes, node
// 0's data directory a small tmpfs (mounted by this test, removed after). When it fills, node 0
// takes its directory offline and tells the controller at once, which moves its leaderships to
// other ISR members and takes it out of the ISRs (broker.session.timeout.ms and
// replica.lag.time.max.ms are 60 s, so neither a fence nor a lagging follower can be the cause);
// node 0 stays up and registered; producers go on with acks=all on the others. Once space
// returns, node 0 comes back by itself as a follower and rejoins every ISR; every acknowledged
// record is in its copy, also after a SIGKILL and a restart (nothing half-written survives).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Acks, type PartitionMetadata } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { recordsOnDisk } from './support/replication-support';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'full';
const partitionCount = 3;
const mountPoint = mkdtempSync(path.join(tmpdir(), 'spool-full-disk-'));
const dataDir = path.join(mountPoint, 'data');
const fillerFile = path.join(mountPoint, 'filler');
let cluster: StorageTestCluster;

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mountPoint]);
  mkdirSync(dataDir);
  // Leaves about 3 MiB for node 0's logs; deleting it later gives the space back.
  writeFileSync(fillerFile, Buffer.alloc(5 * 1024 * 1024, 1));
  cluster = await StorageTestCluster.start(0, {
    controllerArgs: ['--broker-session-timeout-ms', '60000'],
    nodeArgs: ['--replica-lag-time-max-ms', '60000'],
  });
  await Promise.all([
    cluster.startNode(0, { dataDir }),
    cluster.startNode(1),
    cluster.startNode(2),
  ]);
  await cluster.createTopic(topic, partitionCount, 3, [
    { name: 'min.insync.replicas', value: '2' },
    { name: 'segment.bytes', value: String(512 * 1024) },
  ]);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  try {
    execFileSync('umount', [mountPoint]);
  } finally {
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

async function partitions(): Promise<PartitionMetadata[]> {
  const described = await cluster.admin.call(cluster.admin.client.describeTopics, {
    names: [topic],
  });
  return described.topics[0]!.topic!.partitions;
}

function batch(label: string): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.from(label.padEnd(32 * 1024, '.')), timestampMs: 1n }],
  });
}

interface Acknowledged {
  readonly partition: number;
  readonly offset: bigint;
  readonly label: string;
}

/** One acks=all send, retried on retriable errors at whichever node leads, as a producer does. */
async function send(partition: number, label: string, codes: Set<string>): Promise<Acknowledged> {
  return eventually(
    async () => {
      const result = (await cluster.append(topic, partition, batch(label), Acks.ACKS_ALL))
        .results[0]!;
      if (result.error !== undefined) {
        codes.add(result.error.code);
        if (!result.error.retriable) throw new Error(`not retriable: ${result.error.code}`);
        throw new Error(`${result.error.code}: ${result.error.message}`);
      }
      return { partition, offset: result.baseOffset, label };
    },
    10_000,
    20,
  );
}

function nodeLog(brokerId: number): string {
  return cluster.nodes.get(brokerId)!.process.logLines.join('\n');
}

describe('a full disk', () => {
  it("moves the node's leaderships at once, keeps it up, and brings it back as a follower", async () => {
    const acknowledged: Acknowledged[] = [];
    const codes = new Set<string>();
    // Fill node 0's disk: it hosts a replica of every partition, as leader or follower.
    for (let index = 0; index < 300 && !nodeLog(0).includes('data directory offline'); index++) {
      acknowledged.push(await send(index % partitionCount, `before-${index}`, codes));
    }
    expect(nodeLog(0)).toMatch(/data directory offline.*ENOSPC|ENOSPC.*data directory offline/);
    const offlineAt = Date.now();

    // The controller moved everything off node 0 without fencing it.
    const moved = await eventually(
      async () => {
        const current = await partitions();
        for (const partition of current) {
          expect([1, 2]).toContain(partition.leaderId);
          expect(partition.isr).not.toContain(0);
        }
        return current;
      },
      5_000,
      20,
    );
    expect(Date.now() - offlineAt).toBeLessThan(5_000);
    expect(moved).toHaveLength(partitionCount);
    // The moves commit before the controller's log line, so the line may trail the describe.
    await eventually(async () => {
      expect(cluster.controller.logLines.join('\n')).toMatch(/broker data directory offline/);
    }, 5_000);
    expect(cluster.controller.logLines.join('\n')).not.toMatch(/broker fenced/);
    const node = cluster.nodes.get(0)!.process;
    expect((await fetch(`http://127.0.0.1:${node.metricsPort}/healthz`)).status).toBe(200);
    // Not ready, and /readyz names the reason (what a Kubernetes pod shows).
    const notReady = await fetch(`http://127.0.0.1:${node.metricsPort}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toMatch(/data directory writable again \(offline: ENOSPC/);
    // Only retriable errors reached the producer on the way.
    for (const code of codes) {
      expect([
        'KAFKA_STORAGE_ERROR',
        'NOT_LEADER_OR_FOLLOWER',
        'NOT_ENOUGH_REPLICAS',
        'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
        'REQUEST_TIMED_OUT',
        'LEADER_NOT_AVAILABLE',
        'FENCED_LEADER_EPOCH',
      ]).toContain(code);
    }

    // The others take acks=all sends while node 0 is out (ISR of 2, min.insync.replicas 2).
    for (let index = 0; index < 6; index++) {
      acknowledged.push(await send(index % partitionCount, `offline-${index}`, codes));
    }

    rmSync(fillerFile);
    await eventually(
      async () => {
        for (const partition of await partitions()) expect(partition.isr).toContain(0);
      },
      20_000,
      50,
    );
    expect(nodeLog(0)).toMatch(/data directory online again/);
    expect((await fetch(`http://127.0.0.1:${node.metricsPort}/readyz`)).status).toBe(200);
    expect(cluster.controller.logLines.join('\n')).not.toMatch(/broker fenced/);

    // Every acknowledged record is in node 0's copy, and still after a crash and a restart.
    const expectAllOnNode0 = () => {
      for (let partition = 0; partition < partitionCount; partition++) {
        const onDisk = new Map(
          recordsOnDisk(dataDir, topic, partition).map((record) => [record.offset, record.value]),
        );
        for (const record of acknowledged.filter((entry) => entry.partition === partition)) {
          expect(onDisk.get(record.offset)?.trimEnd().replace(/\.+$/, '')).toBe(record.label);
        }
      }
    };
    expectAllOnNode0();
    expect(await cluster.stopNode(0, 'SIGKILL')).toBe('SIGKILL');
    await cluster.startNode(0, { dataDir });
    expectAllOnNode0();
  });
});
