// Proves bounded open files on a real storage node process: started with --log-open-files-max 64
// and given 300 partitions (900 segment and index files), it serves produce and fetch on every
// one of them, twice (the second round reopens files the first closed), while its descriptors
// counted in /proc/<pid>/fd stay under the bound plus a fixed overhead and its metrics show the
// bound, the count and the evictions; a clean restart loads all 300 logs under the same bound;
// and a bound that does not fit the process's open-file limit stops the node at start-up with a
// message naming the setting.
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callOnce } from '@spool/common';
import { Acks, type DataPortClient } from '@spool/protocol';
import { encodeRecordBatch, setBaseOffset, setPartitionLeaderEpoch } from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { spawnService } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const openFilesMax = 64;
/**
 * Descriptors a storage node holds besides log files: stdio, the event loop's epoll and
 * eventfds, the listeners, the controller link, this test's connections, the data directory
 * lock. Measured at about 30; the margin keeps a busy machine's extra sockets from failing it.
 */
const otherDescriptorsMax = 64;
const topics = ['alpha', 'beta', 'gamma'];
const partitionsPerTopic = 100;

let cluster: StorageTestCluster;
beforeAll(async () => {
  cluster = await StorageTestCluster.start(1, {
    nodeArgs: ['--log-open-files-max', String(openFilesMax), '--metrics-per-partition', 'false'],
  });
  for (const topic of topics) {
    const response = await cluster.admin.createTopic(topic, partitionsPerTopic, 1);
    const error = response.results[0]!.error;
    if (error !== undefined) throw new Error(`${error.code}: ${error.message}`);
  }
  await eventually(async () => {
    for (const topic of topics) await listEndOffsets(topic);
  }, 30_000);
}, 90_000);
afterAll(async () => cluster?.stop());

function partitionNumbers(): number[] {
  return Array.from({ length: partitionsPerTopic }, (_, partition) => partition);
}

/** The end offset of every partition of `topic`, in one ListOffsets; throws on any error. */
async function listEndOffsets(topic: string): Promise<bigint[]> {
  const client = cluster.storageClient(0);
  try {
    const response = await callOnce(client, client.listOffsets, {
      partitions: partitionNumbers().map((partition) => ({
        topic,
        partition,
        spec: 2,
        timestampMs: 0n,
      })),
    });
    return response.results.map((result) => {
      if (result.error !== undefined) throw new Error(`${topic}: ${result.error.code}`);
      return result.offset;
    });
  } finally {
    client.close();
  }
}

function batchFor(topic: string, partition: number, round: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [0, 1].map((index) => ({
      key: null,
      value: Buffer.from(`${topic}-${partition}-round-${round}-${index}`),
      timestampMs: BigInt(Date.now()),
    })),
  });
}

/** What the leader stores for a produced batch: the same bytes with offset and epoch patched. */
function stored(bytes: Buffer, baseOffset: bigint, leaderEpoch: number): Buffer {
  const copy = Buffer.from(bytes);
  setBaseOffset(copy, 0, baseOffset);
  setPartitionLeaderEpoch(copy, 0, leaderEpoch);
  return copy;
}

const expected = new Map<string, Buffer[]>();

/** One Append of a 2-record batch to every partition of every topic; records what is stored. */
async function produceRound(round: number): Promise<void> {
  const client = cluster.storageClient(0);
  try {
    for (const topic of topics) {
      const batches = partitionNumbers().map((partition) => batchFor(topic, partition, round));
      const response = await callOnce(
        client,
        client.append,
        {
          partitions: batches.map((records, partition) => ({ topic, partition, records })),
          acks: Acks.ACKS_ALL,
          timeoutMs: 10_000,
        },
        { deadlineMs: 20_000 },
      );
      for (const [partition, result] of response.results.entries()) {
        expect(result.error, `${topic}-${partition}`).toBeUndefined();
        const key = `${topic}-${partition}`;
        expect(result.baseOffset).toBe(BigInt(round * 2));
        expected.set(key, [
          ...(expected.get(key) ?? []),
          stored(batches[partition]!, result.baseOffset, 0),
        ]);
      }
    }
  } finally {
    client.close();
  }
}

