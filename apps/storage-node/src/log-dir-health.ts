/**
 * The data directory's health, as Kafka's LogDirFailureChannel keeps it: the first write that
 * fails for the disk's sake (a full disk, an I/O error, a file system gone read-only) takes the
 * directory offline. From then on, until it is healthy again:
 *   - every append to a log in it, a leader's or a follower's, is refused with
 *     KAFKA_STORAGE_ERROR before anything is written (retriable: the producer refreshes its
 *     metadata and finds the new leader);
 *   - the controller hears of it at once (the link heartbeats straight away, carrying
 *     log_dir_offline), moves this node's leaderships to other ISR members and takes it out of
 *     every ISR it can leave, and elects it for nothing, as Kafka's controller does with a
 *     broker's OfflineLogDirs.
 * Kafka keeps a failed directory offline until the broker restarts. Here the node probes the
 * directory instead, every `probeIntervalMs`: once it has room again (a tenth of its file
 * system free, at most 16 MiB, unless `recoveryFreeBytes` says otherwise) and a probe file can
 * be written, synced and removed, the directory is online again, the controller hears that too,
 * and the node rejoins as a follower: its fetchers append again, and each leader takes it back
 * into the ISR when it has caught up. A full disk freed is a short outage for one node's
 * replicas, not for the partitions it led.
 *
 * Which errors count: those whose errno says the disk failed (ENOSPC, EDQUOT, EIO, EROFS), on the
 * error itself or its cause (the segment store wraps them as KAFKA_STORAGE_ERROR with the errno
 * as the cause). Any other error (a closed log, a bad batch) says nothing about the disk.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SpoolError, type Logger } from '@spool/common';
import type { LogDirGuard } from '@spool/segment-store';

export interface LogDirHealthOptions {
  readonly directory: string;
  readonly logger: Logger;
  /** Called on every change, offline (true) or online again (false). */
  readonly onChange: (offline: boolean) => void;
  readonly probeIntervalMs?: number;
  /**
   * Free bytes the directory needs before it is online again; by default a tenth of its file
   * system, at most 16 MiB.
   */
  readonly recoveryFreeBytes?: number;
}

const diskFailureCodes = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS']);
const probeIntervalMsDefault = 500;
/** Room for a good many appends, so a directory just freed does not fail again at once. */
const recoveryFreeBytesMax = 16 * 1024 * 1024;
const probeFileName = '.log-dir-probe';
const probeBytes = 64 * 1024;

/** The errno that names a disk failure, on the error or along its causes; undefined if none. */
export function diskFailureCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current !== undefined && depth < 5; depth++) {
    const code = (current as NodeJS.ErrnoException | null)?.code;
    if (typeof code === 'string' && diskFailureCodes.has(code)) return code;
    current = (current as { cause?: unknown } | null)?.cause;
  }
  return undefined;
}

export class LogDirHealth implements LogDirGuard {
  private failure: { code: string; message: string; sinceMs: number } | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: LogDirHealthOptions) {}

  get offline(): boolean {
    return this.failure !== undefined;
  }

  /** Why the directory is offline (its errno and the failed write's message), if it is. */
  get offlineReason(): string | undefined {
    return this.failure === undefined ? undefined : `${this.failure.code}: ${this.failure.message}`;
  }

  ensureOnline(): void {
    if (this.failure === undefined) return;
    throw new SpoolError(
      'KAFKA_STORAGE_ERROR',
      `the data directory ${this.options.directory} is offline since ` +
        `${new Date(this.failure.sinceMs).toISOString()} (${this.failure.code}: ` +
        `${this.failure.message}); it serves nothing until it is writable again`,
    );
  }

  report(error: unknown): void {
    if (this.failure !== undefined || this.stopped) return;
    const code = diskFailureCode(error);
    if (code === undefined) return;
    this.failure = { code, message: String((error as Error).message), sinceMs: Date.now() };
    this.options.logger.error(
      { err: error, dataDir: this.options.directory, errno: code },
      'data directory offline: its leaderships move and it leaves the ISRs until it is writable',
    );
    this.probeTimer = setInterval(
      () => this.probe(),
      this.options.probeIntervalMs ?? probeIntervalMsDefault,
    );
    this.probeTimer.unref();
    this.options.onChange(true);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.probeTimer);
  }

  /**
   * Whether the directory has room and takes a synced write again; online again if so. Runs
   * every probeIntervalMs while offline; returns whether the directory is online.
   */
  probe(): boolean {
    if (this.failure === undefined) return true;
    const file = path.join(this.options.directory, probeFileName);
    try {
      const stats = fs.statfsSync(this.options.directory);
      const needed =
        this.options.recoveryFreeBytes ??
        Math.min(recoveryFreeBytesMax, (stats.blocks * stats.bsize) / 10);
      if (stats.bavail * stats.bsize < needed) return false;
      const fd = fs.openSync(file, 'w');
      try {
        fs.writeSync(fd, Buffer.alloc(probeBytes));
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.rmSync(file);
    } catch {
      try {
        fs.rmSync(file, { force: true });
      } catch {
        // The next probe writes over it.
      }
      return false;
    }
    const offlineMs = Date.now() - this.failure.sinceMs;
    this.failure = undefined;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.options.logger.warn(
      { dataDir: this.options.directory, offlineMs },
      'data directory online again: its replicas rejoin as followers',
    );
    this.options.onChange(false);
    return true;
  }
}
