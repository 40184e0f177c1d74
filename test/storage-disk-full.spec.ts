// Proves a full disk is an operating error, not a crash or a corruption: a storage node whose data
// directory is a small tmpfs (mounted by this test, removed after) answers appends with a
// retriable KAFKA_STORAGE_ERROR once the disk fills, stays up and keeps serving reads, accepts
// appends again by itself once space returns, and after a SIGKILL reopens with every
// acknowledged batch and nothing truncated before the last one.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Acks } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { StorageTestCluster } from './support/storage-cluster';

const mountPoint = mkdtempSync(path.join(tmpdir(), 'spool-full-disk-'));
const fillerFile = path.join(mountPoint, 'filler');
let cluster: StorageTestCluster;

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint]);
  mkdirSync(path.join(mountPoint, 'data'));
  // Leaves about 2 MiB for the log; deleting it later gives the space back.
  writeFileSync(fillerFile, Buffer.alloc(4 * 1024 * 1024, 1));
  cluster = await StorageTestCluster.start(0);
  await startNode();
  await cluster.createTopic('full', 1, 1, [{ name: 'segment.bytes', value: String(512 * 1024) }]);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  try {
    execFileSync('umount', [mountPoint]);
  } finally {
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

function startNode() {
  return cluster.startNode(0, { dataDir: path.join(mountPoint, 'data') });
}

function batch(index: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: Array.from({ length: 8 }, (_, record) => ({
      key: null,
      value: Buffer.alloc(8 * 1024, 65 + ((index + record) % 26)),
      timestampMs: BigInt(Date.now()),
    })),
  });
}

describe('a full disk', () => {
  it('fails appends cleanly, keeps reads going, recovers by itself, loses nothing acknowledged', async () => {
    const acknowledged: Array<{ lastOffset: bigint }> = [];
    let storageError: { code: string; retriable: boolean; message: string } | undefined;
    for (let index = 0; index < 400 && storageError === undefined; index++) {
      const result = (await cluster.append('full', 0, batch(index), Acks.ACKS_LEADER)).results[0]!;
      if (result.error === undefined) acknowledged.push({ lastOffset: result.lastOffset });
      else storageError = result.error;
    }
    expect(storageError).toMatchObject({ code: 'KAFKA_STORAGE_ERROR', retriable: true });
    expect(storageError!.message).toMatch(/ENOSPC/);
    expect(acknowledged.length).toBeGreaterThan(10);
    const lastAcknowledged = acknowledged.at(-1)!.lastOffset;

    const node = cluster.nodes.get(0)!.process;
    expect((await fetch(`http://127.0.0.1:${node.metricsPort}/healthz`)).status).toBe(200);
    const client = await cluster.dataClient(0);
    const read = await client.fetch(
      {
        replicaId: -1,
        brokerEpoch: -1n,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 64 * 1024,
        partitions: [
          {
            topic: 'full',
            partition: 0,
            fetchOffset: 0n,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 64 * 1024,
          },
        ],
      },
      { timeoutMs: 5_000 },
    );
    client.close();
    expect(read.partitions[0]!.errorCode).toBe('');
    expect(read.partitions[0]!.records.length).toBeGreaterThan(0);
    expect(read.partitions[0]!.highWatermark).toBe(lastAcknowledged + 1n);

    rmSync(fillerFile);
    const resumed = await eventually(async () => {
      const result = (await cluster.append('full', 0, batch(999), Acks.ACKS_LEADER)).results[0]!;
      if (result.error !== undefined) throw new Error(result.error.message);
      return result;
    }, 5_000);
    expect(resumed.baseOffset).toBe(lastAcknowledged + 1n);

    expect(await cluster.stopNode(0, 'SIGKILL')).toBe('SIGKILL');
    const restarted = await startNode();
    const recovery = restarted.logLines.find((line) => line.includes('"msg":"log recovered"'));
    expect(recovery).toBeDefined();
    const report = JSON.parse(recovery!) as { logEndOffset: string; bytesTruncated: number };
    expect(BigInt(report.logEndOffset)).toBeGreaterThanOrEqual(resumed.lastOffset + 1n);
  });
});
