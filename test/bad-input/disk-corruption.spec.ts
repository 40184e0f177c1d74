// Corruption on disk: bits flipped inside a closed segment and inside the active segment of a
// stopped follower (closed cleanly, so its next open trusts the files and scans nothing). On
// restart the node reads its logs back, finds the first bad batch, reports it with the file,
// the byte position and the offset, truncates there and fetches the rest again from the
// leader: its log ends byte-identical to the leader's. Then the other two nodes are killed, the
// repaired node leads, and everything a consumer fetches from it decodes with valid CRCs and
// holds every acknowledged record once, in order: no corrupt byte is ever served.
import { closeSync, openSync, readSync, readdirSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumerReplicaId } from '@spool/protocol';
import { decodeRecordBatches } from '@spool/record-batch';
import { eventually } from '../support/controller-client';
import { logBytesOnDisk, produceWithRetry } from '../support/replication-support';
import { StorageTestCluster } from '../support/storage-cluster';

const topic = 'rot';
let cluster: StorageTestCluster;
const acknowledged: string[] = [];

beforeAll(async () => {
  cluster = await StorageTestCluster.start(3, {
    nodeArgs: ['--replica-lag-time-max-ms', '2000'],
  });
  // Small segments, so the damage lands in a closed one and in the active one.
  await cluster.createTopic(topic, 1, 3, [{ name: 'segment.bytes', value: '4096' }]);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

async function produce(count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const label = `record-${acknowledged.length}-${'x'.repeat(60)}`;
    await produceWithRetry(cluster, topic, 0, label);
    acknowledged.push(label);
  }
}

function flipByte(filePath: string, position: number): void {
  const fd = openSync(filePath, 'r+');
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, position);
  byte[0] = byte[0]! ^ 0x04;
  writeSync(fd, byte, 0, 1, position);
  closeSync(fd);
}

async function isrOf(): Promise<number[]> {
  const described = await cluster.admin.call(cluster.admin.client.describeTopics, {
    names: [topic],
  });
  return described.topics[0]!.topic!.partitions[0]!.isr;
}

describe('bit rot on a stopped node', () => {
  it('is found at restart, reported with file and offset, and repaired from the leader', async () => {
    await produce(150);
    const leader = await cluster.leaderOf(topic, 0);
    const follower = [0, 1, 2].find((brokerId) => brokerId !== leader)!;
    await eventually(async () => {
      if ((await isrOf()).length !== 3) throw new Error('the ISR is not full yet');
    }, 20_000);
    expect(await cluster.stopNode(follower, 'SIGTERM')).toBe(0);

    const folder = path.join(cluster.dataDirOf(follower), `${topic}-0`);
    const segments = readdirSync(folder)
      .filter((name) => name.endsWith('.log'))
      .sort();
    expect(segments.length).toBeGreaterThanOrEqual(3);
    const closedSegment = path.join(folder, segments[1]!);
    const activeSegment = path.join(folder, segments.at(-1)!);
    // Inside a record of the closed segment, well past its first batch header.
    flipByte(closedSegment, 1500);
    flipByte(activeSegment, 200);

    // The leader takes more while the follower is down; it must catch up on those too.
    await produce(30);
    const restarted = await cluster.startNode(follower).catch((error: Error) => {
      console.log(cluster.nodes.get(follower)!.process.logLines.slice(-60).join('\n'));
      throw error;
    });

    const report = restarted.logLines
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return {};
        }
      })
      .find((record) => typeof record.msg === 'string' && record.msg.startsWith('corrupt batch'));
    expect(report, "no corruption report in the restarted node's log").toBeDefined();
    expect(report).toMatchObject({ partition: `${topic}-0`, file: closedSegment });
    expect(report!.position).toBeGreaterThanOrEqual(0);
    expect(report!.position).toBeLessThanOrEqual(1500);
    expect(BigInt(report!.offset as string)).toBeGreaterThan(0n);

    // Caught up again: same bytes as the leader, back in the ISR.
    await eventually(async () => {
      const leaderBytes = logBytesOnDisk(cluster.dataDirOf(leader), topic, 0);
      const followerBytes = logBytesOnDisk(cluster.dataDirOf(follower), topic, 0);
      if (!followerBytes.equals(leaderBytes)) throw new Error('the follower has not caught up');
      if (!(await isrOf()).includes(follower)) throw new Error('the follower is not in the ISR');
    }, 30_000);

    // Only the repaired node remains: it leads and serves everything, intact.
    for (const brokerId of [0, 1, 2].filter((id) => id !== follower)) {
      await cluster.stopNode(brokerId, 'SIGKILL');
    }
    await eventually(async () => {
      if ((await cluster.leaderOf(topic, 0)) !== follower) throw new Error('not leader yet');
    }, 20_000);
    const client = await eventually(() => cluster.dataClient(follower), 10_000);
    const values: string[] = [];
    try {
      let offset = 0n;
      while (values.length < acknowledged.length) {
        const fetched = await eventually(async () => {
          const response = await client.fetch(
            {
              replicaId: consumerReplicaId,
              brokerEpoch: -1n,
              maxWaitMs: 0,
              minBytes: 0,
              maxBytes: 1024 * 1024,
              partitions: [
                {
                  topic,
                  partition: 0,
                  fetchOffset: offset,
                  currentLeaderEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: 1024 * 1024,
                },
              ],
            },
            { timeoutMs: 5_000 },
          );
          const partition = response.partitions[0]!;
          if (partition.errorCode !== '') throw new Error(partition.errorCode);
          if (partition.records.length === 0) throw new Error('nothing served yet');
          return partition;
        }, 20_000);
        // decodeRecordBatches verifies every CRC, as a consumer with check.crcs does.
        for (const batch of decodeRecordBatches(fetched.records)) {
          for (const record of batch.records) values.push(record.value!.toString());
          offset = batch.header.lastOffset + 1n;
        }
      }
    } finally {
      await client.close();
    }
    expect(values).toEqual(acknowledged);
  }, 150_000);
});
