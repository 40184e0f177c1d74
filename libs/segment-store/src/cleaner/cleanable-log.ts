/**
 * Which part of a compacted log the cleaner may clean, how dirty it is, and which log to clean
 * first (Kafka's `LogCleanerManager.cleanableOffsets` and `grabFilthiestCompactedLog`), and how
 * its segments are grouped into cleaned segments (Kafka's `groupSegmentsBySize`). Pure: it reads
 * summaries of segments, not files, so every rule is tested without a log.
 *
 * Words, as Kafka's: the clean section of a log runs from its start to the first dirty offset
 * (where the last cleaning stopped); the dirty section from there to the first uncleanable
 * offset. Only whole closed segments below the first uncleanable offset are cleaned:
 *
 *   1. never the active segment, which still takes appends;
 *   2. never at or past the high watermark, which a follower's truncation may still remove;
 *   3. never a segment holding a record younger than min.compaction.lag.ms.
 */
import type { LogConfig } from '../log-config';

/** What the selection needs of one segment. */
export interface SegmentSummary {
  readonly baseOffset: bigint;
  /** The offset after its last batch (its base offset when it is empty). */
  readonly nextOffset: bigint;
  readonly sizeBytes: number;
  /** Its newest record's timestamp, or its file's modification time without timestamps. */
  readonly largestTimestampMs: number;
  readonly offsetIndexEntries: number;
}

export interface LogSummary {
  /** Oldest first; the last one is the active segment. */
  readonly segments: readonly SegmentSummary[];
  readonly logStartOffset: bigint;
  readonly highWatermark: bigint;
  /** The cleaner checkpoint's entry for the log, if it has one. */
  readonly checkpointedFirstDirtyOffset: bigint | undefined;
}

export interface CleanableRange {
  /** Where the dirty section starts. */
  readonly firstDirtyOffset: bigint;
  /** The first uncleanable offset: the base offset of the first segment not cleaned. */
  readonly firstUncleanableOffset: bigint;
  /** How many segments, from the first, lie wholly below firstUncleanableOffset. */
  readonly cleanableSegmentCount: number;
  readonly cleanBytes: number;
  readonly dirtyBytes: number;
  /** dirtyBytes over cleanBytes + dirtyBytes; 0 when both are 0. */
  readonly dirtyRatio: number;
  /** A dirty record has waited max.compaction.lag.ms: clean now, whatever the ratio. */
  readonly compactionDue: boolean;
}

type CleaningConfig = Pick<
  LogConfig,
  'minCleanableDirtyRatio' | 'minCompactionLagMs' | 'maxCompactionLagMs'
>;

/** The cleanable range of a log at `nowMs` (the header's rules 1 to 3). */
export function cleanableRangeOf(
  summary: LogSummary,
  config: CleaningConfig,
  nowMs: number,
): CleanableRange {
  const { segments, logStartOffset, highWatermark } = summary;
  const logEndOffset = segments.at(-1)?.nextOffset ?? logStartOffset;
  let firstDirtyOffset = summary.checkpointedFirstDirtyOffset ?? logStartOffset;
  // A checkpoint past the end (the log was truncated since) or before the start is not trusted.
  if (firstDirtyOffset < logStartOffset || firstDirtyOffset > logEndOffset) {
    firstDirtyOffset = logStartOffset;
  }
  let cleanableSegmentCount = 0;
  for (let index = 0; index < segments.length - 1; index++) {
    const segment = segments[index]!;
    // 2.
    if (segment.nextOffset > highWatermark) break;
    // 3.
    if (
      segment.nextOffset > firstDirtyOffset &&
      config.minCompactionLagMs > 0 &&
      segment.largestTimestampMs > nowMs - config.minCompactionLagMs
    ) {
      break;
    }
    cleanableSegmentCount++;
  }
  // 1. (the loop above never reaches the active segment)
  const firstUncleanableOffset =
    segments[cleanableSegmentCount]?.baseOffset ?? segments.at(-1)?.baseOffset ?? logStartOffset;
  let cleanBytes = 0;
  let dirtyBytes = 0;
  let compactionDue = false;
  const maxLagBoundMs = nowMs - config.maxCompactionLagMs;
  for (let index = 0; index < cleanableSegmentCount; index++) {
    const segment = segments[index]!;
    if (segment.nextOffset <= firstDirtyOffset) {
      cleanBytes += segment.sizeBytes;
    } else {
      dirtyBytes += segment.sizeBytes;
      if (segment.sizeBytes > 0 && segment.largestTimestampMs < maxLagBoundMs) compactionDue = true;
    }
  }
  const totalBytes = cleanBytes + dirtyBytes;
  return {
    firstDirtyOffset,
    firstUncleanableOffset,
    cleanableSegmentCount,
    cleanBytes,
    dirtyBytes,
    dirtyRatio: totalBytes === 0 ? 0 : dirtyBytes / totalBytes,
    compactionDue,
  };
}

/** Whether a log with this range is worth a pass: dirty bytes over the ratio, or due by lag. */
export function needsCleaning(range: CleanableRange, config: CleaningConfig): boolean {
  if (range.dirtyBytes === 0) return false;
  return range.compactionDue || range.dirtyRatio >= config.minCleanableDirtyRatio;
}

/**
 * The candidate to clean first: of those that need cleaning, the dirtiest (Kafka's filthiest
 * log); ties go to the first listed. Undefined when none needs cleaning.
 */
export function chooseFilthiest<T extends { range: CleanableRange; config: CleaningConfig }>(
  candidates: readonly T[],
): T | undefined {
  let chosen: T | undefined;
  for (const candidate of candidates) {
    if (!needsCleaning(candidate.range, candidate.config)) continue;
    if (chosen === undefined || candidate.range.dirtyRatio > chosen.range.dirtyRatio) {
      chosen = candidate;
    }
  }
  return chosen;
}

/** Bytes an offset-index entry and a time-index entry take, the larger of the two. */
const indexEntryBytesMax = 12;
/** A cleaned segment's offsets are relative to its base offset in 32 bits, as in any segment. */
const relativeOffsetMax = 0x7fffffffn;

/**
 * Splits the cleanable segments into consecutive groups, each cleaned into one segment: a group
 * takes the next segment while their sizes together stay within segment.bytes, their index
 * entries within segment.index.bytes, and their offsets within a 32-bit distance of the group's
 * base. Sizes are the uncleaned ones, an upper bound on the cleaned: the cleaned segment always
 * fits. Returns indexes into `segments`.
 */
export function groupSegmentsForCleaning(
  segments: readonly SegmentSummary[],
  config: Pick<LogConfig, 'segmentBytes' | 'segmentIndexBytes'>,
): number[][] {
  const groups: number[][] = [];
  let index = 0;
  while (index < segments.length) {
    const first = segments[index]!;
    const group = [index];
    let sizeBytes = first.sizeBytes;
    let indexBytes = first.offsetIndexEntries * indexEntryBytesMax;
    index++;
    while (index < segments.length) {
      const next = segments[index]!;
      if (
        sizeBytes + next.sizeBytes > config.segmentBytes ||
        indexBytes + next.offsetIndexEntries * indexEntryBytesMax > config.segmentIndexBytes ||
        next.nextOffset - 1n - first.baseOffset > relativeOffsetMax
      ) {
        break;
      }
      sizeBytes += next.sizeBytes;
      indexBytes += next.offsetIndexEntries * indexEntryBytesMax;
      group.push(index);
      index++;
    }
    groups.push(group);
  }
  return groups;
}
