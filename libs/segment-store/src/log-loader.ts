/**
 * Loading a partition log's folder (Kafka's `LogLoader`): lists the segments, removes leftovers
 * of interrupted writes, trusts what a clean shutdown or the recovery point vouches for, recovers
 * the rest (framing, CRC and offsets of each batch; the first bad batch and everything after it
 * cut), rebuilds indexes and the leader-epoch cache where needed, and counts what it did for the
 * log's RecoveryReport. Log.open (log.ts) assembles the log from what this returns.
 *
 * Crash story: log.ts, crash stories 1 and 2. Everything recovery rewrote (truncated segments,
 * rebuilt indexes) is fsynced before this returns, and the folder too when an entry changed, so
 * a crash during or right after loading finds either the old files (recovered again) or the new.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fsyncDirectory, readOffsetCheckpoint } from './checkpoint-file';
import { SegmentStoreError } from './errors';
import { defaultFileHandleCache } from './file-handle-cache';
import { LeaderEpochCache } from './leader-epoch-cache';
import { batchSizeBytesLimit, resolveLogConfig, type LogConfig } from './log-config';
import { LogSegment } from './log-segment';
import { recoverInterruptedSwap } from './cleaner/segment-swap';
import type { LogOpenOptions, RecoveryReport } from './log';
import {
  cleanShutdownFile,
  leaderEpochCheckpointFile,
  logStartOffsetCheckpointFile,
  recoveryPointCheckpointFile,
} from './log-files';

/** What loading found, for Log.open to assemble the log from. */
export interface LoadedSegments {
  readonly config: LogConfig;
  readonly segments: LogSegment[];
  readonly epochCache: LeaderEpochCache;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  /** What the folder's log-start-offset checkpoint held, if it has one. */
  readonly checkpointedLogStartOffset: bigint | undefined;
  /** The folder had no segment: its first one was created here. */
  readonly createdSegment: boolean;
  readonly counts: Pick<
    RecoveryReport,
    | 'clean'
    | 'segmentsScanned'
    | 'batchesValid'
    | 'bytesTruncated'
    | 'segmentsDeleted'
    | 'indexesRebuilt'
    | 'cleanerSwap'
  >;
  /** Problems found so far, one line each; Log.open adds its own. */
  readonly problems: string[];
  readonly startedAtMs: number;
}

/**
 * Opens every segment of the log in `directory` (creating the folder and a first segment when
 * absent), recovering those that need it. Never throws for bad data in the log: it cuts and
 * reports. Throws for I/O failures.
 */
