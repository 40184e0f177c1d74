// Proves the log cleaner's swap is atomic across real process crashes: for every step of the
// swap (cleaner/segment-swap.ts: the .cleaned files written, each old file set aside as .deleted,
// the .cleaned renamed to .swap with the .log.swap as the commit point, the .swap renamed into
// place, the .deleted removed), a child (support/compaction-crash-cleaner.mjs) cleans a compacted
// log of four closed segments and is SIGKILLed by the cleaner's test hook right after that step.
// This process then reopens the log and checks that it holds exactly the old records or exactly
// the compacted ones (never a mix, never a loss): the old ones for a crash before the commit
// point, the new ones after it, that the recovery report says which (cleanerSwap), that no
// .cleaned, .deleted or .swap file is left, and that a cleaner pass after the recovery ends with
// the compacted records.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import { CleanerCheckpoint, Log, LogCleaner, type LogConfig } from '@spool/segment-store';
import {
  bytesOf,
  swapCrashStepEnvironmentVariable,
  swapCrashSteps,
  temporaryDirectory,
} from '@spool/segment-store/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const childPath = path.join(__dirname, 'support', 'compaction-crash-cleaner.mjs');
/**
 * childRunMsMax: how long a child may take to start, open the log, start the cleaner's thread,
 * clean and die, with all nine at once on a loaded machine.
 */
const childRunMsMax = 40_000;
const folder = 'changelog-0';
const config: Partial<LogConfig> = { cleanupPolicy: ['compact'], minCleanableDirtyRatio: 0 };
/**
 * Whether a crash after `step` is past the commit point, the .log.swap's rename: all of step 3
 * and later (steps run 1, 2, 3, 5, 4), but not 3.1, which stops after the indexes' renames and
 * before the .log's.
 */
function committedAfter(step: number): boolean {
  return step === 3 || step >= 4;
}

const cleanups: Array<() => void> = [];

interface Record {
  readonly offset: bigint;
  readonly key: string;
  readonly value: string | null;
}

async function readAll(log: Log): Promise<Record[]> {
  const read = log.read(log.logStartOffset, 1 << 30);
  try {
    return decodeRecordBatches(bytesOf(read.slices)).flatMap((batch) =>
      batch.records.map((record) => ({
        offset: record.offset,
        key: record.key?.toString() ?? '',
        value: record.value?.toString() ?? null,
      })),
    );
  } finally {
    read.release();
  }
}

/**
 * Four closed segments of keyed records, some keys written again, one deleted by a tombstone,
 * and an active segment; closed cleanly. Returns the records and the active segment's base.
 */
async function writeLog(root: string): Promise<{ records: Record[]; activeBaseOffset: bigint }> {
  const { log } = await Log.open(path.join(root, folder), { config });
  for (let segment = 0; segment < 4; segment++) {
    for (let batch = 0; batch < 3; batch++) {
      const records = Array.from({ length: 4 }, (_, index) => {
        const key = `key-${(segment * 5 + batch * 3 + index) % 7}`;
        const tombstone = segment === 3 && batch === 2 && index === 0;
        return {
          key: Buffer.from(key),
          value: tombstone ? null : Buffer.from(`${key}=${segment}.${batch}.${index}`),
          timestampMs: BigInt(Date.now()),
        };
      });
      log.append(encodeRecordBatch({ baseOffset: 0n, records }), {
        leaderEpoch: 0,
        assignOffsets: true,
      });
    }
    log.roll();
  }
  const activeBaseOffset = log.logEndOffset;
  log.append(
    encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: Buffer.from('key-0'), value: Buffer.from('active'), timestampMs: 1n }],
    }),
    { leaderEpoch: 0, assignOffsets: true },
  );
  const records = await readAll(log);
  await log.close();
  return { records, activeBaseOffset };
}

/** What a full pass leaves: below the active segment, only each key's latest record. */
function compacted(records: readonly Record[], activeBaseOffset: bigint): Record[] {
  const latest = new Map<string, bigint>();
  for (const record of records)
    if (record.offset < activeBaseOffset) latest.set(record.key, record.offset);
  return records.filter(
    (record) => record.offset >= activeBaseOffset || latest.get(record.key) === record.offset,
  );
}

function runChild(root: string, step: number): Promise<CrashRun['child']> {
  const child = spawn(process.execPath, [childPath, root, folder, JSON.stringify(config)], {
    env: { ...process.env, [swapCrashStepEnvironmentVariable]: String(step) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, childRunMsMax);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr, timedOut });
    }),
  );
}

interface CrashRun {
  readonly root: string;
  readonly records: Record[];
  readonly activeBaseOffset: bigint;
  readonly child: {
    signal: NodeJS.Signals | null;
    code: number | null;
    stderr: string;
    /** Killed by this test after childRunMsMax, not by the hook. */
    timedOut: boolean;
  };
}

describe('log cleaner swap across crashes', () => {
  // One log and one child per step, the children all run at once: a child's time is mostly
  // Node's start-up, so the steps together take about as long as one.
  const runs = new Map<number, CrashRun>();
  beforeAll(async () => {
    await Promise.all(
      swapCrashSteps.map(async (step) => {
        const root = temporaryDirectory('spool-compaction-crash-');
        cleanups.push(root.remove);
        const { records, activeBaseOffset } = await writeLog(root.directory);
        const child = await runChild(root.directory, step);
        runs.set(step, { root: root.directory, records, activeBaseOffset, child });
      }),
    );
  }, childRunMsMax + 20_000);
  afterAll(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it.each(swapCrashSteps.map((step) => [step]))(
    'leaves the old segments or the compacted one after a SIGKILL at step %s',
    async (step) => {
      const { root, records, activeBaseOffset, child } = runs.get(step)!;
      const expectedNew = compacted(records, activeBaseOffset);
      expect(expectedNew.length).toBeLessThan(records.length);
      expect(child, child.stderr).toMatchObject({ signal: 'SIGKILL', timedOut: false });

      const { log, report } = await Log.open(path.join(root, folder), { config });
      try {
        const committed = committedAfter(step);
        expect(report.cleanerSwap).toBe(
          step === 4 ? 'none' : committed ? 'completed' : 'discarded',
        );
        expect(await readAll(log)).toEqual(committed ? expectedNew : records);
        expect(
          fs.readdirSync(log.directory).filter((name) => /\.(cleaned|deleted|swap)$/.test(name)),
        ).toEqual([]);

        log.updateHighWatermark(log.logEndOffset);
        const cleaner = new LogCleaner();
        try {
          await cleaner.cleanFilthiest([{ log, checkpoint: CleanerCheckpoint.load(root) }]);
        } finally {
          await cleaner.close();
        }
        expect(await readAll(log)).toEqual(expectedNew);
      } finally {
        log.abandon();
      }
    },
  );
});
