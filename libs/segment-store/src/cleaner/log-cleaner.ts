/**
 * The log cleaner (Kafka's `LogCleaner` with one cleaner thread): picks the dirtiest compacted
 * log, and cleans it in one pass:
 *
 *   1. Choose: the cleanable range of every compacted log (cleanable-log.ts), and the one whose
 *      dirty section is the largest share of it, over min.cleanable.dirty.ratio or past
 *      max.compaction.lag.ms.
 *   2. Map: read the dirty section's batches and record each key's latest offset in the offset
 *      map (offset-map.ts, log.cleaner.dedupe.buffer.size of memory, allocated on first use).
 *      A full map ends the pass's dirty section early; the rest waits for the next pass.
 *   3. Rewrite: every cleanable segment, from the log's first, in groups (cleanable-log.ts),
 *      each group read batch by batch and written into one `.cleaned` segment keeping what
 *      batch-filter.ts keeps; the cleaned segment is flushed and swapped in for its group
 *      (segment-swap.ts, Log.replaceCleanedSegments). Offsets never change.
 *   4. Checkpoint: the log's first dirty offset becomes the end of what the map covered
 *      (cleaner-checkpoint.ts), written after the swaps.
 *
 * Off the event loop: reads are asynchronous positional reads of at most `chunkBytes`
 * (segment-batches.ts) into shared memory, and each chunk's CPU work (the map's digests, the
 * filter's CRC checks, decoding and recompression) runs on the cleaner's thread
 * (cleaner-thread.ts) while the event loop serves produce and fetch; the event loop only appends
 * what the thread kept to the cleaned segment. The throttler waits whenever the I/O runs ahead
 * of log.cleaner.io.max.bytes.per.second. The swap itself is a few renames and folder fsyncs.
 *
 * A log that changes under a pass (a truncation, retention or a DeleteRecords removed a segment of
 * the group being cleaned) makes the swap refuse: that group's files are removed and the pass
 * ends; the next pass starts again from the checkpoint. A log closed meanwhile ends the pass
 * quietly. Any other failure (a corrupt batch, a map too small for one batch, a crash of the
 * cleaner's thread) marks the log uncleanable, with the reason, until it is opened again, as
 * Kafka's uncleanable partitions; the segments stay as they were.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { batchInfoFromHeader, type BatchInfo, type LogSegment } from '../log-segment';
import type { Log } from '../log';
import { largestTimestampOf } from '../log-retention';
import { fsyncDirectoryAsync } from '../checkpoint-file';
import {
  chooseFilthiest,
  cleanableRangeOf,
  groupSegmentsForCleaning,
  type CleanableRange,
  type LogSummary,
  type SegmentSummary,
} from './cleanable-log';
import type { CleanerCheckpoint } from './cleaner-checkpoint';
import type { CleanerCompute } from './cleaner-compute';
import { CleanerThread, CleanerThreadClosedError } from './cleaner-thread';
import { readSegmentChunks, SegmentGoneError } from './segment-batches';
import { removeCleanedFiles } from './segment-swap';
import { Throttler } from './throttler';

export interface LogCleanerSettings {
  /** log.cleaner.dedupe.buffer.size: the offset map's memory. */
  readonly dedupeBufferSizeBytes: number;
  /** log.cleaner.io.max.bytes.per.second: read and written bytes together; Infinity is off. */
  readonly ioMaxBytesPerSecond: number;
  /** The most bytes of a segment read (and filtered) in one step; Kafka's io.buffer.size. */
  readonly chunkBytes?: number;
}

/** Kafka's defaults: 128 MiB of offset map and no I/O limit. */
export const logCleanerSettingsDefault: LogCleanerSettings = {
  dedupeBufferSizeBytes: 128 * 1024 * 1024,
  ioMaxBytesPerSecond: Number.POSITIVE_INFINITY,
};

/** A read step's size unless set: large enough to amortize a read, small enough to yield often. */
const chunkBytesDefault = 1024 * 1024;

/** A log the cleaner may clean, with what it needs beside the log. */
export interface CleanerLog {
  readonly log: Log;
  /** The cleaner checkpoint of the log's data directory. */
  readonly checkpoint: CleanerCheckpoint;
  /** Each live producer's last batch, producer id → that batch's last offset (rule 5). */
  producerLastOffsets?(): ReadonlyMap<bigint, bigint>;
}

