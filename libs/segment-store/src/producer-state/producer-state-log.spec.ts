// Proves, on real logs in temporary folders, that the producer state follows the log: a
// duplicate writes nothing and gets the original offsets; a refused request writes nothing; a
// roll writes a snapshot; after a crash (no clean close) the state is rebuilt from the newest
// snapshot plus the batch headers after it; a clean close leaves a snapshot at the log end so
// nothing is replayed; truncation forgets the batches it removed; a follower's state follows
// the leader's batches, and when it becomes leader it recognises the same duplicates.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeRecordBatch } from '@spool/record-batch';
import { Log } from '../log';
import type { LogConfig } from '../log-config';
import { ProducerStateLog } from './producer-state-log';
import { producerSnapshotFileName } from './producer-state-snapshot';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function folder(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-producer-log-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

async function open(directory: string, config: Partial<LogConfig> = {}): Promise<ProducerStateLog> {
  const { log } = await Log.open(directory, { config });
  cleanups.push(() => log.abandon());
  const state = new ProducerStateLog(log, 'p-0');
  state.rebuild();
  return state;
}

function batch(producerId: bigint, producerEpoch: number, baseSequence: number, count = 2): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    producerId,
    producerEpoch,
    baseSequence,
    records: Array.from({ length: count }, (_, index) => ({
      key: null,
      value: Buffer.from(`value-${baseSequence + index}-${'x'.repeat(100)}`),
      timestampMs: BigInt(Date.now()),
    })),
  });
}

function snapshots(directory: string): string[] {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.snapshot'))
    .sort();
}

