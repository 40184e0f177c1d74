// Proves a LogDirectory's recovery points and clean-shutdown marker on real folders: a clean
// close writes one checkpoint and one marker for all logs (none per log) and the next load scans
// nothing; after a crash each log recovers only the segments from its checkpointed recovery
// point on (and reports it), a log missing from the checkpoint recovers from its start; a
// truncation rewrites the checkpoint before the next turn of the event loop; per-log files of an
// older version are read once and removed; a log created after the load is not vouched for by
// the marker; a malformed checkpoint is reported and recovers everything. The high watermarks:
// one checkpoint for every log, written only when one moved, read back at the next load (cut to
// the recovered log end), dropped with a deleted log; a legacy per-folder file is read and removed
// once the directory's checkpoint holds its value; a malformed checkpoint starts every HW at its
// log start.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCheckpointFile, writeOffsetCheckpoint } from './checkpoint-file';
import { FileHandleCache } from './file-handle-cache';
import type { Log } from './log';
import {
  cleanShutdownFile,
  legacyHighWatermarkFile,
  recoveryPointCheckpointFile,
} from './log-files';
import { highWatermarksCheckpointFile, LogDirectory } from './log-directory';
import { batchOf, recordsOf, temporaryDirectory } from './testing';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const leader = { leaderEpoch: 1, assignOffsets: true };
const batch = batchOf(10, { valueSizeBytes: 50 });
/** Four batches a segment. */
const config = { segmentBytes: batch.length * 4, indexIntervalBytes: 0 };

function root(): string {
  const made = temporaryDirectory('spool-log-directory-');
  cleanups.push(made.remove);
  return made.directory;
}

async function load(directory: string, folders: string[]) {
  const logDirectory = LogDirectory.open(directory, { files: new FileHandleCache(16) });
  const loaded = await logDirectory.loadLogs(folders, () => ({ config }));
  const logs = new Map(loaded.logs.map((entry) => [entry.folder, entry.log]));
  const reports = new Map(loaded.logs.map((entry) => [entry.folder, entry.report]));
  return { logDirectory, logs, reports, report: loaded.report };
}

function append(log: Log, batches: number): void {
  for (let index = 0; index < batches; index++) log.append(Buffer.from(batch), leader);
}

async function closeAll(logDirectory: LogDirectory, logs: Map<string, Log>): Promise<void> {
  for (const log of logs.values()) await log.close();
  logDirectory.close();
}

