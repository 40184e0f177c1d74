// Proves the storage node's slow-disk test hook (slow-disk-test-hook.ts, the fault suite's slow
// disk) on real processes: a delay written to a node's file holds up that node's log appends,
// a leader's (acks=1 waits for it) and a follower's (acks=all waits for the follower), and
// removing the file takes the delay away. The hook is handed to both append paths only when the
// setting is given, so this is what keeps the fault suite's slow disk working.
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Acks } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { StorageTestCluster } from './support/storage-cluster';

/** Below the hook's cap (2 s) and far above an append on a loaded machine. */
const delayMs = 1_200;
let cluster: StorageTestCluster;

function slowDiskFile(brokerId: number): string {
  return path.join(cluster.dataDirOf(brokerId), '..', `slow-disk-${brokerId}`);
}

function batch(): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.from('slow'), timestampMs: BigInt(Date.now()) }],
  });
}

/** How long one append takes, in ms; it must succeed. */
async function appendMs(acks: Acks): Promise<number> {
  const startedAt = performance.now();
  const result = (await cluster.append('slow', 0, batch(), acks)).results[0]!;
  expect(result.error).toBeUndefined();
  return performance.now() - startedAt;
}

/** Waits until the node's hook has read the file: it logs every change of its delay. */
async function untilDelayIs(brokerId: number, ms: number): Promise<void> {
  const logLines = cluster.nodes.get(brokerId)!.process.logLines;
  const currentDelayMs = () => {
    const line = logLines.filter((text) => text.includes('append delay changed')).at(-1);
    return line === undefined ? 0 : (JSON.parse(line) as { delayMs: number }).delayMs;
  };
  await expect.poll(currentDelayMs).toBe(ms);
}

beforeAll(async () => {
  cluster = await StorageTestCluster.start(0);
  await Promise.all(
    [0, 1].map((brokerId) =>
      cluster.startNode(brokerId, { extraArgs: ['--test-slow-disk-file', slowDiskFile(brokerId)] }),
    ),
  );
  await cluster.createTopic('slow', 1, 2);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('the slow-disk test hook', () => {
  it("delays a leader's appends while its file names a delay, and no longer once it goes", async () => {
    const leaderId = await cluster.leaderOf('slow', 0);
    expect(await appendMs(Acks.ACKS_LEADER)).toBeLessThan(delayMs);
    writeFileSync(slowDiskFile(leaderId), String(delayMs));
    await untilDelayIs(leaderId, delayMs);
    expect(await appendMs(Acks.ACKS_LEADER)).toBeGreaterThanOrEqual(delayMs - 5);
    rmSync(slowDiskFile(leaderId));
    await untilDelayIs(leaderId, 0);
    expect(await appendMs(Acks.ACKS_LEADER)).toBeLessThan(delayMs);
  }, 30_000);

  it("delays a follower's appends: acks=all waits for them", async () => {
    const followerId = 1 - (await cluster.leaderOf('slow', 0));
    expect(await appendMs(Acks.ACKS_ALL)).toBeLessThan(delayMs);
    writeFileSync(slowDiskFile(followerId), String(delayMs));
    await untilDelayIs(followerId, delayMs);
    expect(await appendMs(Acks.ACKS_ALL)).toBeGreaterThanOrEqual(delayMs - 5);
    rmSync(slowDiskFile(followerId));
    await untilDelayIs(followerId, 0);
  }, 30_000);
});