describe('ProducerStateLog', () => {
  it('answers a duplicate with the original offsets and writes nothing', async () => {
    const state = await open(folder());
    const first = state.appendAsLeader(batch(5n, 0, 0), 1);
    expect(first).toMatchObject({ kind: 'appended', appended: { baseOffset: 0n, lastOffset: 1n } });
    state.appendAsLeader(batch(5n, 0, 2), 1);
    const endBefore = state.log.logEndOffset;
    const sizeBefore = state.log.sizeBytes;
    expect(state.appendAsLeader(batch(5n, 0, 0), 1)).toEqual({
      kind: 'duplicate',
      baseOffset: 0n,
      lastOffset: 1n,
    });
    expect(() => state.appendAsLeader(batch(5n, 0, 7), 1)).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
    // A damaged duplicate is reported as damaged.
    const damaged = batch(5n, 0, 0);
    damaged[damaged.length - 1] = damaged[damaged.length - 1]! ^ 0xff;
    expect(() => state.appendAsLeader(damaged, 1)).toThrow(
      expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
    );
    expect(state.log.logEndOffset).toBe(endBefore);
    expect(state.log.sizeBytes).toBe(sizeBefore);
  });

  // Found by the fault suite (test/faults): on a full disk the snapshot at a roll failed after
  // the batch was written; the append threw, the state missed the batch, and the producer's
  // retry of it was appended again (a duplicate despite idempotence).
  it('keeps a written batch and its producer state when the snapshot at a roll fails', async () => {
    const directory = folder();
    const state = await open(directory, { segmentBytes: 1_000 });
    let next = 0;
    while (state.log.segmentCount === 1) {
      // The snapshot at the next roll (at the log end offset) cannot be written: a folder has
      // its temporary file's name.
      const blocked = path.join(
        directory,
        `${producerSnapshotFileName(state.log.logEndOffset)}.tmp`,
      );
      mkdirSync(blocked);
      const outcome = state.appendAsLeader(batch(5n, 0, next), 1);
      expect(outcome.kind).toBe('appended');
      rmdirSync(blocked);
      next += 2;
    }
    const endOffset = state.log.logEndOffset;
    // The retry of the batch that rolled is a duplicate, answered with its offsets.
    expect(state.appendAsLeader(batch(5n, 0, next - 2), 1)).toMatchObject({
      kind: 'duplicate',
      lastOffset: endOffset - 1n,
    });
    expect(state.log.logEndOffset).toBe(endOffset);
    expect(snapshots(directory)).toEqual([]);
    // A rebuild without that snapshot replays from the log start and knows the producer.
    state.rebuild();
    expect(state.appendAsLeader(batch(5n, 0, next - 2), 1).kind).toBe('duplicate');
  });

  it('snapshots at each roll and rebuilds after a crash from snapshot plus headers', async () => {
    const directory = folder();
    const state = await open(directory, { segmentBytes: 1_000 });
    for (let index = 0; index < 12; index++) state.appendAsLeader(batch(5n, 0, index * 2), 1);
    state.appendAsLeader(batch(6n, 2, 0, 1), 1);
    expect(state.log.segmentCount).toBeGreaterThan(2);
    const rolls = state.log.segmentBaseOffsets().slice(1);
    expect(snapshots(directory)).toEqual(rolls.map((offset) => producerSnapshotFileName(offset)));
    const before = [...state.producers.entries()];
    state.log.abandon();

    const reopened = await open(directory, { segmentBytes: 1_000 });
    expect([...reopened.producers.entries()]).toEqual(before);
    const report = reopened.rebuild();
    expect(report.snapshotOffset).toBe(rolls.at(-1));
    expect(report.batchesReplayed).toBeGreaterThan(0);
    expect(reopened.appendAsLeader(batch(5n, 0, 20), 1)).toMatchObject({
      kind: 'duplicate',
      baseOffset: 20n,
    });
  });

  it('leaves a snapshot at the log end on a clean close, so the next open replays nothing', async () => {
    const directory = folder();
    const state = await open(directory);
    state.appendAsLeader(batch(5n, 0, 0), 1);
    state.appendAsLeader(batch(5n, 0, 2), 1);
    state.takeSnapshot(true);
    await state.log.close();
    expect(existsSync(path.join(directory, producerSnapshotFileName(4n)))).toBe(true);
    const reopened = await open(directory);
    const report = reopened.rebuild();
    expect(report).toEqual({ snapshotOffset: 4n, batchesReplayed: 0, problems: [] });
    expect(reopened.appendAsLeader(batch(5n, 0, 2), 1)).toMatchObject({ kind: 'duplicate' });
  });

  it('skips a damaged snapshot and replays from an older point', async () => {
    const directory = folder();
    const state = await open(directory);
    state.appendAsLeader(batch(5n, 0, 0), 1);
    state.takeSnapshot(true);
    state.appendAsLeader(batch(5n, 0, 2), 1);
    writeFileSync(path.join(directory, producerSnapshotFileName(4n)), Buffer.from('garbage'));
    const report = state.rebuild();
    expect(report.snapshotOffset).toBe(2n);
    expect(report.problems).toEqual([expect.stringContaining('snapshot at 4 is unusable')]);
    expect(state.appendAsLeader(batch(5n, 0, 2), 1)).toMatchObject({ kind: 'duplicate' });
  });

  it('forgets truncated batches, and follows a leader as a follower', async () => {
    const leader = await open(folder());
    const follower = await open(folder());
    for (let index = 0; index < 4; index++) {
      const records = batch(5n, 0, index * 2);
      leader.appendAsLeader(records, 1);
      // The leader patched the offsets in place: these are the bytes a follower fetches.
      follower.appendAsFollower(records, 1);
    }
    expect([...follower.producers.entries()]).toEqual([...leader.producers.entries()]);
    follower.takeSnapshot(false);
    follower.truncateTo(4n);
    expect(follower.log.logEndOffset).toBe(4n);
    expect(snapshots(follower.log.directory)).toEqual([]);
    expect(follower.producers.get(5n)?.batches.at(-1)).toMatchObject({ lastSequence: 3 });
    // The follower, leader now, takes the producer's next batch and knows its duplicates.
    expect(follower.appendAsLeader(batch(5n, 0, 2), 2)).toMatchObject({ kind: 'duplicate' });
    expect(follower.appendAsLeader(batch(5n, 0, 4), 2)).toMatchObject({ kind: 'appended' });
    follower.truncateFullyAndStartAt(100n);
    expect(follower.producers.producerCount).toBe(0);
    expect(() => follower.appendAsLeader(batch(5n, 0, 6), 2)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_PRODUCER_ID' }),
    );
  });
});
