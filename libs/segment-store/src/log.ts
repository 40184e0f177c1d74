/**
 * A partition's log (Kafka's `UnifiedLog` and `LocalLog`): an ordered list of segments in one
 * folder, `<topic>-<partition>`, of which only the last, the active segment, takes appends.
 *
 * Every file in the folder belongs to this library:
 *
 *   <offset>.log, .index, .timeindex  the segments (log-segment.ts)
 *   <offset>.snapshot                 idempotent producers' state as of that offset
 *                                     (producer-state/producer-state-snapshot.ts)
 *   recovery-point-offset-checkpoint  offset below which everything is known to be on disk
 *   log-start-offset-checkpoint       the log start offset (DeleteRecords and retention move it)
 *   leader-epoch-checkpoint           epoch → start offset (leader-epoch-cache.ts)
 *   high-watermark-checkpoint         the high watermark as of the last checkpoint
 *   partition.metadata                the topic id (partition-metadata-file.ts)
 *   .clean-shutdown                   present only between a clean close and the next open
 *   *.tmp                             an interrupted atomic write; removed on open
 *
 * Checkpoints use the format and atomic write of checkpoint-file.ts.
 *
 * A log opened by a LogDirectory (log-directory.ts, a storage node's data directory) keeps no
 * recovery-point or high-watermark checkpoint and no marker of its own: the directory keeps one
 * checkpoint of each for all its logs and one marker, as Kafka's LogManager and ReplicaManager
 * do, so that a clean shutdown, a start, and a checkpoint round of a node with 20,000 partitions
 * write no file per partition. The crash story below holds with "the directory's" in place of
 * "the log's" checkpoints and marker. Folders written by a version that kept them per log (the
 * recovery point, or a plain-text `high-watermark`) are read once and the per-log files removed
 * once the directory's checkpoint holds their values.
 *
 * Crash story:
 *   1. A clean close flushes every segment and index, writes the checkpoints, then the marker.
 *      The next open finds the marker, deletes it, trusts the indexes (after sanity checks) and
 *      reads only the tail of each segment after its last index entry: it does not scan the log.
 *   2. Without the marker, open recovers every segment from the one holding the recovery point
 *      on: each batch's framing, CRC and offsets are checked, the first bad batch and everything
 *      after it (later segments included) is removed, indexes are rebuilt, the recovered files are
 *      fsynced, and the report says what was cut. Segments before the recovery point were fsynced
 *      before the recovery point passed them, so they are trusted like in (1).
 *   3. The recovery point only moves forward after an fdatasync covered it and the folder entries
 *      of its segments are durable, and backward at once (durably) when the log is truncated. A
 *      stale checkpoint only makes recovery scan more.
 *   5. The high watermark (HW) is checkpointed every few seconds without waiting for a flush: a
 *      stale HW after a crash only hides records until the leader's ISR or the leader's fetch
 *      answers raise it again, and one past the recovered log end is cut to it on open. A roll's new segment files reach the disk's
 *      folder in the flush the roll starts, not on the append path: until then they hold only
 *      records past the recovery point, which an OS crash may take anyway (no fsync per record,
 *      as in Kafka), and recovery treats a missing segment as a shorter log.
 *   4. Truncations are fdatasynced before they are reported, so a truncated tail cannot return.
 *
 * Interleaving: appends, reads, truncations and retention are synchronous, so none of them ever
 * sees another half done; one writer per log holds by construction. Flushes are asynchronous:
 * they hold references to the files they sync, coalesce (one runs at a time and covers every
 * append before it), and never move the recovery point past a truncation that happened while
 * they ran. Readers hold references to the files of their slices until they release them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as recordBatch from '@spool/record-batch';
import * as common from '@spool/common';
import { fsyncDirectory, readOffsetCheckpoint, writeOffsetCheckpoint } from './checkpoint-file';
import { OffsetOutOfRangeError, SegmentStoreError } from './errors';
import { defaultFileHandleCache, type FileHandleCache } from './file-handle-cache';
import type { FileSlice } from './file-slice';
import type { LeaderEpochCache } from './leader-epoch-cache';
import { batchSizeBytesLimit, resolveLogConfig, type LogConfig } from './log-config';
import { batchInfoFromHeader, LogSegment, type BatchInfo } from './log-segment';
import { installAddonCrc32c, logCrc32cInstall } from './native-crc32c';
import type { WritebackBinding } from './native-writeback';
import { loadSegments } from './log-loader';
import {
  installCleanedSegment,
  removeSetAside,
  restoreSetAside,
  setAsideOldSegments,
} from './cleaner/segment-swap';
import { segmentsPastRetention } from './log-retention';
import {
  cleanShutdownFile,
  highWatermarkCheckpointFile,
  legacyHighWatermarkFile,
  logStartOffsetCheckpointFile,
  recoveryPointCheckpointFile,
} from './log-files';
import { LogFlusher, writebackBindingDefault, type FlushedLog } from './log-flusher';

// The append path calls these for every batch. A named import compiles to a property read of
// the package's index module, which CommonJS re-exports through a getter (a few ns a call), so
// they are read once here, when the module loads, and called as plain functions.
const {
  controlFlagMask,
  attributesPosition,
  decodeRecordBatch,
  openRecordBatch,
  recordCountPosition,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
  splitRecordBatchPositions,
} = recordBatch;
// An assertion function needs a declared type to narrow; `typeof` keeps it the same function.
const assert: typeof common.assert = common.assert;

/**
 * How far back from the active segment's end a read counts as the recent tail (FileSlice.hot):
 * the bytes a follower or a consumer at the head fetches right after they were appended, which
 * are in the page cache unless the machine is short of memory.
 */
