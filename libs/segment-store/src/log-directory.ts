/**
 * A data directory of partition logs (Kafka's `LogManager`, for one entry of `log.dirs`): it
 * keeps the recovery points of all its logs in one checkpoint, their high watermarks in another,
 * and one clean-shutdown marker, loads its logs at start-up recovering only what needs
 * recovering, and reports what it did.
 *
 * Files, in the directory itself (each partition's folder is its Log's, see log.ts):
 *
 *   recovery-point-offset-checkpoint   Kafka's format (checkpoint-file.ts), one entry per log:
 *                                      `<topic> <partition> <recovery point>`
 *   replication-offset-checkpoint      the same for high watermarks (Kafka's name and format):
 *                                      `<topic> <partition> <high watermark>`; a log without an
 *                                      entry starts at its log start
 *   .clean-shutdown                    present only between a clean close of every log and the
 *                                      next start
 *
 * Crash story:
 *   1. A clean shutdown closes every log (each flushes what changed since its last flush), then
 *      writes the checkpoint with every log's end offset, then the marker, each fsynced with the
 *      folder. A start that finds the marker trusts every log (sanity checks of the indexes and a
 *      read of each segment's tail, no scan), and removes the marker durably before any log can
 *      take an append: a crash after that recovers.
 *   2. Without the marker, each log recovers from its recovery point in the checkpoint (from its
 *      start when it has no entry: a log created after the last checkpoint), so segments below it
 *      are not scanned. A recovery point in the checkpoint was durable when written: a log moves
 *      its point forward only after an fdatasync covered it; the checkpoint is rewritten every
 *      `recoveryPointCheckpointIntervalMs` and at close, so a stale one only makes recovery scan
 *      more.
 *   3. A truncation moves a log's recovery point back. The checkpoint is rewritten in a microtask
 *      (coalescing a leader change's truncations of many logs into one write): before any I/O
 *      callback, so before any append that the higher, stale point could later vouch for.
 *   4. The checkpoint file is replaced atomically (checkpoint-file.ts); a malformed one is
 *      reported and every log recovers from its start, which is slow but never wrong.
 *   5. The HW checkpoint is rewritten by `checkpointHighWatermarks` (the storage node calls it
 *      every few seconds, as Kafka's replica.high.watermark.checkpoint.interval.ms) only when a
 *      log's HW moved, and at close; a stale one only hides records for a moment after a crash
 *      (log.ts, crash story 5). A malformed one is reported and every HW starts at its log start.
 *      A folder's legacy `high-watermark` file is removed only after a checkpoint holding its
 *      value is durable.
 *   6. A new log's folder entry (here) and its first segment files' entries (in its folder) are
 *      fsynced in the background right after it is created, not on the caller's path: until then
 *      it holds only records that no flush has covered, which an OS crash may take anyway, as
 *      with a roll (log.ts, crash story 3); a lost folder is a log that starts empty again.
 *
 * Interleaving: loading is sequential (each Log.open yields between segments) and its bound on
 * descriptors is the node's FileHandleCache, which every log shares: loading 20,000 logs never
 * holds more open than the cache allows. Checkpoint writes are synchronous and read each open
 * log's recovery point at that moment.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  fsyncDirectory,
  fsyncDirectoryAsync,
  partitionOffsetEntries,
  readPartitionOffsets,
  writeCheckpointFile,
} from './checkpoint-file';
import type { FileHandleCache } from './file-handle-cache';
import {
  cleanShutdownFile,
  legacyHighWatermarkFile,
  recoveryPointCheckpointFile,
} from './log-files';
import { Log, type LogDirectoryMembership, type LogOpenOptions, type RecoveryReport } from './log';

/** How often the recovery points are checkpointed (Kafka's log.flush.offset.checkpoint.interval.ms). */
export const recoveryPointCheckpointIntervalMs = 60_000;

