// The data directory's health: a disk failure (an errno such as ENOSPC, on the error or its
// cause) takes it offline once, other errors do not; offline, appends are refused with
// KAFKA_STORAGE_ERROR before anything is written and an append that fails for the disk reports
// it; it comes back only when a probe finds the free space it needs and a synced write works.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@spool/common';
import { encodeRecordBatch } from '@spool/record-batch';
import { Log, ProducerStateLog, SegmentStoreError } from '@spool/segment-store';
import { diskFailureCode, LogDirHealth } from './log-dir-health';

const logger = createLogger({ service: 'log-dir-health-test', level: 'silent' });
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function folder(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-log-dir-health-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: write failed`), { code, errno: -28 });
}

/** What the segment store throws for a failed write: KAFKA_STORAGE_ERROR, the errno as cause. */
function wrapped(code: string): SegmentStoreError {
  return new SegmentStoreError('KAFKA_STORAGE_ERROR', `append failed: ${code}`, {
    cause: errno(code),
  });
}

function health(directory: string, recoveryFreeBytes: number) {
  const changes: boolean[] = [];
  const value = new LogDirHealth({
    directory,
    logger,
    onChange: (offline) => changes.push(offline),
    // Probed by hand below.
    probeIntervalMs: 3_600_000,
    recoveryFreeBytes,
  });
  cleanups.push(() => value.stop());
  return { health: value, changes };
}

describe('log dir health', () => {
  it('names the errno of a disk failure on the error or its cause, and nothing else', () => {
    expect(diskFailureCode(errno('ENOSPC'))).toBe('ENOSPC');
    expect(diskFailureCode(wrapped('EIO'))).toBe('EIO');
    expect(diskFailureCode(wrapped('EROFS'))).toBe('EROFS');
    expect(diskFailureCode(errno('ENOENT'))).toBeUndefined();
    expect(diskFailureCode(new SegmentStoreError('KAFKA_STORAGE_ERROR', 'log is closed'))).toBe(
      undefined,
    );
    expect(diskFailureCode(undefined)).toBeUndefined();
  });

  it('goes offline once on a disk failure, refuses while offline, and is back after a probe', () => {
    const directory = folder();
    const full = health(directory, Number.MAX_SAFE_INTEGER);
    full.health.report(new SegmentStoreError('INVALID_RECORD', 'bad batch'));
    full.health.report(errno('ENOENT'));
    expect(full.health.offline).toBe(false);
    expect(() => full.health.ensureOnline()).not.toThrow();

    full.health.report(wrapped('ENOSPC'));
    full.health.report(wrapped('EIO'));
    expect(full.health.offline).toBe(true);
    expect(full.changes).toEqual([true]);
    let refusal: unknown;
    try {
      full.health.ensureOnline();
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: 'KAFKA_STORAGE_ERROR', retriable: true });
    expect(String((refusal as Error).message)).toContain(directory);
    expect(String((refusal as Error).message)).toContain('ENOSPC');
    // Not enough free space: still offline, and the probe leaves nothing behind.
    expect(full.health.probe()).toBe(false);
    expect(full.health.offline).toBe(true);
    expect(readdirSync(directory)).toEqual([]);

    const freed = health(directory, 0);
    freed.health.report(errno('ENOSPC'));
    expect(freed.health.probe()).toBe(true);
    expect(freed.health.offline).toBe(false);
    expect(freed.changes).toEqual([true, false]);
    expect(readdirSync(directory)).toEqual([]);
    // A later failure takes it offline again.
    freed.health.report(errno('EDQUOT'));
    expect(freed.changes).toEqual([true, false, true]);
  });

  it('stays offline while a probe cannot write', () => {
    const directory = folder();
    const { health: value } = health(path.join(directory, 'gone'), 0);
    value.report(errno('EIO'));
    expect(value.probe()).toBe(false);
    expect(value.offline).toBe(true);
  });

  it('makes appends refuse before writing while offline, and reports an append that fails', async () => {
    const directory = folder();
    const { log } = await Log.open(directory, {});
    cleanups.push(() => log.abandon());
    const { health: value } = health(directory, Number.MAX_SAFE_INTEGER);
    const state = new ProducerStateLog(log, 'p-0', undefined, value);
    state.rebuild();
    const records = () =>
      encodeRecordBatch({
        baseOffset: 0n,
        records: [{ key: null, value: Buffer.from('v'), timestampMs: BigInt(Date.now()) }],
      });
    state.appendAsLeader(records(), 0);
    expect(log.logEndOffset).toBe(1n);

    // The disk fails under the append: the error goes back to the caller and is reported.
    const appendValidated = log.appendValidated.bind(log);
    log.appendValidated = () => {
      throw wrapped('ENOSPC');
    };
    expect(() => state.appendAsLeader(records(), 0)).toThrow(/ENOSPC/);
    expect(value.offline).toBe(true);
    log.appendValidated = appendValidated;

    // Offline: refused before the log is touched, a leader's append and a follower's.
    expect(() => state.appendAsLeader(records(), 0)).toThrow(/offline/);
    const follower = encodeRecordBatch({
      baseOffset: 1n,
      records: [{ key: null, value: Buffer.from('w'), timestampMs: BigInt(Date.now()) }],
    });
    expect(() => state.appendAsFollower(follower, 0)).toThrow(/offline/);
    expect(log.logEndOffset).toBe(1n);
  });
});