export interface CleanPassResult {
  /** The log's folder, `<topic>-<partition>`. */
  readonly folder: string;
  readonly dirtyRatio: number;
  readonly firstDirtyOffset: bigint;
  /** The first dirty offset after the pass (what the checkpoint now says). */
  readonly endOffset: bigint;
  readonly bytesRead: number;
  readonly bytesWritten: number;
  readonly recordsRemoved: number;
  readonly segmentsBefore: number;
  readonly segmentsAfter: number;
  readonly durationMs: number;
  /** The log changed under the pass; nothing past the swaps already done was kept. */
  readonly aborted: boolean;
}

/** What the cleaner knows of one compacted log, for `spool topic describe` and metrics. */
export interface CleanerLogState {
  readonly folder: string;
  readonly firstDirtyOffset: bigint;
  readonly dirtyRatio: number;
  readonly lastCleanedAtMs: number | undefined;
  /** Why the log is not cleaned any more; undefined while it is cleanable. */
  readonly uncleanableReason: string | undefined;
}

export interface LogCleanerStatistics {
  /** The largest dirty ratio among compacted logs at the last choice (Kafka's max-dirty-percent). */
  readonly maxDirtyRatio: number;
  readonly passes: number;
  readonly bytesReadTotal: number;
  readonly bytesWrittenTotal: number;
  readonly recordsRemovedTotal: number;
  readonly lastPassDurationMs: number;
  readonly throttledMs: number;
  /** Passes lost to a crash of the cleaner's thread (each marked its log uncleanable). */
  readonly threadCrashes: number;
  readonly uncleanable: ReadonlyArray<{ folder: string; reason: string }>;
}

export interface LogCleanerOptions {
  clock?: () => number;
  /**
   * Where a pass's CPU work runs; a CleanerThread of the cleaner's own by default. One given here
   * stays the caller's to close (tests share one thread between many cleaners).
   */
  compute?: CleanerCompute;
}

export class LogCleaner {
  private readonly compute: CleanerCompute;
  private readonly ownsCompute: boolean;
  private readonly throttler: Throttler;
  private readonly clock: () => number;
  private readonly uncleanable = new WeakMap<Log, string>();
  private readonly states = new Map<string, CleanerLogState>();
  private maxDirtyRatio = 0;
  private passes = 0;
  private bytesReadTotal = 0;
  private bytesWrittenTotal = 0;
  private recordsRemovedTotal = 0;
  private lastPassDurationMs = 0;
  private stopped = false;

  constructor(
    private readonly settings: LogCleanerSettings = logCleanerSettingsDefault,
    options: LogCleanerOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.throttler = new Throttler(settings.ioMaxBytesPerSecond);
    this.compute = options.compute ?? new CleanerThread();
    this.ownsCompute = options.compute === undefined;
  }

  /**
   * Steps 1 to 4 for the dirtiest of `logs` (those without `compact` in cleanup.policy are
   * skipped). Undefined when none needs cleaning.
   */
  async cleanFilthiest(logs: readonly CleanerLog[]): Promise<CleanPassResult | undefined> {
    const nowMs = this.clock();
    const candidates: Array<{ entry: CleanerLog; range: CleanableRange; config: Log['config'] }> =
      [];
    let maxDirtyRatio = 0;
    const seen = new Set<string>();
    for (const entry of logs) {
      const { log } = entry;
      if (log.isClosed || !log.config.cleanupPolicy.includes('compact')) continue;
      const folder = path.basename(log.directory);
      seen.add(folder);
      const range = cleanableRangeOf(summaryOf(entry), log.config, nowMs);
      const reason = this.uncleanable.get(log);
      this.states.set(folder, {
        folder,
        firstDirtyOffset: range.firstDirtyOffset,
        dirtyRatio: range.dirtyRatio,
        lastCleanedAtMs: this.states.get(folder)?.lastCleanedAtMs,
        uncleanableReason: reason,
      });
      if (reason !== undefined) continue;
      if (range.dirtyRatio > maxDirtyRatio) maxDirtyRatio = range.dirtyRatio;
      candidates.push({ entry, range, config: log.config });
    }
    for (const folder of this.states.keys()) if (!seen.has(folder)) this.states.delete(folder);
    this.maxDirtyRatio = maxDirtyRatio;
    const chosen = chooseFilthiest(candidates);
    if (chosen === undefined || this.stopped) return undefined;
    const folder = path.basename(chosen.entry.log.directory);
    try {
      const result = await this.clean(chosen.entry, chosen.range, nowMs);
      this.passes++;
      this.bytesReadTotal += result.bytesRead;
      this.bytesWrittenTotal += result.bytesWritten;
      this.recordsRemovedTotal += result.recordsRemoved;
      this.lastPassDurationMs = result.durationMs;
      const state = this.states.get(folder);
      if (state !== undefined) {
        this.states.set(folder, {
          ...state,
          firstDirtyOffset: result.endOffset,
          lastCleanedAtMs: this.clock(),
        });
      }
      return result;
    } catch (error) {
      if (chosen.entry.log.isClosed) return undefined;
      const reason = error instanceof Error ? error.message : String(error);
      this.uncleanable.set(chosen.entry.log, reason);
      const state = this.states.get(folder);
      if (state !== undefined) this.states.set(folder, { ...state, uncleanableReason: reason });
      throw error;
    }
  }