/** The directory's checkpoint of every log's high watermark (Kafka's file name). */
export const highWatermarksCheckpointFile = 'replication-offset-checkpoint';

/** What loading the directory's logs did, summed over every log (each has its RecoveryReport). */
export interface LogDirectoryLoadReport {
  /** The directory's marker was present: the previous process closed every log cleanly. */
  readonly cleanShutdown: boolean;
  readonly logsLoaded: number;
  /**
   * Logs whose recovery did work: scanned batches, cut bytes or segments, or found a problem.
   * An idle log after a crash is not one of them: its active segment is empty.
   */
  readonly logsRecovered: number;
  readonly segmentsRecovered: number;
  readonly batchesRecovered: number;
  readonly bytesTruncated: number;
  readonly segmentsDeleted: number;
  readonly durationMs: number;
  /** Problems found, one line each, with the log they belong to. */
  readonly problems: readonly string[];
}

export interface LoadedLog {
  readonly folder: string;
  readonly log: Log;
  readonly report: RecoveryReport;
}

export class LogDirectory {
  /** Open logs by folder name (`<topic>-<partition>`). */
  private readonly logs = new Map<string, Log>();
  /** Closed logs' last recovery points (their ends), for the checkpoint at close. */
  private readonly closedLogRecoveryPoints = new Map<string, bigint>();
  /** The marker and the start-up checkpoint speak for the logs loaded at start-up only. */
  private loaded = false;
  /**
   * Every log's HW as the checkpoint file holds it (read at open, then as last written); open
   * logs' current values are compared with it, so an idle directory writes nothing.
   */
  private readonly checkpointedHighWatermarks: Map<string, bigint>;
  /** An entry was removed (a deleted log) or must be added since the last HW checkpoint. */
  private highWatermarksChanged = false;
  /** Folders whose legacy `high-watermark` file goes once a HW checkpoint is durable. */
  private readonly legacyHighWatermarkFolders = new Set<string>();
  private checkpointScheduled = false;
  private rootSyncScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    readonly root: string,
    private readonly files: FileHandleCache,
    readonly cleanShutdown: boolean,
    private readonly recoveryPoints: Map<string, bigint>,
    highWatermarks: Map<string, bigint>,
    /** Problems reading the directory's own files, reported with the load. */
    private readonly problems: readonly string[],
    private readonly onBackgroundError: (error: unknown) => void,
  ) {
    this.checkpointedHighWatermarks = highWatermarks;
  }

  /**
   * Reads the directory's checkpoint and marker. Nothing is changed until `loadLogs`; the caller
   * holds the directory's lock.
   */
  static open(
    root: string,
    options: { files: FileHandleCache; onBackgroundError?: (error: unknown) => void },
  ): LogDirectory {
    fs.mkdirSync(root, { recursive: true });
    const cleanShutdown = fs.existsSync(path.join(root, cleanShutdownFile));
    const problems: string[] = [];
    const recoveryPoints = readPartitionOffsets(
      path.join(root, recoveryPointCheckpointFile),
      problems,
      'every log recovers from its start',
    );
    const highWatermarks = readPartitionOffsets(
      path.join(root, highWatermarksCheckpointFile),
      problems,
      'every high watermark starts at its log start until its leader raises it',
    );
    return new LogDirectory(
      root,
      options.files,
      cleanShutdown,
      recoveryPoints,
      highWatermarks,
      problems,
      options.onBackgroundError ?? (() => {}),
    );
  }

  /**
   * Opens the logs in `folders` (names inside the directory), recovering those that need it, then
   * removes the clean-shutdown marker durably, and starts the periodic checkpoint. Never throws
   * for damaged data: each log cuts and reports it.
   */
  async loadLogs(
    folders: readonly string[],
    logOptions: (folder: string) => LogOpenOptions = () => ({}),
  ): Promise<{ logs: LoadedLog[]; report: LogDirectoryLoadReport }> {
    const startedAtMs = Date.now();
    const logs: LoadedLog[] = [];
    for (const folder of folders) {
      const { log, report } = await this.openLog(folder, logOptions(folder));
      logs.push({ folder, log, report });
    }
    this.loaded = true;
    this.recoveryPoints.clear();
    const markerPath = path.join(this.root, cleanShutdownFile);
    if (fs.existsSync(markerPath)) {
      fs.rmSync(markerPath);
      fsyncDirectory(this.root);
    }
    // Recovered logs have new recovery points (their ends): record them now, not in a minute.
    if (logs.some((loaded) => !loaded.report.clean)) this.checkpointRecoveryPoints();
    this.timer = setInterval(() => {
      try {
        this.checkpointRecoveryPoints();
      } catch (error) {
        this.onBackgroundError(error);
      }
    }, recoveryPointCheckpointIntervalMs);
    this.timer.unref();
    return { logs, report: summarize(this.cleanShutdown, logs, this.problems, startedAtMs) };
  }

  /** Opens (or creates) the log in `folder` as one of this directory's. */
  async openLog(
    folder: string,
    options: LogOpenOptions = {},
  ): Promise<{ log: Log; report: RecoveryReport }> {
    const directory = path.join(this.root, folder);
    const created = !fs.existsSync(directory);
    const opened = await Log.open(directory, {
      ...options,
      files: this.files,
      logDirectory: this.membership(folder),
    });
    // The new folder's entry in the directory becomes durable soon, off the caller's path.
    if (created) this.scheduleRootSync();
    this.logs.set(folder, opened.log);
    this.closedLogRecoveryPoints.delete(folder);
    return opened;
  }

  /** Writes every open log's recovery point, replacing the checkpoint atomically. */
  checkpointRecoveryPoints(): void {
    const recoveryPoints = new Map(this.closedLogRecoveryPoints);
    for (const [folder, log] of this.logs) recoveryPoints.set(folder, log.recoveryPoint);
    const entries = partitionOffsetEntries(recoveryPoints);
    writeCheckpointFile(path.join(this.root, recoveryPointCheckpointFile), entries);
  }

  /**
   * Writes every open log's HW, replacing the checkpoint atomically, when any moved since the
   * last write (crash story 5). Returns whether it wrote.
   */
  checkpointHighWatermarks(): boolean {
    let changed = this.highWatermarksChanged || this.legacyHighWatermarkFolders.size > 0;
    for (const [folder, log] of this.logs) {
      if (this.recordHighWatermark(folder, log)) changed = true;
    }
    if (!changed) return false;
    writeCheckpointFile(
      path.join(this.root, highWatermarksCheckpointFile),
      partitionOffsetEntries(this.checkpointedHighWatermarks),
    );
    this.highWatermarksChanged = false;
    for (const folder of this.legacyHighWatermarkFolders) {
      fs.rmSync(path.join(this.root, folder, legacyHighWatermarkFile), { force: true });
    }
    this.legacyHighWatermarkFolders.clear();
    return true;
  }

  /**
   * After every log was closed: writes the checkpoint, then the marker, so the next start trusts
   * every log. With a log still open (closing it failed) there is no marker: the next start
   * recovers from the recovery points instead.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const stillOpen = this.logs.size;
    this.checkpointRecoveryPoints();
    this.checkpointHighWatermarks();
    if (stillOpen > 0) return;
    const marker = fs.openSync(path.join(this.root, cleanShutdownFile), 'w');
    try {
      fs.fsyncSync(marker);
    } finally {
      fs.closeSync(marker);
    }
    fsyncDirectory(this.root);
  }

  /**
   * What a log opened now learns of the directory. A log opened after the start-up load (a new
   * replica, or one deleted and created again) is not vouched for by the marker or the start-up
   * checkpoint: those described the folder's previous log.
   */
  private membership(folder: string): LogDirectoryMembership {
    const recoveryPoint = this.loaded ? undefined : this.recoveryPoints.get(folder);
    return {
      cleanShutdown: this.cleanShutdown && !this.loaded,
      recoveryPoint,
      // The HW checkpoint follows the logs it describes: a deleted log's entry is gone (below),
      // so a log created again in the folder starts at its log start.
      highWatermark: this.checkpointedHighWatermarks.get(folder),
      legacyHighWatermarkFound: () => this.legacyHighWatermarkFolders.add(folder),
      recoveryPointLowered: () => this.scheduleCheckpoint(),
      detached: (log, how) => {
        if (this.logs.get(folder) !== log) return;
        this.logs.delete(folder);
        // A closed log's final recovery point (its end) still belongs in the checkpoint.
        if (how === 'closed') this.closedLogRecoveryPoints.set(folder, log.recoveryPoint);
        if (how === 'closed' && this.recordHighWatermark(folder, log)) {
          this.highWatermarksChanged = true;
        }
        if (how === 'deleted') {
          this.legacyHighWatermarkFolders.delete(folder);
          if (this.checkpointedHighWatermarks.delete(folder)) this.highWatermarksChanged = true;
        }
      },
    };
  }

  /** Sets the log's entry for the next HW checkpoint; returns whether it changed. */
  private recordHighWatermark(folder: string, log: Log): boolean {
    const highWatermark = log.highWatermark;
    const checkpointed = this.checkpointedHighWatermarks.get(folder);
    if (highWatermark === checkpointed) return false;
    // No entry means "the log start": a new, empty log needs none.
    if (checkpointed === undefined && highWatermark === log.logStartOffset) return false;
    this.checkpointedHighWatermarks.set(folder, highWatermark);
    return true;
  }

  /** One fsync of the directory for every folder created since the last one; never blocks. */
  private scheduleRootSync(): void {
    if (this.rootSyncScheduled) return;
    this.rootSyncScheduled = true;
    setImmediate(() => {
      this.rootSyncScheduled = false;
      fsyncDirectoryAsync(this.root).catch(this.onBackgroundError);
    });
  }

  private scheduleCheckpoint(): void {
    if (this.checkpointScheduled || this.closed) return;
    this.checkpointScheduled = true;
    queueMicrotask(() => {
      this.checkpointScheduled = false;
      try {
        this.checkpointRecoveryPoints();
      } catch (error) {
        this.onBackgroundError(error);
      }
    });
  }
}

