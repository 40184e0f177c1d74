// Proves, deterministically on real logs, that a follower using `divergence` (KIP-101 with
// KIP-279's refinement) ends byte-identical to its leader in Kafka's two classic scenarios:
// (1) a leader wrote locally and died before its follower fetched; (2) two failures in a row,
// with a replica that was briefly leader in an epoch the final leader never saw. Each scenario is
// the KIP's own sequence of leader changes, played on two Log instances.
import { mkdtempSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import { Log } from '@spool/segment-store';
import { divergence } from './replica-fetcher';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function openLog(name: string): Promise<Log> {
  const directory = mkdtempSync(path.join(tmpdir(), `spool-${name}-`));
  const { log } = await Log.open(directory);
  cleanups.push(() => {
    log.abandon();
    rmSync(directory, { recursive: true, force: true });
  });
  return log;
}

function write(log: Log, value: string, leaderEpoch: number): void {
  log.append(
    encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from(value), timestampMs: 1n }],
    }),
    { leaderEpoch, assignOffsets: true },
  );
}

function bytes(log: Log): Buffer {
  const read = log.read(log.logStartOffset, 1 << 30);
  const chunks = read.slices.map((slice) => {
    const buffer = Buffer.alloc(slice.sizeBytes);
    readSync(slice.file.fd, buffer, 0, slice.sizeBytes, slice.position);
    return buffer;
  });
  read.release();
  return Buffer.concat(chunks);
}

function values(log: Log): string[] {
  return decodeRecordBatches(bytes(log)).flatMap((batch) =>
    batch.records.map((record) => record.value!.toString()),
  );
}

/** What a follower does on becoming one: find the divergence, truncate, then fetch the rest. */
function follow(follower: Log, leader: Log, highWatermark: bigint): void {
  let asked = follower.latestEpoch;
  for (let round = 0; round < 16; round++) {
    // The leader's side of OffsetsForLeaderEpoch.
    const answer = leader.endOffsetForLeaderEpoch(asked);
    const decision = divergence(
      follower,
      asked,
      { leaderEpoch: answer.epoch, endOffset: answer.endOffset },
      highWatermark,
    );
    if ('askAboutEpoch' in decision) {
      asked = decision.askAboutEpoch;
      continue;
    }
    if (decision.truncateTo < follower.logEndOffset) follower.truncateTo(decision.truncateTo);
    break;
  }
  const read = leader.read(follower.logEndOffset, 1 << 30);
  const chunks = read.slices.map((slice) => {
    const buffer = Buffer.alloc(slice.sizeBytes);
    readSync(slice.file.fd, buffer, 0, slice.sizeBytes, slice.position);
    return buffer;
  });
  read.release();
  if (chunks.length > 0)
    follower.append(Buffer.concat(chunks), { leaderEpoch: -1, assignOffsets: false });
}

describe('follower truncation by leader epoch', () => {
  it('scenario 1: drops what a dead leader wrote but never replicated', async () => {
    const a = await openLog('a');
    const b = await openLog('b');
    write(a, 'm0', 0);
    write(a, 'm1', 0);
    follow(b, a, 0n);
    write(a, 'm2', 0); // not replicated: A dies
    write(b, 'm3', 1); // B leads in epoch 1
    follow(a, b, 2n); // A returns as a follower
    expect(values(a)).toEqual(['m0', 'm1', 'm3']);
    expect(bytes(a).equals(bytes(b))).toBe(true);
  });

  it('scenario 2: two failures in a row with a briefly leading replica', async () => {
    const a = await openLog('a');
    const b = await openLog('b');
    write(a, 'm0', 0);
    follow(b, a, 0n);
    write(a, 'm1', 0); // A, leader in epoch 0, writes m1 alone; both fail
    write(b, 'm2', 1); // B returns first and leads in epoch 1; fails
    write(a, 'm3', 2); // A leads briefly in epoch 2, which B never sees; fails
    write(b, 'm4', 3); // B leads in epoch 3
    follow(a, b, 1n); // A returns as a follower of B
    expect(values(a)).toEqual(['m0', 'm2', 'm4']);
    expect(bytes(a).equals(bytes(b))).toBe(true);
  });
});
