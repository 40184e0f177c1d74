import { LatencyHistogram, type LatencySummary } from './latency-histogram';
import { formatTable, toJsonLine } from './output';

/**
 * What every `spool bench` mode reports: a progress line on stderr once a second while it runs
 * (Kafka's perf tools print the same window figures), then a table for people on stdout, or with
 * --json one last line of JSON for scripts (bench/src/scenarios.ts reads it).
 */
export const progressIntervalMs = 1_000;
const bytesPerMegabyte = 1024 * 1024;

export interface BenchResult extends LatencySummary {
  readonly mode: 'produce' | 'consume' | 'e2e' | 'seek';
  readonly records: number;
  readonly bytes: number;
  readonly elapsedMs: number;
  /**
   * When the measured interval began and ended, in milliseconds since the epoch: a benchmark
   * that samples the servers' CPU meanwhile charges them this interval only, not the command's
   * start and connection (bench/src/scenarios.ts).
   */
  readonly startedAtEpochMs: number;
  readonly endedAtEpochMs: number;
  readonly recordsPerSec: number;
  readonly mbPerSec: number;
  /** What the latency figures measure, in words, since each mode measures something else. */
  readonly latency: string;
  readonly settings: Readonly<Record<string, string | number | boolean>>;
  /** e2e only: the publish latency (send to acknowledgement, per send) beside the e2e one. */
  readonly publishP50Ms?: number;
  readonly publishP99Ms?: number;
  readonly publishMaxMs?: number;
}

/** Counts shared by the workers of one run, read by the progress line and the result. */
export class BenchTally {
  latency = new LatencyHistogram();
  records = 0;
  bytes = 0;
  startedAtMs = performance.now();
  private windowStartMs = this.startedAtMs;
  private windowRecords = 0;
  private windowBytes = 0;
  private windowLatency = new LatencyHistogram();

  /** `count` records of `bytes` in total, each of which took `latencyMs` (if measured). */
  add(count: number, bytes: number, latencyMs?: number): void {
    this.records += count;
    this.bytes += bytes;
    this.windowRecords += count;
    this.windowBytes += bytes;
    if (latencyMs !== undefined) {
      this.latency.recordMs(latencyMs, count);
      this.windowLatency.recordMs(latencyMs, count);
    }
  }

  /** Starts the figures again from now: what came before was a warm-up. */
  restart(): void {
    this.latency = new LatencyHistogram();
    this.records = 0;
    this.bytes = 0;
    this.startedAtMs = performance.now();
  }

  /** The figures since the previous call, as one progress line. */
  progressLine(): string {
    const nowMs = performance.now();
    const seconds = Math.max(nowMs - this.windowStartMs, 1) / 1000;
    const window = this.windowLatency.summary();
    const line =
      `${this.records} records, ${Math.round(this.windowRecords / seconds)} records/s ` +
      `(${(this.windowBytes / bytesPerMegabyte / seconds).toFixed(2)} MB/s)` +
      (window.count === 0
        ? ''
        : `, ${window.avgMs.toFixed(1)} ms avg latency, ${window.p99Ms.toFixed(1)} ms p99, ` +
          `${window.maxMs.toFixed(1)} ms max`);
    this.windowStartMs = nowMs;
    this.windowRecords = 0;
    this.windowBytes = 0;
    this.windowLatency = new LatencyHistogram();
    return line;
  }

  result(
    mode: BenchResult['mode'],
    latency: string,
    settings: BenchResult['settings'],
    endedAtMs = performance.now(),
  ): BenchResult {
    const elapsedMs = Math.max(endedAtMs - this.startedAtMs, 1);
    const seconds = elapsedMs / 1000;
    return {
      mode,
      records: this.records,
      bytes: this.bytes,
      elapsedMs: round(elapsedMs, 1),
      startedAtEpochMs: Math.round(performance.timeOrigin + this.startedAtMs),
      endedAtEpochMs: Math.round(performance.timeOrigin + this.startedAtMs + elapsedMs),
      recordsPerSec: Math.round(this.records / seconds),
      mbPerSec: round(this.bytes / bytesPerMegabyte / seconds, 2),
      ...roundSummary(this.latency.summary()),
      latency,
      settings,
    };
  }
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

function roundSummary(summary: LatencySummary): LatencySummary {
  return {
    count: summary.count,
    avgMs: round(summary.avgMs, 3),
    p50Ms: round(summary.p50Ms, 3),
    p95Ms: round(summary.p95Ms, 3),
    p99Ms: round(summary.p99Ms, 3),
    p999Ms: round(summary.p999Ms, 3),
    maxMs: round(summary.maxMs, 3),
  };
}

/** Prints the progress line every second until the returned function is called. */
export function startProgress(tally: BenchTally, stderr: NodeJS.WritableStream): () => void {
  const timer = setInterval(() => stderr.write(`${tally.progressLine()}\n`), progressIntervalMs);
  return () => clearInterval(timer);
}

export function formatBenchResult(result: BenchResult, json: boolean): string {
  if (json) return `${toJsonLine(result)}\n`;
  const rows: [string, string | number][] = [
    ['records', result.records],
    ['bytes', result.bytes],
    ['elapsed', `${(result.elapsedMs / 1000).toFixed(2)} s`],
    ['records/s', result.recordsPerSec],
    ['MB/s', result.mbPerSec.toFixed(2)],
    ['latency', result.latency],
    ['avg', `${result.avgMs.toFixed(2)} ms`],
    ['p50', `${result.p50Ms.toFixed(2)} ms`],
    ['p95', `${result.p95Ms.toFixed(2)} ms`],
    ['p99', `${result.p99Ms.toFixed(2)} ms`],
    ['p99.9', `${result.p999Ms.toFixed(2)} ms`],
    ['max', `${result.maxMs.toFixed(2)} ms`],
  ];
  if (result.publishP99Ms !== undefined) {
    rows.push([
      'publish p50 / p99 / max',
      `${result.publishP50Ms!.toFixed(2)} / ${result.publishP99Ms.toFixed(2)} / ` +
        `${result.publishMaxMs!.toFixed(2)} ms`,
    ]);
  }
  return formatTable([`bench ${result.mode}`, ''], rows);
}