export const hotTailBytes = 64 * 1024 * 1024;

// Every leader append checks the CRC-32C of each batch: with the addon's crc32 instructions
// when it loads (native-crc32c.ts). Chosen once, when this module loads, and logged in one line.
logCrc32cInstall(installAddonCrc32c());

/** How often a flush also rewrites the recovery-point checkpoint (Kafka's default is 60 s). */
const recoveryPointCheckpointIntervalMs = 60_000;

export interface RecoveryReport {
  /** Whether the log was closed cleanly, so nothing was scanned. */
  readonly clean: boolean;
  readonly segmentsScanned: number;
  readonly batchesValid: number;
  readonly bytesTruncated: number;
  /** Segments removed whole because they followed the first bad batch. */
  readonly segmentsDeleted: number;
  readonly indexesRebuilt: number;
  /**
   * A log cleaner's swap that a crash interrupted (cleaner/segment-swap.ts): `completed` (the
   * cleaned segment installed), `discarded` (the old segments restored), or `none`.
   */
  readonly cleanerSwap: 'completed' | 'discarded' | 'none';
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  readonly durationMs: number;
  /** What was wrong, with file and position, one line per problem. */
  readonly problems: readonly string[];
}

export interface AppendOptions {
  /** The leader epoch to stamp on batches (leader appends) or record in the epoch cache. */
  readonly leaderEpoch: number;
  /** True on the leader: assign offsets. False on a follower: keep the leader's offsets. */
  readonly assignOffsets: boolean;
}

/**
 * Batches that passed an append's checks (step 1 of `Log.append`), with where each one starts,
 * for the log that checked them and the kind of append they were checked for. The producer
 * state needs the batch positions before the log writes (to check sequences), so it asks the log
 * to check once and hands the result to `appendValidated`: the framing is walked once and every
 * CRC computed once per append. Only `Log.validateAppend` makes one.
 */
export interface ValidatedBatches {
  readonly records: Buffer;
  /** The byte position of each batch in `records`, in order. */
  readonly positions: readonly number[];
  readonly assignOffsets: boolean;
}

/** The ValidatedBatches that validateAppend made and no append has used yet. */
const validatedBatches = new WeakSet<ValidatedBatches>();

export interface AppendResult {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  /** The time stamped on the batches with LogAppendTime, -1 with CreateTime (as Kafka answers). */
  readonly logAppendTimeMs: number;
  readonly batchCount: number;
  readonly recordCount: number;
  readonly sizeBytes: number;
}

export interface ReadOptions {
  /** Nothing at or above this offset is returned (the high watermark for consumers). */
  readonly maxOffsetExclusive?: bigint;
  /** Return the first batch even when it is larger than maxBytes (default true, as Kafka). */
  readonly minOneBatch?: boolean;
}

export interface LogReadResult {
  /** Whole batches, in offset order; empty at the end of the log. */
  readonly slices: readonly FileSlice[];
  readonly sizeBytes: number;
  /** Lets go of the files behind the slices; call once, after the bytes were sent. */
  release(): void;
}

export interface LogOpenOptions {
  readonly config?: Partial<LogConfig>;
  /** Milliseconds since the epoch; injectable for retention and roll tests. */
  readonly clock?: () => number;
  /** Where flushes that nobody awaits report failures. */
  readonly onBackgroundError?: (error: unknown) => void;
  /** The write-out of recent appends (writebackIntervalBytes); the addon's unless a test's. */
  readonly writeback?: WritebackBinding | null;
  /**
   * Where the log's descriptors live (file-handle-cache.ts): the node's, bounded by its setting;
   * the process's default cache otherwise.
   */
  readonly files?: FileHandleCache;
  /** The data directory that keeps this log's recovery point and clean-shutdown marker. */
  readonly logDirectory?: LogDirectoryMembership;
}

/** What a LogDirectory (log-directory.ts) knows of one of its logs, and hears back from it. */
export interface LogDirectoryMembership {
  /** The directory's clean-shutdown marker was present: every log of it was closed cleanly. */
  readonly cleanShutdown: boolean;
  /** This log's entry in the directory's recovery-point checkpoint, when it has one. */
  readonly recoveryPoint: bigint | undefined;
  /** This log's entry in the directory's high-watermark checkpoint, when it has one. */
  readonly highWatermark: bigint | undefined;
  /** The folder held a legacy `high-watermark` file: remove it once the directory's holds it. */
  legacyHighWatermarkFound(): void;
  /**
   * A truncation moved the recovery point back: the directory's checkpoint must follow before a
   * flush can make data past the new point look durable (crash story 3).
   */
  recoveryPointLowered(log: Log): void;
  /** The log closed (cleanly, or abandoned) or was deleted; it is no longer the directory's. */
  detached(log: Log, how: 'closed' | 'abandoned' | 'deleted'): void;
}

export class Log {
  private readonly segments: LogSegment[];
  private readonly epochCache: LeaderEpochCache;
  private readonly clock: () => number;
  private readonly onBackgroundError: (error: unknown) => void;
  private logStartOffsetValue: bigint;
  private recoveryPointValue: bigint;
  private lastRecoveryCheckpointMs = 0;
  private readonly files: FileHandleCache;
  private readonly flusher: LogFlusher;
  /** Changes on every truncation, so a flush that started before one cannot advance past it. */
  private truncationGeneration = 0;
  private closed = false;
  private readonly logDirectory: LogDirectoryMembership | undefined;
  /** The log start offset the checkpoint file holds, so unchanged values are not rewritten. */
  private checkpointedLogStartOffset: bigint | undefined;
  /**
   * The high watermark (Kafka's `UnifiedLog.highWatermark`): always within [log start, log end];
   * which value it takes is the replica's rule (leader: the ISR's smallest end; follower: the
   * leader's word), keeping it in bounds and durable is the log's.
   */
  private highWatermarkValue: bigint;
  /** What this log's own HW checkpoint holds (logs outside a LogDirectory only). */
  private checkpointedHighWatermark: bigint | undefined;