  /**
   * Starts the cleaner's thread now rather than at the first pass, and resolves once its script
   * has loaded: a node starts it with itself, so a thread that cannot start shows at once.
   */
  async start(): Promise<void> {
    await this.compute.start();
  }

  /**
   * Ends a pass in progress at its next chunk (its `.cleaned` files removed, the swaps already
   * done kept) and starts no other: the node is shutting down and its logs are about to close.
   */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Stops (see stop) and ends the cleaner's thread. Call it once the pass in progress has ended:
   * one still running fails at its next chunk.
   */
  async close(): Promise<void> {
    this.stop();
    if (this.ownsCompute) await this.compute.close();
  }

  /** The cleaner's view of each compacted log it saw at its last choice. */
  logStates(): CleanerLogState[] {
    return [...this.states.values()];
  }

  statistics(): LogCleanerStatistics {
    return {
      maxDirtyRatio: this.maxDirtyRatio,
      passes: this.passes,
      bytesReadTotal: this.bytesReadTotal,
      bytesWrittenTotal: this.bytesWrittenTotal,
      recordsRemovedTotal: this.recordsRemovedTotal,
      lastPassDurationMs: this.lastPassDurationMs,
      throttledMs: this.throttler.throttledMs,
      threadCrashes: this.compute.crashes,
      uncleanable: [...this.states.values()]
        .filter((state) => state.uncleanableReason !== undefined)
        .map((state) => ({ folder: state.folder, reason: state.uncleanableReason! })),
    };
  }

  /** Steps 2 to 4 for one log whose cleanable range is `range`. */
  private async clean(
    entry: CleanerLog,
    range: CleanableRange,
    nowMs: number,
  ): Promise<CleanPassResult> {
    const startedAtMs = performance.now();
    const { log } = entry;
    const config = log.config;
    const folder = path.basename(log.directory);
    const segments = log.segmentsForCleaning().slice(0, range.cleanableSegmentCount);
    const io = { bytesRead: 0, bytesWritten: 0, recordsRemoved: 0 };
    let aborted = false;
    let mapEndOffset = range.firstDirtyOffset;
    try {
      // 2.
      this.ensureRunning();
      const keyCountMax = await this.compute.beginPass({
        dedupeBufferSizeBytes: this.settings.dedupeBufferSizeBytes,
        producerLastOffsets: entry.producerLastOffsets?.() ?? new Map<bigint, bigint>(),
      });
      mapEndOffset = await this.buildOffsetMap(segments, range, io);
      if (mapEndOffset <= range.firstDirtyOffset) {
        throw new Error(
          `log.cleaner.dedupe.buffer.size ${this.settings.dedupeBufferSizeBytes} holds ${keyCountMax} keys, fewer than the batch at offset ${range.firstDirtyOffset} of ${folder} has`,
        );
      }
      // 3.
      const summaries = segments.map(segmentSummaryOf);
      for (const group of groupSegmentsForCleaning(summaries, config)) {
        const sources = group.map((index) => segments[index]!);
        const swapped = await this.cleanGroup(log, sources, { mapEndOffset, nowMs, io });
        if (!swapped) {
          aborted = true;
          break;
        }
      }
    } catch (error) {
      const stopping =
        error instanceof CleanerStoppedError ||
        (error instanceof CleanerThreadClosedError && this.stopped);
      if (!(error instanceof SegmentGoneError) && !stopping) throw error;
      aborted = true;
    }
    // 4.
    if (!aborted) entry.checkpoint.update(folder, mapEndOffset);
    return {
      folder,
      dirtyRatio: range.dirtyRatio,
      firstDirtyOffset: range.firstDirtyOffset,
      endOffset: aborted ? range.firstDirtyOffset : mapEndOffset,
      ...io,
      segmentsBefore: segments.length,
      segmentsAfter: log.isClosed
        ? 0
        : log
            .segmentsForCleaning()
            .filter((segment) => segment.baseOffset < range.firstUncleanableOffset).length,
      durationMs: performance.now() - startedAtMs,
      aborted,
    };
  }

  private ensureRunning(): void {
    if (this.stopped) throw new CleanerStoppedError('the log cleaner is stopping');
  }

