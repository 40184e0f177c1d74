// Proves that a replica hosted as leader computes its high watermark at once from its stale
// checkpoint and its ISR: a node restarted after kill -9 that leads a partition alone must
// answer a retried duplicate's acks=all wait without waiting for an append or a follower. And
// that a leader whose replica set changes within its term (a reassignment) tracks the added
// follower's fetches and forgets the removed one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { encodeRecordBatch } from '@spool/record-batch';
import { Log } from '@spool/segment-store';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionReplica } from './partition-replica';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A log of `records` one-record batches opened with a stale HW, `checkpoint` (as after a crash). */
async function logWithStaleCheckpoint(records: number, checkpoint: bigint): Promise<Log> {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-replica-'));
  const { log } = await Log.open(directory);
  cleanups.push(() => {
    log.abandon();
    rmSync(directory, { recursive: true, force: true });
  });
  for (let index = 0; index < records; index++) {
    log.append(
      encodeRecordBatch({
        baseOffset: 0n,
        records: [{ key: null, value: Buffer.from(`v${index}`), timestampMs: 1n }],
      }),
      { leaderEpoch: 0, assignOffsets: true },
    );
  }
  log.updateHighWatermark(checkpoint);
  return log;
}

/** The replica broker `localBrokerId` hosts of t-0, led by broker 0, every replica in the ISR. */
function hosted(log: Log, localBrokerId: number, replicas: number[]): PartitionReplica {
  return new PartitionReplica('t', 0, log, localBrokerId, {
    leaderId: 0,
    leaderEpoch: 1,
    partitionEpoch: 1,
    replicas,
    isr: replicas,
  });
}

describe('PartitionReplica', () => {
  it('hosted as the only in-sync replica and leader, its HW is the log end at once', async () => {
    const log = await logWithStaleCheckpoint(20, 6n);
    const replica = hosted(log, 0, [0]);
    expect(replica.highWatermark).toBe(20n);
  });

  it('hosted as leader with followers in sync, its HW waits for their fetches', async () => {
    const log = await logWithStaleCheckpoint(20, 6n);
    const replica = hosted(log, 0, [0, 1]);
    expect(replica.highWatermark).toBe(6n);
    replica.recordFollowerFetch(1, 20n, Date.now());
    expect(replica.highWatermark).toBe(20n);
  });

  it('hosted as follower, its HW is the checkpoint until the leader says more', async () => {
    const log = await logWithStaleCheckpoint(20, 6n);
    const replica = hosted(log, 1, [0, 1]);
    expect(replica.highWatermark).toBe(6n);
  });

  it('as leader, tracks a replica added within the term and forgets a removed one', async () => {
    const log = await logWithStaleCheckpoint(20, 20n);
    const replica = hosted(log, 0, [0, 1]);
    replica.applyAssignment(
      { leaderId: 0, leaderEpoch: 1, partitionEpoch: 2, replicas: [0, 2], isr: [0, 1] },
      Date.now(),
    );
    expect([...replica.followers.keys()]).toEqual([2]);
    replica.recordFollowerFetch(2, 20n, 1_000);
    expect(replica.followers.get(2)?.logEndOffset).toBe(20n);
    expect(replica.followerLastCaughtUpTimeMs(2, 1_000)).toBe(1_000);
  });
});