  private constructor(
    readonly directory: string,
    private configValue: LogConfig,
    segments: LogSegment[],
    epochCache: LeaderEpochCache,
    logStartOffset: bigint,
    recoveryPoint: bigint,
    options: LogOpenOptions,
  ) {
    this.segments = segments;
    this.epochCache = epochCache;
    this.logStartOffsetValue = logStartOffset;
    this.recoveryPointValue = recoveryPoint;
    this.highWatermarkValue = logStartOffset;
    this.clock = options.clock ?? Date.now;
    this.onBackgroundError = options.onBackgroundError ?? (() => {});
    this.files = options.files ?? defaultFileHandleCache;
    this.logDirectory = options.logDirectory;
    const writeback =
      options.writeback === undefined ? writebackBindingDefault : (options.writeback ?? undefined);
    this.flusher = new LogFlusher(this.flushedLog(), writeback, this.onBackgroundError);
  }

  /**
   * Opens the log in `directory` (creating it when absent), recovering it when it was not closed
   * cleanly. Never throws for bad data in the log: it cuts and reports. Throws for I/O failures.
   */
  static async open(
    directory: string,
    options: LogOpenOptions = {},
  ): Promise<{ log: Log; report: RecoveryReport }> {
    const loaded = await loadSegments(directory, options);
    const { config, segments, epochCache, logStartOffset, logEndOffset, problems } = loaded;
    const membership = options.logDirectory;
    const log = new Log(
      directory,
      config,
      segments,
      epochCache,
      logStartOffset,
      logEndOffset,
      options,
    );
    log.checkpointedLogStartOffset = loaded.checkpointedLogStartOffset;
    if (membership !== undefined && loaded.createdSegment) {
      log.flusher.markDirectoryUnsynced();
      log.flusher.flushInBackground();
    }
    if (logStartOffset > logEndOffset) {
      // The tail below a DeleteRecords point was lost: start empty there, so deleted records
      // stay deleted and offsets stay monotonic.
      problems.push(
        `log end offset ${logEndOffset} was below the log start offset ${logStartOffset}`,
      );
      log.truncateFullyAndStartAt(logStartOffset);
    }
    epochCache.truncateFromEnd(log.logEndOffset);
    epochCache.truncateFromStart(log.logStartOffset);
    log.checkpointedHighWatermark = log.loadHighWatermark(problems);
    log.writeCheckpoints();
    return {
      log,
      report: {
        ...loaded.counts,
        logStartOffset: log.logStartOffset,
        logEndOffset: log.logEndOffset,
        durationMs: Date.now() - loaded.startedAtMs,
        problems,
      },
    };
  }

  get config(): LogConfig {
    return this.configValue;
  }

  /** Closed, abandoned or deleted: no call but close may be made. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Applies changed topic configs (AlterConfigs). New segment and index sizes apply to segments
   * created from now on; retention and flush settings apply at their next check.
   */
  updateConfig(overrides: Partial<LogConfig>): void {
    this.configValue = resolveLogConfig({ ...this.configValue, ...overrides });
  }

  get logStartOffset(): bigint {
    return this.logStartOffsetValue;
  }

  /** The offset the next appended record gets. */
  get logEndOffset(): bigint {
    return this.activeSegment.nextOffset;
  }

  get recoveryPoint(): bigint {
    return this.recoveryPointValue;
  }

  get highWatermark(): bigint {
    return this.highWatermarkValue;
  }

  /**
   * Sets the high watermark, kept within [log start, log end]; returns the value it took. The
   * next checkpoint round (checkpointHighWatermark, or the LogDirectory's) makes it durable.
   */
  updateHighWatermark(offset: bigint): bigint {
    this.highWatermarkValue = this.boundedByLog(offset);
    return this.highWatermarkValue;
  }

  /**
   * Writes the HW to the log's own checkpoint unless it already holds it (a LogDirectory's log:
   * never, the directory checkpoints all its logs in one file). Returns whether it wrote.
   */
  checkpointHighWatermark(): boolean {
    if (this.logDirectory !== undefined || this.closed) return false;
    if (this.highWatermarkValue === this.checkpointedHighWatermark) return false;
    // No file means "the log start": a new, empty log needs none.
    if (
      this.checkpointedHighWatermark === undefined &&
      this.highWatermarkValue === this.logStartOffsetValue
    ) {
      return false;
    }
    writeOffsetCheckpoint(
      path.join(this.directory, highWatermarkCheckpointFile),
      this.highWatermarkValue,
    );
    this.checkpointedHighWatermark = this.highWatermarkValue;
    return true;
  }

  private boundedByLog(offset: bigint): bigint {
    if (offset < this.logStartOffsetValue) return this.logStartOffsetValue;
    const end = this.logEndOffset;
    return offset > end ? end : offset;
  }

