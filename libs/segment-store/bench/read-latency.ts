// Measurement 2: the latency of a read by offset, on a small and on a large log. A read returns
// slices (file, position, size) and copies no bytes, so what is timed is finding the segment,
// the offset-index lookup and the batch-header reads that verify and bound the range: the cost
// Kafka keeps independent of the log's size, which the growth ratio checks.
//
// Reads go to uniformly random offsets (a seeded generator, the same every run), each followed
// by release() inside the timed span. Both logs are warmed up first, then measured twice:
//
//   1. Single pass: short alternating blocks, all pooled into one p99 per log. A disturbance of
//      the machine (another process, writeback, the host's page cache) lands on both logs alike,
//      but one p99 of a few hundred slowest reads still swings with it from run to run.
//   2. Rounds: readRounds rounds, each with readCountPerLog / readRounds reads of every kind, the
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
  /** Measurement 2, rounds: the same four kinds, a p99 per round. */
  readonly rounds: {
    readonly small: RoundsLatency;
    readonly large: RoundsLatency;
    readonly floorSmall: RoundsLatency;
    readonly floorLarge: RoundsLatency;
  };
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
  try {
    const logs = [small, large];
    const files = [smallFiles, largeFiles];
    const sampleAll = (count: number): Sampled[] => [
      ...logs.map((log) => sampleReads(log, randomOffsets(log, count, random))),
      ...files.map((held) => sampleFloor(held, count, random)),
    ];
    sampleAll(warmupReadsPerLog);
    const blocksByKind: Sampled[][] = [[], [], [], []];
    for (let block = 0; block < blockCount; block++) {
      sampleAll(readsInBlock).forEach((sampled, kind) => blocksByKind[kind]!.push(sampled));
    }
    const [smallLog, largeLog, floorSmall, floorLarge] = blocksByKind.map(summarize);
    const rounds = measureRounds(logs, files, Math.ceil(readCountPerLog / readRounds), random);
    return {
      small: smallLog!,
      large: largeLog!,
      floorSmall: floorSmall!,
      floorLarge: floorLarge!,
      rounds,
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
  readsPerRound: number,
  random: () => number,
): ReadLatencyResult['rounds'] {
  const samplers: (() => Sampled)[] = [
    ...logs.map((log) => () => sampleReads(log, randomOffsets(log, readsPerRound, random))),
    ...files.map((held) => () => sampleFloor(held, readsPerRound, random)),
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

function randomOffsets(log: Log, count: number, random: () => number): bigint[] {
  const start = Number(log.logStartOffset);
  const span = Number(log.logEndOffset) - start;
  assert(span > 0, 'the log to read is empty');
  return Array.from({ length: count }, () => BigInt(start + Math.floor(random() * span)));
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

function sampleFloor(files: SegmentFiles, count: number, random: () => number): Sampled {
  const micros = sampleFloorReads(files, count, readMaxBytes, random);
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