/** Whether opening the log recovered anything (see LogDirectoryLoadReport.logsRecovered). */
export function recoveryDidWork(report: RecoveryReport): boolean {
  return (
    report.segmentsScanned > 0 ||
    report.bytesTruncated > 0 ||
    report.segmentsDeleted > 0 ||
    report.problems.length > 0
  );
}

function summarize(
  cleanShutdown: boolean,
  logs: readonly LoadedLog[],
  directoryProblems: readonly string[],
  startedAtMs: number,
): LogDirectoryLoadReport {
  let logsRecovered = 0;
  let segmentsRecovered = 0;
  let batchesRecovered = 0;
  let bytesTruncated = 0;
  let segmentsDeleted = 0;
  const problems = [...directoryProblems];
  for (const { folder, report } of logs) {
    if (recoveryDidWork(report)) logsRecovered++;
    segmentsRecovered += report.segmentsScanned;
    batchesRecovered += report.batchesValid;
    bytesTruncated += report.bytesTruncated;
    segmentsDeleted += report.segmentsDeleted;
    for (const problem of report.problems) problems.push(`${folder}: ${problem}`);
  }
  return {
    cleanShutdown,
    logsLoaded: logs.length,
    logsRecovered,
    segmentsRecovered,
    batchesRecovered,
    bytesTruncated,
    segmentsDeleted,
    durationMs: Date.now() - startedAtMs,
    problems,
  };
}