  /**
   * The HW at open: the directory's entry, this log's own checkpoint, or a legacy plain-text
   * file; the log start without any. Returns what this log's own checkpoint holds.
   */
  private loadHighWatermark(problems: string[]): bigint | undefined {
    const membership = this.logDirectory;
    const ownPath = path.join(this.directory, highWatermarkCheckpointFile);
    let own = membership === undefined ? readOffsetCheckpoint(ownPath) : undefined;
    let loaded = membership?.highWatermark ?? own;
    const legacyPath = path.join(this.directory, legacyHighWatermarkFile);
    if (fs.existsSync(legacyPath)) {
      const text = fs.readFileSync(legacyPath, 'utf8').trim();
      if (/^\d+$/.test(text)) loaded ??= BigInt(text);
      else problems.push(`${legacyHighWatermarkFile} held ${JSON.stringify(text)}; ignored`);
      if (membership === undefined) {
        // Moved into this log's own checkpoint first; the legacy file goes once that is durable.
        if (own === undefined && loaded !== undefined) {
          own = this.boundedByLog(loaded);
          writeOffsetCheckpoint(ownPath, own);
        }
        fs.rmSync(legacyPath);
        fsyncDirectory(this.directory);
      } else {
        membership.legacyHighWatermarkFound();
      }
    }
    this.highWatermarkValue = this.boundedByLog(loaded ?? this.logStartOffsetValue);
    return own;
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  get sizeBytes(): number {
    return this.segments.reduce((total, segment) => total + segment.sizeBytes, 0);
  }

  get latestEpoch(): number {
    return this.epochCache.latestEpoch;
  }

  /**
   * Bytes of log from the batch holding `offset` to the end: how far behind, in bytes, a replica
   * or consumer at that offset is. 0 at or past the end; the whole log before its start.
   */
  sizeBytesFrom(offset: bigint): number {
    if (offset >= this.logEndOffset) return 0;
    let total = 0;
    for (let index = this.segmentIndexFor(offset); index < this.segments.length; index++) {
      const segment = this.segments[index]!;
      total +=
        segment.baseOffset <= offset
          ? segment.sizeBytes - segment.positionOf(offset)
          : segment.sizeBytes;
    }
    return total;
  }

  /** Base offsets of the segments, oldest first. */
  segmentBaseOffsets(): bigint[] {
    return this.segments.map((segment) => segment.baseOffset);
  }

  private get activeSegment(): LogSegment {
    return this.segments.at(-1)!;
  }

  private ensureOpen(): void {
    if (this.closed)
      throw new SegmentStoreError('KAFKA_STORAGE_ERROR', `log ${this.directory} is closed`);
  }

  /**
   * Appends one or more batches (RecordBatch v2 bytes, back to back). Every batch is validated
   * before anything is written, so a request with one bad batch writes none of them. On the
   * leader the batches get offsets and the leader epoch patched in place (never re-encoded);
   * a follower's batches must continue the log exactly.
   *
   *   1. Validate every batch: framing, magic, CRC, fields, max.message.bytes (leader only).
   *   2. Refuse what cannot fit one segment.
   *   3. Leader: assign offsets and epoch (and LogAppendTime); follower: check contiguity.
   *   4. Roll the active segment if this append would overflow it or it is due.
   *   5. Write, index, record new epochs, schedule a flush by policy.
   */
  append(records: Buffer, options: AppendOptions): AppendResult {
    return this.appendValidated(this.validateAppend(records, options), options);
  }

  /**
   * Step 1 of `append` alone: every batch of `records` checked (framing, magic, CRC, fields,
   * max.message.bytes on the leader), throwing the typed error of the first bad one. This is the
   * one place a produced batch's bytes are checked: the gateway forwards them unread, and the
   * producer state reads its fields from the positions returned here.
   */
  validateAppend(records: Buffer, options: Pick<AppendOptions, 'assignOffsets'>): ValidatedBatches {
    this.ensureOpen();
    const positions = splitRecordBatchPositions(records, {
      maxBatchSizeBytes: options.assignOffsets ? this.config.maxMessageBytes : batchSizeBytesLimit,
      origin: options.assignOffsets ? 'client' : 'log',
    });
    if (positions.length === 0) {
      throw new SegmentStoreError(
        'INVALID_RECORD',
        `append to ${this.directory} carried no record batches`,
      );
    }
    if (options.assignOffsets && this.config.cleanupPolicy.includes('compact')) {
      ensureEveryRecordKeyed(records, positions, this.directory);
    }
    const validated: ValidatedBatches = {
      records,
      positions,
      assignOffsets: options.assignOffsets,
    };
    validatedBatches.add(validated);
    return validated;
  }

  /** Steps 2-5 of `append`, for batches that `validateAppend` checked for the same kind. */
  appendValidated(validated: ValidatedBatches, options: AppendOptions): AppendResult {
    this.ensureOpen();
    // Once only: a leader append patches offsets into the bytes, which would no longer pass.
    assert(validatedBatches.delete(validated));
    assert(validated.assignOffsets === options.assignOffsets);
    const { records, positions } = validated;
    // 2.
    if (records.length > this.config.segmentBytes) {
      throw new SegmentStoreError(
        'RECORD_BATCH_TOO_LARGE',
        `append of ${records.length} bytes to ${this.directory} is larger than segment.bytes ${this.config.segmentBytes}`,
      );
    }
    // 3.
    const logAppendTimeMs =
      this.config.messageTimestampType === 'LogAppendTime' ? this.clock() : -1;
    const firstOffset = this.logEndOffset;
    const batches: BatchInfo[] = [];
    let nextOffset = firstOffset;
    let recordCount = 0;
    let maxTimestampMs = -1;
    for (const position of positions) {
      if (options.assignOffsets) {
        setBaseOffset(records, position, nextOffset);
        setPartitionLeaderEpoch(records, position, options.leaderEpoch);
        if (logAppendTimeMs >= 0)
          setMaxTimestampAndLogAppendTime(records, position, BigInt(logAppendTimeMs));
      } else {
        const baseOffset = records.readBigInt64BE(position);
        // A compacted leader's log has gaps where the cleaner removed whole batches: a follower
        // takes a batch past its end there, as Kafka's does (offsets only ascend). Elsewhere a
        // gap means the logs diverged, and the follower truncates to find where.
        const gapAllowed = baseOffset > nextOffset && this.config.cleanupPolicy.includes('compact');
        if (baseOffset !== nextOffset && !gapAllowed) {
          throw new SegmentStoreError(
            'UNEXPECTED_APPEND_OFFSET',
            `follower append to ${this.directory} starts a batch at offset ${baseOffset} where ${nextOffset} was expected`,
          );
        }
        nextOffset = baseOffset;
      }
      // The batch's base offset is nextOffset now, assigned or checked: no need to read it back.
      const batch = batchInfoFromHeader(records, position, position, nextOffset);
      batches.push(batch);
      nextOffset = batch.lastOffset + 1n;
      recordCount += records.readInt32BE(position + recordCountPosition);
      if (batch.maxTimestampMs > maxTimestampMs) maxTimestampMs = batch.maxTimestampMs;
    }
    const lastOffset = nextOffset - 1n;
    // 4.
    this.maybeRoll(records.length, lastOffset, maxTimestampMs);
    // 5.
    // The epoch is recorded before the write, as Kafka does: if recording it fails (a full
    // disk), nothing was written; if the write fails, an epoch starting at the log end is true.
    if (options.assignOffsets) {
      this.epochCache.assign(options.leaderEpoch, firstOffset);
    } else {
      for (const batch of batches)
        this.epochCache.assign(batch.partitionLeaderEpoch, batch.baseOffset);
    }
    this.activeSegment.append(records, batches);
    this.flusher.appended(recordCount, records.length);
    return {
      baseOffset: firstOffset,
      lastOffset,
      logAppendTimeMs,
      batchCount: positions.length,
      recordCount,
      sizeBytes: records.length,
    };
  }

  private maybeRoll(
    appendSizeBytes: number,
    lastOffset: bigint,
    incomingMaxTimestampMs: number,
  ): void {
    const segment = this.activeSegment;
    if (segment.isEmpty) return;
    const ageMs = segment.timeWaitedForRollMs(this.clock, incomingMaxTimestampMs);
    if (
      segment.sizeBytes + appendSizeBytes > this.config.segmentBytes ||
      ageMs > this.config.segmentMs ||
      segment.indexesFull ||
      lastOffset - segment.baseOffset > 0xffffffffn
    ) {
      this.roll();
    }
  }

  /** Closes the active segment to appends and starts a new one at the log end offset. */
  roll(): void {
    this.ensureOpen();
    const previous = this.activeSegment;
    if (previous.isEmpty) return;
    previous.onBecomeInactive();
    const segment = LogSegment.create(this.directory, this.logEndOffset, this.config, this.files);
    segment.createdAtMs = this.clock();
    this.segments.push(segment);
    // The folder's fsync waits for the journal, and the journal for the closed segment's data:
    // 45-250 ms of a stalled event loop per roll with a busy disk (measured, issue 11). The flush
    // below makes the new entries durable instead (crash story 3).
    this.flusher.markDirectoryUnsynced();
    // The closed segment will not change again: make it durable now, off the append path.
    this.flusher.flushInBackground();
  }

  /**
   * The log's segments as they are now, oldest first, the active one last: what the log cleaner
   * (cleaner/log-cleaner.ts) chooses from and reads. The list is a copy; the segments are the
   * log's, and the cleaner only reads the closed ones.
   */
  segmentsForCleaning(): readonly LogSegment[] {
    this.ensureOpen();
    return [...this.segments];
  }

  /** An empty segment whose files carry the cleaner's `.cleaned` suffix (cleaner/segment-swap.ts). */
  createCleanedSegment(baseOffset: bigint): LogSegment {
    this.ensureOpen();
    return LogSegment.create(this.directory, baseOffset, this.config, this.files, '.cleaned');
  }

  /**
   * Replaces `group`, consecutive closed segments of this log, with `cleaned`, the segment the
   * cleaner wrote from them (its `.cleaned` files durable): the swap of cleaner/segment-swap.ts,
   * then the new segment opened under the log's names in their place. Resolves false, keeping
   * the old segments, when the log changed since the cleaner read the group (a truncation,
   * retention or DeleteRecords removed one of them, or the log closed); the caller removes the
   * cleaned files. Closes `cleaned` in every case. Setting the old files aside and removing them are asynchronous; the commit
   * and the replacement in memory are one synchronous step, so no append, read or truncation
   * sees the swap half done.
   */
  async replaceCleanedSegments(
    group: readonly LogSegment[],
    cleaned: LogSegment,
  ): Promise<boolean> {
    // The cleaned segment's files are only renamed from here on: its descriptors go first.
    cleaned.close();
    this.ensureOpen();
    assert(cleaned.baseOffset === group[0]!.baseOffset, 'a cleaned segment keeps its base offset');
    if (!this.holdsClosedSegments(group)) return false;
    const baseOffsets = group.map((segment) => segment.baseOffset);
    // The old files are renamed while the log still reads them: their descriptors stay pinned
    // open, so nothing reopens them by a path that is about to change.
    const pins = group.map((segment) => segment.logFile.acquire());
    try {
      await setAsideOldSegments(this.directory, baseOffsets);
      if (this.closed || !this.holdsClosedSegments(group)) {
        const kept = group.filter((segment) => this.segments.includes(segment));
        restoreSetAside(
          this.directory,
          kept.map((segment) => segment.baseOffset),
          group.filter((segment) => !kept.includes(segment)).map((segment) => segment.baseOffset),
        );
        return false;
      }
      installCleanedSegment(this.directory, cleaned.baseOffset);
      const installed = LogSegment.open(
        this.directory,
        cleaned.baseOffset,
        this.config,
        this.files,
      );
      installed.loadTrusted();
      this.segments.splice(this.segments.indexOf(group[0]!), group.length, installed);
      for (const segment of group) segment.close();
    } finally {
      for (const pin of pins) pin.release();
    }
    await removeSetAside(this.directory, baseOffsets);
    return true;
  }

  /** Whether `group` is a run of this log's segments, all closed (none is the active one). */
  private holdsClosedSegments(group: readonly LogSegment[]): boolean {
    const first = this.segments.indexOf(group[0]!);
    return (
      first >= 0 &&
      first + group.length < this.segments.length &&
      group.every((segment, index) => this.segments[first + index] === segment)
    );
  }

  /**
   * Reads whole batches from `startOffset`: the batch holding it first, then following ones up
   * to `maxBytes` (at least one whole batch when there is one and minOneBatch), never any at or
   * past `maxOffsetExclusive`. Reading at the log end offset returns nothing; outside
   * [log start offset, log end offset] throws OFFSET_OUT_OF_RANGE.
   */
  read(startOffset: bigint, maxBytes: number, options: ReadOptions = {}): LogReadResult {
    this.ensureOpen();
    if (startOffset < this.logStartOffset || startOffset > this.logEndOffset) {
      throw new OffsetOutOfRangeError(
        this.directory,
        startOffset,
        this.logStartOffset,
        this.logEndOffset,
      );
    }
    assert(Number.isInteger(maxBytes) && maxBytes >= 0, 'maxBytes must be a non-negative integer');
    const maxOffset =
      options.maxOffsetExclusive === undefined || options.maxOffsetExclusive > this.logEndOffset
        ? this.logEndOffset
        : options.maxOffsetExclusive;
    const slices: Array<FileSlice & { file: { release(): void } }> = [];
    let remaining = maxBytes;
    let offset = startOffset;
    for (let index = this.segmentIndexFor(startOffset); index < this.segments.length; index++) {
      const segment = this.segments[index]!;
      if (segment.baseOffset >= maxOffset || (slices.length > 0 && remaining <= 0)) break;
      const maxPosition =
        maxOffset < segment.nextOffset ? segment.positionOf(maxOffset) : segment.sizeBytes;
      const minOneBatch = (options.minOneBatch ?? true) && slices.length === 0;
      const range = segment.read(offset, remaining, maxPosition, minOneBatch);
      if (range !== undefined) {
        // The active segment's last hotTailBytes were written moments ago: still in the page
        // cache, they may go out on the event loop (FileSlice.hot).
        const hot =
          segment === this.activeSegment && range.position >= segment.sizeBytes - hotTailBytes;
        slices.push(segment.slice(range.position, range.sizeBytes, hot));
        remaining -= range.sizeBytes;
      }
      // Continue into the next segment only when this one was read to its end; a batch that did
      // not fit must stop the read, or the next segment's batches would skip over it.
      const reachedSegmentEnd =
        maxPosition === segment.sizeBytes &&
        (range === undefined
          ? offset >= segment.nextOffset
          : range.position + range.sizeBytes === segment.sizeBytes);
      if (!reachedSegmentEnd) break;
      offset = segment.nextOffset;
    }
    let released = false;
    return {
      slices,
      sizeBytes: slices.reduce((total, slice) => total + slice.sizeBytes, 0),
      release: () => {
        if (released) return;
        released = true;
        for (const slice of slices) slice.file.release();
      },
    };
  }

  /** Index of the segment that holds `offset`: the last one whose base offset is ≤ it. */
  private segmentIndexFor(offset: bigint): number {
    let low = 0;
    let high = this.segments.length - 1;
    let found = 0;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (this.segments[middle]!.baseOffset <= offset) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found;
  }

  /**
   * Kafka's ListOffsets by timestamp: the first offset whose record timestamp is ≥ the target,
   * with that timestamp; undefined when every record is older. Records are decoded only in the
   * one batch that holds the answer; a batch whose codec this process lacks answers with its
   * first offset.
   */
  offsetForTimestamp(
    targetTimestampMs: number,
  ): { offset: bigint; timestampMs: number } | undefined {
    this.ensureOpen();
    for (const segment of this.segments) {
      if (segment.maxTimestampMs < targetTimestampMs || segment.nextOffset <= this.logStartOffset)
        continue;
      const batch = segment.findBatchAtOrAfterTimestamp(targetTimestampMs);
      if (batch === undefined) continue;
      const bytes = Buffer.allocUnsafe(batch.sizeBytes);
      fs.readSync(segment.logFile.fd, bytes, 0, batch.sizeBytes, batch.position);
      try {
        const { records } = decodeRecordBatch(bytes, 0, { verifyCrc: false });
        for (const record of records) {
          if (
            Number(record.timestampMs) >= targetTimestampMs &&
            record.offset >= this.logStartOffset
          ) {
            return { offset: record.offset, timestampMs: Number(record.timestampMs) };
          }
        }
      } catch {
        const offset =
          batch.baseOffset > this.logStartOffset ? batch.baseOffset : this.logStartOffset;
        return { offset, timestampMs: batch.maxTimestampMs };
      }
    }
    return undefined;
  }

  /**
   * Kafka's MAX_TIMESTAMP (KIP-734): the first record carrying the largest timestamp in the log,
   * found as the first record at or after that timestamp; undefined for a log with none.
   */
  offsetOfMaxTimestamp(): { offset: bigint; timestampMs: number } | undefined {
    this.ensureOpen();
    let maxTimestampMs = -1;
    for (const segment of this.segments) {
      if (segment.nextOffset <= this.logStartOffset) continue;
      if (segment.maxTimestampMs > maxTimestampMs) maxTimestampMs = segment.maxTimestampMs;
    }
    return maxTimestampMs < 0 ? undefined : this.offsetForTimestamp(maxTimestampMs);
  }

  /** Kafka's OffsetsForLeaderEpoch answer from this log. */
  endOffsetForLeaderEpoch(epoch: number): { epoch: number; endOffset: bigint } {
    return this.epochCache.endOffsetFor(epoch, this.logEndOffset);
  }

  /** Epoch → start offset entries, for followers and tests. */
  leaderEpochEntries(): ReadonlyArray<{ epoch: number; startOffset: bigint }> {
    return this.epochCache.list();
  }

  /**
   * Kafka's DeleteRecords: moves the log start offset up to `offset` (records below become
   * unreadable) and deletes the segments wholly below it. The caller keeps it ≤ the high
   * watermark; this refuses anything past the log end offset.
   */
  deleteRecordsBefore(offset: bigint): { logStartOffset: bigint; segmentsDeleted: number } {
    this.ensureOpen();
    if (offset > this.logEndOffset) {
      throw new OffsetOutOfRangeError(
        this.directory,
        offset,
        this.logStartOffset,
        this.logEndOffset,
      );
    }
    if (offset > this.logStartOffset) this.setLogStartOffset(offset);
    let segmentsDeleted = 0;
    while (this.segments.length > 1 && this.segments[1]!.baseOffset <= this.logStartOffset) {
      this.segments.shift()!.delete();
      segmentsDeleted++;
    }
    if (segmentsDeleted > 0) fsyncDirectory(this.directory);
    return { logStartOffset: this.logStartOffset, segmentsDeleted };
  }

  private setLogStartOffset(offset: bigint): void {
    this.logStartOffsetValue = offset;
    writeOffsetCheckpoint(path.join(this.directory, logStartOffsetCheckpointFile), offset);
    this.checkpointedLogStartOffset = offset;
    this.epochCache.truncateFromStart(offset);
    if (this.highWatermarkValue < offset) this.highWatermarkValue = offset;
  }

  /**
   * Retention: deletes the closed segments that log-retention.ts says have outlived retention.ms
   * or retention.bytes, oldest first, and moves the log start past them. Readers of a deleted
   * segment finish with the file they hold.
   */
  deleteRetainedSegments(): { segmentsDeleted: number; bytesDeleted: number } {
    this.ensureOpen();
    const segmentsDeleted = segmentsPastRetention(this.segments, this.config, this.clock());
    let bytesDeleted = 0;
    for (const segment of this.segments.splice(0, segmentsDeleted)) {
      bytesDeleted += segment.sizeBytes;
      segment.delete();
    }
    if (segmentsDeleted > 0) {
      fsyncDirectory(this.directory);
      if (this.segments[0]!.baseOffset > this.logStartOffset)
        this.setLogStartOffset(this.segments[0]!.baseOffset);
    }
    return { segmentsDeleted, bytesDeleted };
  }

  /**
   * Removes every record at or after `offset` (a follower's divergent tail, KIP-101). A batch
   * that straddles the offset goes whole. Durable before it returns.
   */
  truncateTo(offset: bigint): { bytesTruncated: number } {
    this.ensureOpen();
    if (offset >= this.logEndOffset) return { bytesTruncated: 0 };
    if (offset < this.logStartOffset) {
      const bytesTruncated = this.sizeBytes;
      this.truncateFullyAndStartAt(offset);
      return { bytesTruncated };
    }
    this.truncationGeneration++;
    let bytesTruncated = 0;
    while (this.segments.length > 1 && this.activeSegment.baseOffset >= offset) {
      const segment = this.segments.pop()!;
      bytesTruncated += segment.sizeBytes;
      segment.delete();
    }
    const segment = this.activeSegment;
    bytesTruncated += segment.truncateTo(offset);
    segment.logFile.flushSync();
    fsyncDirectory(this.directory);
    if (this.recoveryPointValue > this.logEndOffset) {
      this.recoveryPointValue = this.logEndOffset;
      if (this.logDirectory !== undefined) {
        this.logDirectory.recoveryPointLowered(this);
      } else {
        writeOffsetCheckpoint(
          path.join(this.directory, recoveryPointCheckpointFile),
          this.recoveryPointValue,
        );
      }
    }
    this.epochCache.truncateFromEnd(this.logEndOffset);
    // A batch straddling the target goes whole, which can take the end below a DeleteRecords
    // point; the log is then empty from its end, and nothing deleted becomes readable again.
    if (this.logStartOffsetValue > this.logEndOffset) this.setLogStartOffset(this.logEndOffset);
    this.highWatermarkValue = this.boundedByLog(this.highWatermarkValue);
    return { bytesTruncated };
  }

  /** Deletes everything and starts an empty log at `offset` (a follower far behind the leader). */
  truncateFullyAndStartAt(offset: bigint): void {
    this.ensureOpen();
    assert(offset >= 0n, 'a log cannot start at a negative offset');
    this.truncationGeneration++;
    for (const segment of this.segments.splice(0)) segment.delete();
    this.segments.push(LogSegment.create(this.directory, offset, this.config, this.files));
    fsyncDirectory(this.directory);
    this.recoveryPointValue = offset;
    this.logStartOffsetValue = offset;
    this.highWatermarkValue = offset;
    this.epochCache.clear();
    this.writeCheckpoints();
    this.logDirectory?.recoveryPointLowered(this);
  }

  /**
   * Makes every append before the call durable (fdatasync) and advances the recovery point
   * (log-flusher.ts). Concurrent calls coalesce.
   */
  flush(): Promise<void> {
    return this.flusher.flush();
  }

  /** What the flusher reads of this log, and how it reports a finished flush. */
  private flushedLog(): FlushedLog {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- getters below read the log's private state
    const log = this;
    return {
      directory: this.directory,
      get config() {
        return log.configValue;
      },
      get logEndOffset() {
        return log.logEndOffset;
      },
      get recoveryPoint() {
        return log.recoveryPointValue;
      },
      get closed() {
        return log.closed;
      },
      get truncationGeneration() {
        return log.truncationGeneration;
      },
      get activeSegment() {
        return log.activeSegment;
      },
      segmentsFrom: (offset) => log.segments.filter((segment) => segment.nextOffset > offset),
      flushedTo: (offset) => log.flushedTo(offset),
    };
  }

  /** A flush made everything below `offset` durable: the recovery point may pass it. */
  private flushedTo(offset: bigint): void {
    this.recoveryPointValue = offset;
    const nowMs = Date.now();
    if (
      this.logDirectory === undefined &&
      nowMs - this.lastRecoveryCheckpointMs >= recoveryPointCheckpointIntervalMs
    ) {
      this.lastRecoveryCheckpointMs = nowMs;
      writeOffsetCheckpoint(
        path.join(this.directory, recoveryPointCheckpointFile),
        this.recoveryPointValue,
      );
    }
  }

  /**
   * The log's own checkpoints: the recovery point unless a LogDirectory keeps it, and the log
   * start offset when it changed (setLogStartOffset writes it at once otherwise).
   */
  private writeCheckpoints(): void {
    if (this.logDirectory === undefined) {
      writeOffsetCheckpoint(
        path.join(this.directory, recoveryPointCheckpointFile),
        this.recoveryPointValue,
      );
    }
    // A directory's log without the file starts at its first segment's base offset: a new log
    // writes none (it cost a new partition two fsyncs).
    const impliedLogStartOffset = this.checkpointedLogStartOffset ?? this.segments[0]!.baseOffset;
    if (this.logDirectory === undefined || impliedLogStartOffset !== this.logStartOffset) {
      writeOffsetCheckpoint(
        path.join(this.directory, logStartOffsetCheckpointFile),
        this.logStartOffsetValue,
      );
      this.checkpointedLogStartOffset = this.logStartOffsetValue;
    }
  }

  /**
   * Clean close: flush everything, make the indexes durable, write the checkpoints, then the
   * clean-shutdown marker, so the next open reads no more than each segment's tail. A directory's
   * log leaves the recovery point and the marker to its LogDirectory, and syncs only what changed
   * since its last flush: closing an idle log writes nothing.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flusher.stop();
    this.checkpointHighWatermark();
    await this.flush();
    this.closed = true;
    await Promise.all(this.segments.map((segment) => segment.flush()));
    for (const segment of this.segments) segment.flushIndexesSync();
    this.recoveryPointValue = this.logEndOffset;
    this.writeCheckpoints();
    for (const segment of this.segments) segment.close();
    if (this.logDirectory !== undefined) {
      if (this.flusher.directoryUnsynced) fsyncDirectory(this.directory);
      this.logDirectory.detached(this, 'closed');
      return;
    }
    const marker = fs.openSync(path.join(this.directory, cleanShutdownFile), 'w');
    fs.fsyncSync(marker);
    fs.closeSync(marker);
    fsyncDirectory(this.directory);
  }

  /** Closes without the marker (the next open recovers); for tests that simulate a crash. */
  abandon(): void {
    this.closeSegmentsUnflushed('abandoned');
  }

  /** Deletes the whole log folder (the replica was removed from this node). */
  async delete(): Promise<void> {
    this.closeSegmentsUnflushed('deleted');
    await fs.promises.rm(this.directory, { recursive: true, force: true });
  }

  private closeSegmentsUnflushed(how: 'abandoned' | 'deleted'): void {
    if (this.closed) return;
    this.flusher.stop();
    this.closed = true;
    for (const segment of this.segments) segment.close();
    this.logDirectory?.detached(this, how);
  }
}

/**
 * Kafka's LogValidator on a compacted topic: every record of a produced batch needs a key, since
 * the cleaner keeps records by key and a keyless one would have none to be kept by. Control
 * batches carry no application records and are not checked. Compressed batches are inflated
 * for the check with their own codec (@spool/record-batch has all of Kafka's), as Kafka does; the
 * bytes appended stay the producer's. A codec whose package cannot load here fails the append
 * with UNSUPPORTED_COMPRESSION_TYPE naming the package, rather than letting an unchecked batch in.
 */
function ensureEveryRecordKeyed(
  records: Buffer,
  positions: readonly number[],
  directory: string,
): void {
  for (const position of positions) {
    if ((records.readInt16BE(position + attributesPosition) & controlFlagMask) !== 0) continue;
    const { header, reader } = openRecordBatch(records, position, { verifyCrc: false });
    for (let index = 0; index < header.recordCount; index++) {
      if (reader.read().key === null) {
        throw new SegmentStoreError(
          'INVALID_RECORD',
          `Compacted topic cannot accept message without key in topic partition ${path.basename(directory)}.`,
        );
      }
    }
  }
}
