// Proves the cleaner's choice rules without a log: the dirty ratio over the cleanable segments,
// a checkpoint outside the log clamped to its start, the high watermark, min.compaction.lag.ms
// and max.compaction.lag.ms, the dirtiest log chosen, and groups bounded by segment.bytes, the
// index size and a 32-bit offset distance.
import { describe, expect, it } from 'vitest';
import {
  chooseFilthiest,
  cleanableRangeOf,
  groupSegmentsForCleaning,
  type SegmentSummary,
} from './cleanable-log';

const config = { minCleanableDirtyRatio: 0.5, minCompactionLagMs: 0, maxCompactionLagMs: 1e15 };

function segment(
  baseOffset: number,
  nextOffset: number,
  sizeBytes: number,
  largestTimestampMs = 0,
): SegmentSummary {
  return {
    baseOffset: BigInt(baseOffset),
    nextOffset: BigInt(nextOffset),
    sizeBytes,
    largestTimestampMs,
    offsetIndexEntries: 1,
  };
}

const segments = [
  segment(0, 10, 100, 10),
  segment(10, 20, 300, 20),
  segment(20, 30, 100, 30),
  segment(30, 30, 0),
];

describe('cleanableRangeOf', () => {
  it('measures the dirty share of the closed segments below the high watermark', () => {
    const summary = {
      segments,
      logStartOffset: 0n,
      highWatermark: 30n,
      checkpointedFirstDirtyOffset: 10n,
    };
    expect(cleanableRangeOf(summary, config, 1000)).toEqual({
      firstDirtyOffset: 10n,
      firstUncleanableOffset: 30n,
      cleanableSegmentCount: 3,
      cleanBytes: 100,
      dirtyBytes: 400,
      dirtyRatio: 0.8,
      compactionDue: false,
    });
    const belowHighWatermark = cleanableRangeOf({ ...summary, highWatermark: 25n }, config, 1000);
    expect(belowHighWatermark).toMatchObject({ firstUncleanableOffset: 20n, dirtyBytes: 300 });
  });

  it('starts from the log start when the checkpoint lies outside the log', () => {
    for (const checkpointed of [50n, 2n]) {
      const summary = {
        segments,
        logStartOffset: 5n,
        highWatermark: 30n,
        checkpointedFirstDirtyOffset: checkpointed,
      };
      expect(cleanableRangeOf(summary, config, 1000).firstDirtyOffset).toBe(5n);
    }
  });

  it('leaves segments younger than min.compaction.lag.ms, and is due past max.compaction.lag.ms', () => {
    const summary = {
      segments,
      logStartOffset: 0n,
      highWatermark: 30n,
      checkpointedFirstDirtyOffset: undefined,
    };
    expect(cleanableRangeOf(summary, { ...config, minCompactionLagMs: 985 }, 1000)).toMatchObject({
      firstUncleanableOffset: 10n,
      cleanableSegmentCount: 1,
    });
    expect(
      cleanableRangeOf(summary, { ...config, maxCompactionLagMs: 985 }, 1000).compactionDue,
    ).toBe(true);
    expect(
      cleanableRangeOf(summary, { ...config, maxCompactionLagMs: 995 }, 1000).compactionDue,
    ).toBe(false);
  });
});

describe('chooseFilthiest', () => {
  it('takes the dirtiest log over its ratio, or one due by lag', () => {
    const range = (dirtyRatio: number, compactionDue = false) => ({
      firstDirtyOffset: 0n,
      firstUncleanableOffset: 1n,
      cleanableSegmentCount: 1,
      cleanBytes: 1,
      dirtyBytes: 1,
      dirtyRatio,
      compactionDue,
    });
    const candidates = [
      { name: 'low', range: range(0.2), config },
      { name: 'high', range: range(0.7), config },
      { name: 'higher', range: range(0.9), config },
    ];
    expect(chooseFilthiest(candidates)?.name).toBe('higher');
    expect(chooseFilthiest(candidates.slice(0, 1))).toBeUndefined();
    expect(chooseFilthiest([{ name: 'due', range: range(0.1, true), config }])?.name).toBe('due');
  });
});

describe('groupSegmentsForCleaning', () => {
  it('groups consecutive segments within segment.bytes, the index size and 32-bit offsets', () => {
    const sizes = [
      segment(0, 10, 400),
      segment(10, 20, 500),
      segment(20, 30, 200),
      segment(30, 40, 900),
    ];
    expect(
      groupSegmentsForCleaning(sizes, { segmentBytes: 1000, segmentIndexBytes: 1 << 20 }),
    ).toEqual([[0, 1], [2], [3]]);
    expect(
      groupSegmentsForCleaning(sizes, { segmentBytes: 1 << 30, segmentIndexBytes: 24 }),
    ).toEqual([
      [0, 1],
      [2, 3],
    ]);
    const far = [segment(0, 10, 1), segment(2 ** 31, 2 ** 31 + 1, 1)];
    expect(
      groupSegmentsForCleaning(far, { segmentBytes: 1 << 30, segmentIndexBytes: 1 << 20 }),
    ).toEqual([[0], [1]]);
  });
});
