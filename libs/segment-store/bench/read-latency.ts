// Measurement 2: the latency of a read by offset, on a small and on a large log. A read returns
// slices (file, position, size) and copies no bytes, so what is timed is finding the segment,
// the offset-index lookup and the batch-header reads that verify and bound the range: the cost
// Kafka keeps independent of the log's size, which the growth ratio checks.
//
// Reads go to random offsets (a seeded generator, the same every run), each followed by release()
// inside the timed span. Where the offsets come from decides what is compared:
//
//   - Hot set (the target): offsets from the same number of bytes of log in both logs, 16 windows
//     of hotSetBytes / 16 spread evenly over each log, so the memory a read touches (its index
//     entries, and the pages of the pread floor) is as large in both, and what grows with the
//     log is only what the log code does for a larger log: more segments, larger indexes to
//     search, larger offsets. This is the claim a read's cost does not depend on the log's size;
//     it is also how consumers read, near the tail or sequentially, never uniformly at random.
//   - Whole log (reported, not the target): uniformly random offsets of the whole log. A random
//     read of a 4 GiB log touches index entries no cache holds; that shows as growth the machine
//     adds for a larger working set (the pread floor over the same files shows the page cache's).
//
// Both logs are warmed up first, then measured twice:
//
//   1. Single pass, whole log: short alternating blocks, all pooled into one p99 per log. A disturbance of
//      the machine (another process, writeback, the host's page cache) lands on both logs alike,
//      but one p99 of a few hundred slowest reads still swings with it from run to run.
//   2. Rounds, hot set and whole log: readRounds rounds, each with readCountPerLog / readRounds reads of every kind, the
//      kinds in turn, the order reversed every other round. Each round gives one p99 per log,
//      and the median of those p99s is the figure the growth target checks: a round that the
//      machine disturbed moves its own p99, not the median, while growth that the log code
//      causes shows in every round and so in the median.
//
// Both time the pread floor of each log's files (pread-floor.ts) the same way, to tell growth
// that comes from the machine from growth that comes from the log code.
import { assert } from '@spool/common';
import type { Log } from './package-under-test';
import { median, percentile, seededRandom } from './measurement';
import { holdSegmentFiles, sampleFloorReads, type SegmentFiles } from './pread-floor';

/** Bytes a read asks for: Kafka's max.partition.fetch.bytes default. */
export const readMaxBytes = 1024 * 1024;
/**
 * Reads per block; a block of each kind in turn (small log, large log, small floor, large floor),
 * about 2 ms each at a few µs a read.
 */
const readsPerBlock = 250;
/** Rounds of the second measurement; odd, so each median is one round's p99. */
export const readRounds = 11;
/** Untimed reads of each kind before the blocks: JIT, lazy index loads, caches. */
const warmupReadsPerLog = 2_000;
/** Bytes of log the hot-set reads come from, at most; and the windows they are spread over. */
const hotSetBytesMax = 64 * 1024 * 1024;
export const hotSetWindowCount = 16;

/** The hot set of both logs: at most half the small log, so it is a set and not the whole log. */
export function hotSetBytesFor(smallLogSizeBytes: number): number {
  return Math.min(hotSetBytesMax, Math.floor(smallLogSizeBytes / 2));
}

export interface ReadLatency {
  readonly p50Micros: number;
  readonly p99Micros: number;
  readonly maxMicros: number;
  readonly readCount: number;
  readonly meanReadSizeBytes: number;
}

/** One kind of read measured in rounds: each round's p99 and their median. */
export interface RoundsLatency {
  readonly p99MicrosByRound: readonly number[];
  readonly p99MicrosMedian: number;
  readonly readCount: number;
}

export interface ReadLatencyResult {
  /** Measurement 1, single pass: every block's reads pooled into one distribution per kind. */
  readonly small: ReadLatency;
  readonly large: ReadLatency;
  /** Two header preads per sample on the small and the large log's files, no log code. */
  readonly floorSmall: ReadLatency;
  readonly floorLarge: ReadLatency;
  /** Measurement 2, rounds: the same four kinds on the hot set (the target) and the whole log. */
  readonly rounds: RoundsByKind;
  readonly roundsWholeLog: RoundsByKind;
  readonly hotSetBytes: number;
}

export interface RoundsByKind {
  readonly small: RoundsLatency;
  readonly large: RoundsLatency;
  readonly floorSmall: RoundsLatency;
  readonly floorLarge: RoundsLatency;
}

/**
 * Where reads go: each of `windowCount` equal windows (fractions of the log, evenly spaced) is as
 * likely; inside one, every offset (or byte) is. One window covering everything is the whole log.
 */
interface ReadWindows {
  readonly windowCount: number;
  /** The fraction of the log each window covers. */
  readonly windowFraction: number;
}

const wholeLog: ReadWindows = { windowCount: 1, windowFraction: 1 };

/** A fraction of the log, in [0, 1), drawn from the windows. */
function drawFraction(windows: ReadWindows, random: () => number): number {
  const window = Math.floor(random() * windows.windowCount);
  return (window + random() * windows.windowCount * windows.windowFraction) / windows.windowCount;
}

