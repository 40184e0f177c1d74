// Wall time and CPU time of a piece of work, and the arithmetic every measurement shares.
// CPU time is process.cpuUsage (user + system) of this process, all its threads included (the
// libuv pool that runs fs.read and sendfile), and no other process.
import { SegmentStoreBenchError } from './bench-error';

/** The table and the JSON count MB and GB in powers of ten, as disks and networks do. */
export const bytesPerMegabyte = 1e6;
export const bytesPerGigabyte = 1e9;

export interface Measurement {
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
}

export function measureSync(work: () => void): Measurement {
  const cpuBefore = process.cpuUsage();
  const wallBefore = process.hrtime.bigint();
  work();
  return measurementSince(wallBefore, cpuBefore);
}

export async function measureAsync(work: () => Promise<void>): Promise<Measurement> {
  const cpuBefore = process.cpuUsage();
  const wallBefore = process.hrtime.bigint();
  await work();
  return measurementSince(wallBefore, cpuBefore);
}

function measurementSince(wallBefore: bigint, cpuBefore: NodeJS.CpuUsage): Measurement {
  const wallSeconds = Number(process.hrtime.bigint() - wallBefore) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallSeconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/** The run with the shortest wall time: the one least disturbed by the rest of the machine. */
export function fastestOf(measurements: readonly Measurement[]): Measurement {
  if (measurements.length === 0) throw new SegmentStoreBenchError('no measurements to compare');
  return measurements.reduce((best, next) => (next.wallSeconds < best.wallSeconds ? next : best));
}

export function sumOf(measurements: readonly Measurement[]): Measurement {
  return {
    wallSeconds: measurements.reduce((total, next) => total + next.wallSeconds, 0),
    cpuSeconds: measurements.reduce((total, next) => total + next.cpuSeconds, 0),
  };
}

export function megabytesPerSecond(sizeBytes: number, seconds: number): number {
  return sizeBytes / bytesPerMegabyte / seconds;
}

export function cpuSecondsPerGigabyte(measurement: Measurement, sizeBytes: number): number {
  return measurement.cpuSeconds / (sizeBytes / bytesPerGigabyte);
}

/** Nearest-rank percentile (0 < fraction ≤ 1) of samples; sorts a copy. */
export function percentile(samples: Float64Array, fraction: number): number {
  if (samples.length === 0) throw new SegmentStoreBenchError('percentile of no samples');
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.ceil(fraction * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/**
 * The median of values (the mean of the middle two for an even count); sorts a copy. Of a few
 * rounds' figures it ignores the round a disturbance of the machine hit, as a best-of would,
 * without picking the round that luck made fastest.
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new SegmentStoreBenchError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A small seeded generator (mulberry32), so every run reads the same offsets. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}
