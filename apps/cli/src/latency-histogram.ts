/**
 * A log-linear latency histogram in the manner of HdrHistogram, small enough to own: values are
 * microseconds; each power of two above 2048 µs is split into 1024 equal sub-buckets, and every
 * value below 2048 µs has its own bucket. A recorded value is therefore known to within 1/1024
 * of itself (three significant decimal digits, as HdrHistogram with 3 digits), whatever its size,
 * at a fixed cost of ~24,600 counters (192 KiB) for the whole range 0 µs to ~71 minutes.
 *
 * Percentiles are reported as the midpoint of the bucket that holds them; min, max and the mean
 * are kept exactly. Recording is O(1) with no allocation, so the benchmark's own cost stays flat.
 */

/** Values below this each have a bucket; above it, 1024 buckets per power of two. */
const linearBucketsCount = 2048;
const subBucketsPerPowerCount = 1024;
const subBucketBits = 10;
/** The largest value recorded, in microseconds (~71.6 minutes); larger ones are clamped. */
export const histogramMaxMicros = 0xffff_ffff;
const powersCount = 32 - (subBucketBits + 1);
const bucketsCount = linearBucketsCount + powersCount * subBucketsPerPowerCount;

function indexOf(valueMicros: number): number {
  if (valueMicros < linearBucketsCount) return valueMicros;
  // The position of the highest set bit: the value >> shift lies in [1024, 2048).
  const shift = 31 - Math.clz32(valueMicros) - subBucketBits;
  return (
    linearBucketsCount +
    (shift - 1) * subBucketsPerPowerCount +
    ((valueMicros >>> shift) - subBucketsPerPowerCount)
  );
}

/** The lowest value of a bucket and its width, both in microseconds. */
function bucketRange(index: number): { lowMicros: number; widthMicros: number } {
  if (index < linearBucketsCount) return { lowMicros: index, widthMicros: 1 };
  const above = index - linearBucketsCount;
  const shift = Math.floor(above / subBucketsPerPowerCount) + 1;
  const sub = (above % subBucketsPerPowerCount) + subBucketsPerPowerCount;
  return { lowMicros: sub * 2 ** shift, widthMicros: 2 ** shift };
}

export interface LatencySummary {
  readonly count: number;
  readonly avgMs: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

export class LatencyHistogram {
  private readonly counts = new Float64Array(bucketsCount);
  private totalCount = 0;
  private sumMicros = 0;
  private minMicros = Number.POSITIVE_INFINITY;
  private maxMicros = 0;

  get count(): number {
    return this.totalCount;
  }

  /** Records `count` occurrences of a latency given in milliseconds (fractions kept to 1 µs). */
  recordMs(valueMs: number, count = 1): void {
    const micros = Math.min(histogramMaxMicros, Math.max(0, Math.round(valueMs * 1000)));
    this.counts[indexOf(micros)]! += count;
    this.totalCount += count;
    this.sumMicros += micros * count;
    if (micros < this.minMicros) this.minMicros = micros;
    if (micros > this.maxMicros) this.maxMicros = micros;
  }

  /** Adds another histogram's counts into this one (several producers, one report). */
  add(other: LatencyHistogram): void {
    for (let index = 0; index < bucketsCount; index++) this.counts[index]! += other.counts[index]!;
    this.totalCount += other.totalCount;
    this.sumMicros += other.sumMicros;
    this.minMicros = Math.min(this.minMicros, other.minMicros);
    this.maxMicros = Math.max(this.maxMicros, other.maxMicros);
  }

  /** The value at a percentile (0-100] in milliseconds; 0 for an empty histogram. */
  percentileMs(percentile: number): number {
    if (this.totalCount === 0) return 0;
    if (percentile >= 100) return this.maxMicros / 1000;
    const rank = Math.max(1, Math.ceil((percentile / 100) * this.totalCount));
    let seen = 0;
    for (let index = 0; index < bucketsCount; index++) {
      seen += this.counts[index]!;
      if (seen >= rank) {
        const { lowMicros, widthMicros } = bucketRange(index);
        const midMicros = widthMicros === 1 ? lowMicros : lowMicros + widthMicros / 2;
        // The midpoint may lie past the exact extremes; they are known exactly.
        return Math.min(this.maxMicros, Math.max(this.minMicros, midMicros)) / 1000;
      }
    }
    return this.maxMicros / 1000;
  }

  summary(): LatencySummary {
    return {
      count: this.totalCount,
      avgMs: this.totalCount === 0 ? 0 : this.sumMicros / this.totalCount / 1000,
      p50Ms: this.percentileMs(50),
      p95Ms: this.percentileMs(95),
      p99Ms: this.percentileMs(99),
      p999Ms: this.percentileMs(99.9),
      maxMs: this.maxMicros / 1000,
    };
  }
}