describe('LogDirectory', () => {
  it('writes one checkpoint and one marker at a clean close, and the next load scans nothing', async () => {
    const directory = root();
    const folders = ['orders-0', 'orders-1', 'my-topic-2'];
    const first = await load(directory, folders);
    for (const log of first.logs.values()) append(log, 6);
    await closeAll(first.logDirectory, first.logs);

    expect(fs.existsSync(path.join(directory, cleanShutdownFile))).toBe(true);
    expect(readCheckpointFile(path.join(directory, recoveryPointCheckpointFile))).toEqual([
      'orders 0 60',
      'orders 1 60',
      'my-topic 2 60',
    ]);
    for (const folder of folders) {
      expect(fs.existsSync(path.join(directory, folder, cleanShutdownFile))).toBe(false);
      expect(fs.existsSync(path.join(directory, folder, recoveryPointCheckpointFile))).toBe(false);
    }

    const second = await load(directory, folders);
    expect(second.report).toMatchObject({
      cleanShutdown: true,
      logsLoaded: 3,
      logsRecovered: 0,
      segmentsRecovered: 0,
      bytesTruncated: 0,
    });
    // The marker is gone before any log can take an append.
    expect(fs.existsSync(path.join(directory, cleanShutdownFile))).toBe(false);
    expect(second.logs.get('my-topic-2')!.logEndOffset).toBe(60n);
    await closeAll(second.logDirectory, second.logs);
  });

  it('after a crash recovers only the segments from each recovery point on', async () => {
    const directory = root();
    const first = await load(directory, ['orders-0', 'orders-1']);
    // orders-0: 10 batches in 3 segments (bases 0, 40, 80); flushed, then checkpointed at 100.
    const flushed = first.logs.get('orders-0')!;
    append(flushed, 10);
    await flushed.flush();
    first.logDirectory.checkpointRecoveryPoints();
    // Then 6 more: segment 80 fills up to 119 and segment 120 takes 120 to 159.
    append(flushed, 6);
    // orders-1: 5 batches in segments 0 and 40, past its checkpointed recovery point 0.
    append(first.logs.get('orders-1')!, 5);
    for (const log of first.logs.values()) log.abandon();

    const second = await load(directory, ['orders-0', 'orders-1', 'orders-2']);
    expect(second.report.cleanShutdown).toBe(false);
    // orders-0: segments 80 (it holds the recovery point 100) and 120 scanned, 0 and 40 not.
    expect(second.reports.get('orders-0')).toMatchObject({ clean: false, segmentsScanned: 2 });
    expect(second.reports.get('orders-1')).toMatchObject({ clean: false, segmentsScanned: 2 });
    // orders-2 is new and empty: nothing to recover.
    expect(second.reports.get('orders-2')).toMatchObject({ segmentsScanned: 0 });
    expect(second.report.segmentsRecovered).toBe(4);
    expect(second.report.logsRecovered).toBe(2);
    expect(second.logs.get('orders-0')!.logEndOffset).toBe(160n);
    expect(second.logs.get('orders-0')!.segmentBaseOffsets()).toEqual([0n, 40n, 80n, 120n]);
    expect(second.logs.get('orders-1')!.logEndOffset).toBe(50n);
    const read = second.logs.get('orders-0')!.read(0n, 1 << 20);
    expect(recordsOf(read.slices)).toHaveLength(160);
    read.release();
    // The recovered ends are checkpointed at once, not a minute later.
    expect(readCheckpointFile(path.join(directory, recoveryPointCheckpointFile))).toEqual([
      'orders 0 160',
      'orders 1 50',
      'orders 2 0',
    ]);
    await closeAll(second.logDirectory, second.logs);
  });

  it('rewrites the checkpoint in a microtask when a truncation moves a recovery point back', async () => {
    const directory = root();
    const first = await load(directory, ['orders-0']);
    const log = first.logs.get('orders-0')!;
    append(log, 6);
    await log.flush();
    first.logDirectory.checkpointRecoveryPoints();
    const checkpoint = path.join(directory, recoveryPointCheckpointFile);
    expect(readCheckpointFile(checkpoint)).toEqual(['orders 0 60']);
    log.truncateTo(25n);
    await Promise.resolve();
    expect(readCheckpointFile(checkpoint)).toEqual(['orders 0 20']);
    await closeAll(first.logDirectory, first.logs);
  });

  it('reads and removes the per-log marker and checkpoint of an older version', async () => {
    const directory = root();
    const first = await load(directory, ['orders-0']);
    append(first.logs.get('orders-0')!, 6);
    await first.logs.get('orders-0')!.close();
    // What an older version left: its own marker and checkpoint, none of the directory's.
    fs.writeFileSync(path.join(directory, 'orders-0', cleanShutdownFile), '');
    writeOffsetCheckpoint(path.join(directory, 'orders-0', recoveryPointCheckpointFile), 60n);

    const second = await load(directory, ['orders-0']);
    expect(second.report.logsRecovered).toBe(0);
    expect(second.logs.get('orders-0')!.logEndOffset).toBe(60n);
    expect(fs.readdirSync(path.join(directory, 'orders-0'))).not.toContain(cleanShutdownFile);
    expect(fs.readdirSync(path.join(directory, 'orders-0'))).not.toContain(
      recoveryPointCheckpointFile,
    );
    await closeAll(second.logDirectory, second.logs);
  });

  it('does not vouch for a log opened after the load with the marker of the one before', async () => {
    const directory = root();
    const first = await load(directory, ['orders-0']);
    append(first.logs.get('orders-0')!, 6);
    await closeAll(first.logDirectory, first.logs);

    // The marker and the checkpoint speak for the logs of the load; orders-0 is not one of them.
    const second = await load(directory, []);
    expect(second.report.cleanShutdown).toBe(true);
    const opened = await second.logDirectory.openLog('orders-0', { config });
    expect(opened.report).toMatchObject({ clean: false, segmentsScanned: 2 });
    expect(opened.log.logEndOffset).toBe(60n);
    await opened.log.close();
    second.logDirectory.close();
  });

  it('reports a malformed checkpoint and recovers every log from its start', async () => {
    const directory = root();
    const first = await load(directory, ['orders-0']);
    append(first.logs.get('orders-0')!, 6);
    for (const log of first.logs.values()) log.abandon();
    fs.writeFileSync(path.join(directory, recoveryPointCheckpointFile), '0\n1\ngarbage\n');

    const second = await load(directory, ['orders-0']);
    expect(second.report.problems).toEqual([
      expect.stringContaining('bad entry "garbage"; every log recovers from its start'),
    ]);
    expect(second.report.segmentsRecovered).toBe(2);
    expect(second.logs.get('orders-0')!.logEndOffset).toBe(60n);
    await closeAll(second.logDirectory, second.logs);
  });

  describe('high watermarks', () => {
    it('checkpoints them in one file, only when one moved, and loads them back', async () => {
      const directory = root();
      const checkpointPath = path.join(directory, highWatermarksCheckpointFile);
      const first = await load(directory, ['orders-0', 'orders-1']);
      // New and empty: no entry means the log start, so there is nothing to write.
      expect(first.logDirectory.checkpointHighWatermarks()).toBe(false);
      expect(fs.existsSync(checkpointPath)).toBe(false);
      const orders0 = first.logs.get('orders-0')!;
      append(orders0, 3);
      orders0.updateHighWatermark(20n);
      expect(first.logDirectory.checkpointHighWatermarks()).toBe(true);
      expect(readCheckpointFile(checkpointPath)).toEqual(['orders 0 20']);
      expect(first.logDirectory.checkpointHighWatermarks()).toBe(false);
      // A crash: the next load starts from the checkpoint, not from the lost in-memory value.
      orders0.updateHighWatermark(30n);
      for (const log of first.logs.values()) log.abandon();

      const second = await load(directory, ['orders-0', 'orders-1']);
      expect(second.logs.get('orders-0')!.highWatermark).toBe(20n);
      expect(second.logs.get('orders-1')!.highWatermark).toBe(0n);
      second.logs.get('orders-0')!.updateHighWatermark(30n);
      await closeAll(second.logDirectory, second.logs);
      expect(readCheckpointFile(checkpointPath)).toEqual(['orders 0 30']);
    });

    it('keeps a HW within the log: cut to a shorter recovered log, and by truncation', async () => {
      const directory = root();
      const first = await load(directory, ['t-0']);
      const log = first.logs.get('t-0')!;
      append(log, 2);
      expect(log.updateHighWatermark(99n)).toBe(20n);
      first.logDirectory.checkpointHighWatermarks();
      log.truncateTo(10n);
      expect(log.highWatermark).toBe(10n);
      log.abandon();
      // The checkpoint says 20 but the log now ends at 10.
      const second = await load(directory, ['t-0']);
      expect(second.logs.get('t-0')!.highWatermark).toBe(10n);
      for (const reopened of second.logs.values()) reopened.abandon();
    });

    it("drops a deleted log's entry, so a log created again in the folder starts at 0", async () => {
      const directory = root();
      const { logDirectory, logs } = await load(directory, ['t-0', 't-1']);
      append(logs.get('t-0')!, 1);
      logs.get('t-0')!.updateHighWatermark(10n);
      append(logs.get('t-1')!, 1);
      logs.get('t-1')!.updateHighWatermark(10n);
      logDirectory.checkpointHighWatermarks();
      await logs.get('t-0')!.delete();
      expect(logDirectory.checkpointHighWatermarks()).toBe(true);
      expect(readCheckpointFile(path.join(directory, highWatermarksCheckpointFile))).toEqual([
        't 1 10',
      ]);
      const { log } = await logDirectory.openLog('t-0', { config });
      expect(log.highWatermark).toBe(0n);
      log.abandon();
      logs.get('t-1')!.abandon();
    });

    it('reads a legacy high-watermark file, and removes it once the checkpoint holds it', async () => {
      const directory = root();
      const first = await load(directory, ['t-0']);
      append(first.logs.get('t-0')!, 3);
      await closeAll(first.logDirectory, first.logs);
      const legacyPath = path.join(directory, 't-0', legacyHighWatermarkFile);
      fs.writeFileSync(legacyPath, '25\n');

      const second = await load(directory, ['t-0']);
      expect(second.logs.get('t-0')!.highWatermark).toBe(25n);
      expect(fs.existsSync(legacyPath)).toBe(true);
      expect(second.logDirectory.checkpointHighWatermarks()).toBe(true);
      expect(fs.existsSync(legacyPath)).toBe(false);
      expect(readCheckpointFile(path.join(directory, highWatermarksCheckpointFile))).toEqual([
        't 0 25',
      ]);
      await closeAll(second.logDirectory, second.logs);
    });

    it('reports a malformed checkpoint and starts every HW at its log start', async () => {
      const directory = root();
      const first = await load(directory, ['t-0']);
      append(first.logs.get('t-0')!, 3);
      await closeAll(first.logDirectory, first.logs);
      fs.writeFileSync(path.join(directory, highWatermarksCheckpointFile), '0\n1\nnot an entry\n');

      const second = await load(directory, ['t-0']);
      expect(second.report.problems.join('\n')).toMatch(
        /replication-offset-checkpoint: bad entry "not an entry"; every high watermark starts at its log start/,
      );
      expect(second.logs.get('t-0')!.highWatermark).toBe(0n);
      await closeAll(second.logDirectory, second.logs);
    });
  });
});