  /** Step 2: returns the offset below which the map knows every key's latest record. */
  private async buildOffsetMap(
    segments: readonly LogSegment[],
    range: CleanableRange,
    io: { bytesRead: number },
  ): Promise<bigint> {
    const chunkBytes = this.settings.chunkBytes ?? chunkBytesDefault;
    for (const segment of segments) {
      if (segment.nextOffset <= range.firstDirtyOffset) continue;
      const fromPosition =
        segment.baseOffset >= range.firstDirtyOffset
          ? 0
          : segment.positionOf(range.firstDirtyOffset);
      for await (const chunk of readSegmentChunks(segment, fromPosition, chunkBytes)) {
        this.ensureRunning();
        io.bytesRead += chunk.bytes.length;
        const mapFullAtOffset = await this.compute.mapChunk(chunk, range.firstDirtyOffset);
        if (mapFullAtOffset !== undefined) return mapFullAtOffset;
        await this.throttler.maybeThrottle(chunk.bytes.length);
      }
    }
    return range.firstUncleanableOffset;
  }

  /** Step 3 for one group: false when the log changed under it and nothing was swapped. */
  private async cleanGroup(
    log: Log,
    sources: readonly LogSegment[],
    pass: {
      mapEndOffset: bigint;
      nowMs: number;
      io: { bytesRead: number; bytesWritten: number; recordsRemoved: number };
    },
  ): Promise<boolean> {
    const chunkBytes = this.settings.chunkBytes ?? chunkBytesDefault;
    const { io } = pass;
    const cleaned = log.createCleanedSegment(sources[0]!.baseOffset);
    let handedOver = false;
    let swapped = false;
    try {
      let modifiedMs = 0;
      for (const source of sources) {
        const retention = {
          mapEndOffset: pass.mapEndOffset,
          retainTombstones: largestTimestampOf(source) > pass.nowMs - log.config.deleteRetentionMs,
        };
        modifiedMs = Math.max(modifiedMs, fs.statSync(source.path).mtimeMs);
        for await (const chunk of readSegmentChunks(source, 0, chunkBytes)) {
          this.ensureRunning();
          io.bytesRead += chunk.bytes.length;
          const filtered = await this.compute.filterChunk(chunk, retention);
          io.recordsRemoved += filtered.recordsRemoved;
          const written = appendKept(cleaned, filtered.kept);
          io.bytesWritten += written;
          await this.throttler.maybeThrottle(chunk.bytes.length + written);
        }
      }
      cleaned.onBecomeInactive();
      await cleaned.flush();
      await cleaned.flushIndexes();
      // Retention by time reads a segment without timestamps by its modification time (Kafka
      // keeps the group's last one on the cleaned segment too).
      if (modifiedMs > 0) fs.utimesSync(cleaned.path, new Date(), new Date(modifiedMs));
      await fsyncDirectoryAsync(log.directory);
      if (log.isClosed) return false;
      handedOver = true;
      swapped = await log.replaceCleanedSegments(sources, cleaned);
      return swapped;
    } finally {
      if (!swapped) {
        if (!handedOver) cleaned.close();
        removeCleanedFiles(log.directory, cleaned.baseOffset);
      }
    }
  }
}

/** The cleaner was stopped during a pass (LogCleaner.stop). */
class CleanerStoppedError extends Error {
  override readonly name = 'CleanerStoppedError';
}

/** Appends the kept batches of one chunk to the cleaned segment; returns the bytes written. */
function appendKept(cleaned: LogSegment, bytes: Buffer): number {
  if (bytes.length === 0) return 0;
  const batches: BatchInfo[] = [];
  let position = 0;
  while (position < bytes.length) {
    const batch = batchInfoFromHeader(bytes, position, position, bytes.readBigInt64BE(position));
    batches.push(batch);
    position += batch.sizeBytes;
  }
  cleaned.append(bytes, batches);
  return bytes.length;
}

function segmentSummaryOf(segment: LogSegment): SegmentSummary {
  return {
    baseOffset: segment.baseOffset,
    nextOffset: segment.nextOffset,
    sizeBytes: segment.sizeBytes,
    largestTimestampMs: segment.isEmpty ? 0 : largestTimestampOf(segment),
    offsetIndexEntries: segment.offsetIndex.entryCount,
  };
}

function summaryOf(entry: CleanerLog): LogSummary {
  const { log } = entry;
  return {
    segments: log.segmentsForCleaning().map(segmentSummaryOf),
    logStartOffset: log.logStartOffset,
    highWatermark: log.highWatermark,
    checkpointedFirstDirtyOffset: entry.checkpoint.firstDirtyOffset(path.basename(log.directory)),
  };
}