export function measureReadLatency(
  small: Log,
  large: Log,
  readCountPerLog: number,
): ReadLatencyResult {
  const random = seededRandom(0x0ff5e7);
  const blockCount = Math.max(1, Math.ceil(readCountPerLog / readsPerBlock));
  const readsInBlock = Math.ceil(readCountPerLog / blockCount);
  const smallFiles = holdSegmentFiles(small);
  const largeFiles = holdSegmentFiles(large);
  const hotSetBytes = hotSetBytesFor(small.sizeBytes);
  try {
    const logs = [small, large];
    const files = [smallFiles, largeFiles];
    const hotSet = (log: Log): ReadWindows => ({
      windowCount: hotSetWindowCount,
      windowFraction: hotSetBytes / hotSetWindowCount / log.sizeBytes,
    });
    const sampleAll = (count: number, windowsOf: (log: Log) => ReadWindows): Sampled[] => [
      ...logs.map((log) => sampleReads(log, randomOffsets(log, windowsOf(log), count, random))),
      ...files.map((held, kind) => sampleFloor(held, windowsOf(logs[kind]!), count, random)),
    ];
    sampleAll(warmupReadsPerLog, () => wholeLog);
    sampleAll(warmupReadsPerLog, hotSet);
    const blocksByKind: Sampled[][] = [[], [], [], []];
    for (let block = 0; block < blockCount; block++) {
      sampleAll(readsInBlock, () => wholeLog).forEach((sampled, kind) =>
        blocksByKind[kind]!.push(sampled),
      );
    }
    const [smallLog, largeLog, floorSmall, floorLarge] = blocksByKind.map(summarize);
    const readsPerRound = Math.ceil(readCountPerLog / readRounds);
    const rounds = measureRounds(logs, files, hotSet, readsPerRound, random);
    const roundsWholeLog = measureRounds(logs, files, () => wholeLog, readsPerRound, random);
    return {
      small: smallLog!,
      large: largeLog!,
      floorSmall: floorSmall!,
      floorLarge: floorLarge!,
      rounds,
      roundsWholeLog,
      hotSetBytes,
    };
  } finally {
    smallFiles.release();
    largeFiles.release();
  }
}

/** Measurement 2: kinds in the order small log, large log, small floor, large floor. */
function measureRounds(
  logs: readonly Log[],
  files: readonly SegmentFiles[],
  windowsOf: (log: Log) => ReadWindows,
  readsPerRound: number,
  random: () => number,
): RoundsByKind {
  const samplers: (() => Sampled)[] = [
    ...logs.map(
      (log) => () => sampleReads(log, randomOffsets(log, windowsOf(log), readsPerRound, random)),
    ),
    ...files.map(
      (held, kind) => () => sampleFloor(held, windowsOf(logs[kind]!), readsPerRound, random),
    ),
  ];
  const p99sByKind: number[][] = samplers.map(() => []);
  for (let round = 0; round < readRounds; round++) {
    // Reversed every other round: no kind always runs right after another.
    const order = samplers.map((_, kind) => kind);
    if (round % 2 === 1) order.reverse();
    for (const kind of order) {
      p99sByKind[kind]!.push(percentile(samplers[kind]!().micros, 0.99));
    }
  }
  const [small, large, floorSmall, floorLarge] = p99sByKind.map(
    (p99MicrosByRound): RoundsLatency => ({
      p99MicrosByRound,
      p99MicrosMedian: median(p99MicrosByRound),
      readCount: readsPerRound * readRounds,
    }),
  );
  return { small: small!, large: large!, floorSmall: floorSmall!, floorLarge: floorLarge! };
}

interface Sampled {
  readonly micros: Float64Array;
  readonly bytesRead: number;
}

/** Offsets in the windows; the pool's batches are all alike, so offsets are as bytes are. */
function randomOffsets(
  log: Log,
  windows: ReadWindows,
  count: number,
  random: () => number,
): bigint[] {
  const start = Number(log.logStartOffset);
  const span = Number(log.logEndOffset) - start;
  assert(span > 0, 'the log to read is empty');
  return Array.from({ length: count }, () =>
    BigInt(start + Math.floor(drawFraction(windows, random) * span)),
  );
}

function sampleReads(log: Log, offsets: readonly bigint[]): Sampled {
  const micros = new Float64Array(offsets.length);
  const maxOffsetExclusive = log.logEndOffset;
  let bytesRead = 0;
  for (let index = 0; index < offsets.length; index++) {
    const startedAt = process.hrtime.bigint();
    const result = log.read(offsets[index]!, readMaxBytes, { maxOffsetExclusive });
    result.release();
    micros[index] = Number(process.hrtime.bigint() - startedAt) / 1000;
    assert(result.sizeBytes > 0, 'a read inside the log returned no bytes');
    bytesRead += result.sizeBytes;
  }
  return { micros, bytesRead };
}

function sampleFloor(
  files: SegmentFiles,
  windows: ReadWindows,
  count: number,
  random: () => number,
): Sampled {
  const micros = sampleFloorReads(files, count, readMaxBytes, () => drawFraction(windows, random));
  return { micros, bytesRead: 0 };
}

function summarize(blocks: readonly Sampled[]): ReadLatency {
  const readCount = blocks.reduce((total, block) => total + block.micros.length, 0);
  const micros = new Float64Array(readCount);
  let filled = 0;
  for (const block of blocks) {
    micros.set(block.micros, filled);
    filled += block.micros.length;
  }
  const bytesRead = blocks.reduce((total, block) => total + block.bytesRead, 0);
  return {
    p50Micros: percentile(micros, 0.5),
    p99Micros: percentile(micros, 0.99),
    maxMicros: percentile(micros, 1),
    readCount,
    meanReadSizeBytes: bytesRead / readCount,
  };
}
