/**
 * When a partition log's appends reach the disk (Kafka's flush scheduling in `UnifiedLog` and
 * `LogManager`): the kernel's write-out of recent appends as they go, the fdatasync that a flush
 * policy (flush.messages, flush.ms) or a roll asks for, and the recovery point that a finished
 * flush moves forward. The log (log.ts) owns the segments and the recovery point; this decides
 * when to sync them and tells the log what a finished flush made durable.
 *
 * Crash story: this writes no file of its own. The recovery point moves only after an fdatasync
 * covered every byte below it and the folder entries of its segments are durable, and never past
 * a truncation that happened while the flush ran (the truncation generation changed): log.ts,
 * crash story 3.
 *
 * Interleaving: one flush runs at a time; calls while it runs coalesce into one more flush that
 * covers every append before it. Write-outs are fire-and-forget on the addon's thread pool, each
 * holding a reference to its file so the descriptor cannot be reused under it.
 */
import { storageError } from './errors';
import type { LogConfig } from './log-config';
import type { LogSegment } from './log-segment';
import { fsyncDirectoryAsync } from './checkpoint-file';
import { loadWritebackBinding, type WritebackBinding } from './native-writeback';

/**
 * Every this many bytes appended, the log starts the kernel's write-out of them (sync_file_range,
 * native/writeback.c): no waiting, no journal commit. Without it, the kernel holds a segment's
 * pages dirty until they are 30 s old or the machine's dirty memory passes
 * vm.dirty_background_ratio (10 % of RAM: gigabytes), and a roll's flush then writes a whole
 * 1 GiB segment at once per replica. On one disk that burst stalled every writer: appends
 * throttled in the kernel (balance_dirty_pages) for up to 700 ms (e2e at 434k records/s, three
 * replicas, issue 11). Kafka leaves this to the operator's vm.dirty_* tuning; a log that writes
 * out as it goes needs none. Without the addon, a flush (fdatasync) every
 * writebackWithoutAddonIntervalBytes does the same job at the price of a journal commit each:
 * fdatasync every 4 MiB cost scenario 2 a sixth of its throughput, every 64 MiB let the bursts
 * back (p99 42-44 ms against 22-24 at 16 MiB).
 */
export const writebackIntervalBytes = 4 * 1024 * 1024;
export const writebackWithoutAddonIntervalBytes = 16 * 1024 * 1024;

/** The addon's write-out, when the addon is built (native-writeback.ts). */
export const writebackBindingDefault = loadWritebackBinding();

/** What the flusher reads of its log, and how it reports a flush back. */
export interface FlushedLog {
  readonly directory: string;
  readonly config: LogConfig;
  readonly logEndOffset: bigint;
  readonly recoveryPoint: bigint;
  readonly closed: boolean;
  /** Changes on every truncation (log.ts). */
  readonly truncationGeneration: number;
  readonly activeSegment: LogSegment;
  /** Segments holding offsets at or past `offset`. */
  segmentsFrom(offset: bigint): LogSegment[];
  /** A flush made everything below `offset` durable. */
  flushedTo(offset: bigint): void;
}

export class LogFlusher {
  private unflushedRecords = 0;
  /** Bytes appended since the last write-out started (writebackIntervalBytes). */
  private unwrittenBytes = 0;
  /** Where in the active segment the next write-out starts. */
  private writebackPosition = 0;
  private writebackSegment: LogSegment | undefined;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private flushAgain = false;
  /** A roll or a new log created files whose folder entries no flush has made durable yet. */
  private directoryUnsyncedValue = false;
  private readonly writebackIntervalBytes: number;

  constructor(
    private readonly log: FlushedLog,
    private readonly writeback: WritebackBinding | undefined,
    private readonly onBackgroundError: (error: unknown) => void,
  ) {
    this.writebackIntervalBytes =
      writeback === undefined ? writebackWithoutAddonIntervalBytes : writebackIntervalBytes;
  }

  get directoryUnsynced(): boolean {
    return this.directoryUnsyncedValue;
  }

  /** New segment files exist: the next flush makes their folder entries durable too. */
  markDirectoryUnsynced(): void {
    this.directoryUnsyncedValue = true;
  }

  /** After each append: start a write-out every writebackIntervalBytes, and flush by policy. */
  appended(recordCount: number, sizeBytes: number): void {
    this.unflushedRecords += recordCount;
    this.unwrittenBytes += sizeBytes;
    if (this.unwrittenBytes >= this.writebackIntervalBytes) this.startWriteback();
    this.scheduleByPolicy();
  }

  /** A flush in the background, its failure reported to the log's background error handler. */
  flushInBackground(): void {
    this.flush().catch(this.onBackgroundError);
  }

  /**
   * Makes every append before the call durable (fdatasync) and advances the recovery point.
   * Concurrent calls coalesce: one flush runs at a time and the next covers all appends since.
   */
  flush(): Promise<void> {
    if (this.flushing !== undefined) {
      this.flushAgain = true;
      return this.flushing.then(() => (this.flushing === undefined ? this.flush() : this.flushing));
    }
    this.flushing = this.flushOnce().finally(() => {
      this.flushing = undefined;
      if (this.flushAgain) {
        this.flushAgain = false;
        this.flushInBackground();
      }
    });
    return this.flushing;
  }

  /** No flush.ms flush after this (the log is closing). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async flushOnce(): Promise<void> {
    const log = this.log;
    if (log.closed) return;
    const targetOffset = log.logEndOffset;
    const generation = log.truncationGeneration;
    this.unflushedRecords = 0;
    if (targetOffset <= log.recoveryPoint && !this.directoryUnsyncedValue) return;
    const syncDirectory = this.directoryUnsyncedValue;
    this.directoryUnsyncedValue = false;
    const dirty = log.segmentsFrom(log.recoveryPoint);
    try {
      await Promise.all(dirty.map((segment) => segment.flush()));
      if (syncDirectory) await fsyncDirectoryAsync(log.directory);
    } catch (error) {
      if (syncDirectory) this.directoryUnsyncedValue = true;
      throw storageError(`fdatasync of ${log.directory} failed`, error);
    }
    if (generation !== log.truncationGeneration || log.closed) return;
    if (targetOffset > log.recoveryPoint) log.flushedTo(targetOffset);
  }

  /** Starts the write-out of what the active segment got since the last one. */
  private startWriteback(): void {
    this.unwrittenBytes = 0;
    if (this.writeback === undefined) {
      this.flushInBackground();
      return;
    }
    const segment = this.log.activeSegment;
    const start =
      segment === this.writebackSegment ? Math.min(this.writebackPosition, segment.sizeBytes) : 0;
    const end = segment.sizeBytes;
    this.writebackSegment = segment;
    this.writebackPosition = end;
    if (end <= start) return;
    // The reference keeps the descriptor this file's until the pool thread is done with it.
    const file = segment.logFile.acquire();
    this.writeback
      .startWriteback(file.fd, start, end - start)
      .catch((error: unknown) =>
        this.onBackgroundError(storageError(`write-out of ${file.path} failed`, error)),
      )
      .finally(() => file.release());
  }

  private scheduleByPolicy(): void {
    const config = this.log.config;
    if (this.unflushedRecords >= config.flushMessages) {
      this.flushInBackground();
      return;
    }
    if (this.timer === undefined && config.flushMs < Number.MAX_SAFE_INTEGER) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flushInBackground();
      }, config.flushMs);
      this.timer.unref();
    }
  }
}