export async function loadSegments(
  directory: string,
  options: LogOpenOptions,
): Promise<LoadedSegments> {
  const startedAtMs = Date.now();
  const config = resolveLogConfig(options.config);
  const files = options.files ?? defaultFileHandleCache;
  fs.mkdirSync(directory, { recursive: true });
  // A cleaner swap that a crash interrupted is finished or undone before segments are listed.
  const swap = recoverInterruptedSwap(directory);
  const baseOffsets = listSegmentBaseOffsets(directory);
  const membership = options.logDirectory;
  const markerPath = path.join(directory, cleanShutdownFile);
  const recoveryPointPath = path.join(directory, recoveryPointCheckpointFile);
  const ownMarker = fs.existsSync(markerPath);
  const clean = (ownMarker || membership?.cleanShutdown === true) && baseOffsets.length > 0;
  const createsSegment = baseOffsets.length === 0;
  const problems: string[] = swap.actions.map((action) => `interrupted cleaner swap: ${action}`);
  let segmentsScanned = 0;
  let batchesValid = 0;
  let bytesTruncated = 0;
  let segmentsDeleted = 0;
  let indexesRebuilt = 0;

  const checkpointedStart = readOffsetCheckpoint(
    path.join(directory, logStartOffsetCheckpointFile),
  );
  // A folder from a version that kept its own checkpoint: read once, then removed below.
  const ownRecoveryPoint =
    membership === undefined || membership.recoveryPoint === undefined
      ? readOffsetCheckpoint(recoveryPointPath)
      : undefined;
  const recoveryPoint = clean ? undefined : (membership?.recoveryPoint ?? ownRecoveryPoint ?? 0n);
  if (baseOffsets.length === 0) baseOffsets.push(checkpointedStart ?? 0n);

  const segments: LogSegment[] = [];
  const recovered: LogSegment[] = [];
  for (const [index, baseOffset] of baseOffsets.entries()) {
    const exists = fs.existsSync(
      path.join(directory, `${baseOffset.toString().padStart(20, '0')}.log`),
    );
    const segment = exists
      ? LogSegment.open(directory, baseOffset, config, files)
      : LogSegment.create(directory, baseOffset, config, files);
    segment.createdAtMs = (options.clock ?? Date.now)();
    segments.push(segment);
    const nextBase = baseOffsets[index + 1];
    const needsRecovery =
      recoveryPoint !== undefined && (nextBase === undefined || nextBase > recoveryPoint);
    let recover = needsRecovery;
    if (!recover) {
      try {
        if (segment.loadTrusted().indexesRebuilt) indexesRebuilt++;
      } catch (error) {
        if (!(error instanceof SegmentStoreError)) throw error;
        problems.push(error.message);
        recover = true;
      }
    }
    if (recover) {
      const result = segment.recover(batchSizeBytesLimit);
      // An empty file (an idle partition's active segment) had nothing to scan.
      if (result.batchesValid > 0 || result.bytesTruncated > 0) segmentsScanned++;
      // Batches past the recovery point may be pages the crashed process left unwritten: they
      // are synced before the recovery point passes them. Those below it were synced before.
      if (recoveryPoint === undefined || segment.nextOffset > recoveryPoint) {
        segment.logFile.markUnsynced();
      }
      indexesRebuilt++;
      batchesValid += result.batchesValid;
      bytesTruncated += result.bytesTruncated;
      recovered.push(segment);
      if (result.problem !== undefined) {
        problems.push(result.problem);
        // Everything after the first bad batch is gone: later segments cannot be trusted to
        // continue the offsets, so they go too (Kafka does the same).
        for (const later of baseOffsets.slice(index + 1)) {
          const doomed = LogSegment.open(directory, later, config, files);
          bytesTruncated += doomed.sizeBytes;
          doomed.delete();
          segmentsDeleted++;
        }
        break;
      }
    }
    // Let the event loop breathe between segments of a long recovery.
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const segment of recovered) {
    await segment.flush();
    segment.flushIndexesSync();
  }
  if (ownMarker) fs.rmSync(markerPath);
  const ownCheckpointRemoved = membership !== undefined && fs.existsSync(recoveryPointPath);
  if (ownCheckpointRemoved) fs.rmSync(recoveryPointPath);
  // A clean open of a directory's log changed nothing in its folder: no fsync (20,000 of them
  // were most of a node's start-up). A new log's first segment files reach the folder's disk
  // entry in a flush started below, off the caller's path, as a roll's do (crash story 3).
  if (membership === undefined || ownMarker || ownCheckpointRemoved || segmentsDeleted > 0) {
    fsyncDirectory(directory);
  }

  const { cache: epochCache, malformed } = LeaderEpochCache.load(
    path.join(directory, leaderEpochCheckpointFile),
  );
  if (malformed)
    problems.push(`${leaderEpochCheckpointFile} was malformed; rebuilt from the batches`);
  for (const segment of malformed ? segments : recovered) assignEpochsFrom(segment, epochCache);

  const logEndOffset = segments.at(-1)!.nextOffset;
  let logStartOffset = checkpointedStart ?? segments[0]!.baseOffset;
  if (logStartOffset < segments[0]!.baseOffset) logStartOffset = segments[0]!.baseOffset;
  return {
    config,
    segments,
    epochCache,
    logStartOffset,
    logEndOffset,
    checkpointedLogStartOffset: checkpointedStart,
    createdSegment: createsSegment,
    counts: {
      clean,
      segmentsScanned,
      batchesValid,
      bytesTruncated,
      segmentsDeleted,
      indexesRebuilt,
      cleanerSwap: swap.outcome,
    },
    problems,
    startedAtMs,
  };
}

/** Records the epochs of a segment's batches in the cache (after recovery, or to rebuild it). */
function assignEpochsFrom(segment: LogSegment, cache: LeaderEpochCache): void {
  let position = 0;
  for (;;) {
    const batch = segment.readBatchAt(position);
    if (batch === undefined) return;
    if (batch.partitionLeaderEpoch > cache.latestEpoch)
      cache.assign(batch.partitionLeaderEpoch, batch.baseOffset);
    position += batch.sizeBytes;
  }
}

/** Base offsets of the .log files, ascending; removes leftovers of interrupted writes. */
function listSegmentBaseOffsets(directory: string): bigint[] {
  const names = fs.readdirSync(directory);
  const logs = new Set<string>();
  for (const name of names) {
    if (/^\d{20}\.log$/.test(name)) logs.add(name.slice(0, 20));
  }
  for (const name of names) {
    const orphanIndex = /^(\d{20})\.(index|timeindex)$/.exec(name);
    if ((orphanIndex !== null && !logs.has(orphanIndex[1]!)) || name.endsWith('.tmp')) {
      fs.rmSync(path.join(directory, name), { force: true });
    }
  }
  return [...logs]
    .map((name) => BigInt(name))
    .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
}