/** Fetches every partition from offset 0 and compares with everything produced. */
async function fetchEverything(): Promise<void> {
  const client: DataPortClient = await cluster.dataClient(0);
  try {
    for (const topic of topics) {
      const response = await client.fetch(
        {
          replicaId: -1,
          brokerEpoch: -1n,
          maxWaitMs: 0,
          minBytes: 1,
          maxBytes: 64 << 20,
          partitions: partitionNumbers().map((partition) => ({
            topic,
            partition,
            fetchOffset: 0n,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          })),
        },
        { timeoutMs: 20_000 },
      );
      expect(response.partitions).toHaveLength(partitionsPerTopic);
      for (const fetched of response.partitions) {
        const key = `${fetched.topic}-${fetched.partition}`;
        expect(fetched.errorCode, key).toBe('');
        expect(fetched.records.equals(Buffer.concat(expected.get(key)!)), key).toBe(true);
      }
    }
  } finally {
    client.close();
  }
}

function descriptorsOf(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * The node's descriptors come back within the bound. Not read at one instant: a file pinned by a
 * transfer or a flush still in flight when the client already has its answer (a sendfile's
 * completion runs after its last byte left) may hold the cache one past its bound per pin, by
 * design (file-handle-cache.ts, point 2), until its unpin closes files again; a leak never
 * comes back under it.
 */
async function expectDescriptorsWithinBound(pid: number): Promise<void> {
  await eventually(async () => {
    expect(descriptorsOf(pid)).toBeLessThanOrEqual(openFilesMax + otherDescriptorsMax);
  }, 5_000);
}

async function metric(name: string): Promise<number> {
  const port = cluster.nodes.get(0)!.process.metricsPort;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ').at(-1));
}

describe('a storage node with more partitions than open files', () => {
  it('serves produce and fetch on all 300 partitions within 64 log descriptors', async () => {
    const pid = cluster.nodes.get(0)!.process.child.pid!;
    for (const round of [0, 1]) {
      await produceRound(round);
      await expectDescriptorsWithinBound(pid);
      await fetchEverything();
      await expectDescriptorsWithinBound(pid);
    }
    expect(await metric('spool_log_open_files_max')).toBe(openFilesMax);
    expect(await metric('spool_log_open_files')).toBeLessThanOrEqual(openFilesMax);
    expect(await metric('spool_log_open_files')).toBeGreaterThan(0);
    // 900 files through 64 descriptors: most opens closed another file first.
    expect(await metric('spool_log_open_file_evictions_total')).toBeGreaterThan(900 - openFilesMax);
  });

  it('loads all 300 logs after a clean restart under the same bound', async () => {
    expect(await cluster.stopNode(0, 'SIGTERM')).toBe(0);
    const restarted = await cluster.startNode(0);
    const summary = restarted.logLines.find((line) => line.includes('"msg":"local logs open'));
    expect(summary).toBeDefined();
    expect(JSON.parse(summary!)).toMatchObject({
      cleanShutdown: true,
      logsLoaded: 300,
      logsRecovered: 0,
      openFilesMax,
    });
    expect(JSON.parse(summary!).openFiles).toBeLessThanOrEqual(openFilesMax);
    await eventually(fetchEverything, 15_000);
    await expectDescriptorsWithinBound(restarted.child.pid!);
  });

  it('refuses at start-up a bound that does not fit the open-file limit', async () => {
    const dataDir = `${cluster.dataDirOf(0)}-refused`;
    const started = spawnService('storage-node', [
      '--broker-id',
      '9',
      '--data-dir',
      dataDir,
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--log-open-files-max',
      '1048576',
    ]);
    expect(await started.exited).toBe(1);
    // The last lines may be read after the exit.
    await eventually(
      async () =>
        expect(started.stdout.join('\n')).toMatch(
          /setting log\.open\.files\.max is 1048576, but this process may open only \d+ files/,
        ),
      5_000,
    );
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
