/**
 * Retention (Kafka's `retention.ms` and `retention.bytes` under `cleanup.policy=delete`): which of a
 * log's oldest segments have outlived their time, or push the log past its size. Only closed
 * segments go, oldest first, whole: the active segment is never deleted, so a log always has a
 * place for the next append. Log.deleteRetainedSegments (log.ts) deletes them and moves the log
 * start offset; this only decides, so the rule can be read (and tested) in one place.
 */
import * as fs from 'node:fs';
import type { LogConfig } from './log-config';
import type { LogSegment } from './log-segment';

/**
 * How many of `segments` (oldest first, the last one active) retention deletes at `nowMs`:
 * first every closed segment whose newest record is older than retention.ms, then the oldest
 * closed segments while the log is larger than retention.bytes. A negative setting is off, and
 * so is all of it without `delete` in cleanup.policy.
 */
export function segmentsPastRetention(
  segments: readonly LogSegment[],
  config: Pick<LogConfig, 'retentionMs' | 'retentionBytes' | 'cleanupPolicy'>,
  nowMs: number,
): number {
  // cleanup.policy=compact alone: a key's latest record is kept however old the log is.
  if (!config.cleanupPolicy.includes('delete')) return 0;
  const closedSegments = segments.length - 1;
  let count = 0;
  if (config.retentionMs >= 0) {
    while (
      count < closedSegments &&
      largestTimestampOf(segments[count]!) < nowMs - config.retentionMs
    ) {
      count++;
    }
  }
  if (config.retentionBytes >= 0) {
    let excessBytes = -config.retentionBytes;
    for (let index = count; index < segments.length; index++) {
      excessBytes += segments[index]!.sizeBytes;
    }
    while (count < closedSegments && excessBytes >= segments[count]!.sizeBytes) {
      excessBytes -= segments[count]!.sizeBytes;
      count++;
    }
  }
  return count;
}

/** A segment's newest record time; its file's modification time when it has no timestamps. */
export function largestTimestampOf(segment: LogSegment): number {
  return segment.maxTimestampMs >= 0 ? segment.maxTimestampMs : fs.statSync(segment.path).mtimeMs;
}
