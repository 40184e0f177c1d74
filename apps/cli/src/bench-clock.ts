/**
 * One clock for the threads of a benchmark. `performance.now()` counts from each thread's own
 * start, so a time read in one worker thread means nothing in another. `process.hrtime` reads
 * CLOCK_MONOTONIC, which all threads share, but allocates on every call. So each thread measures,
 * once, how far its `performance.now()` lies from the monotonic clock, and a BenchClock built
 * with the producing thread's offset reads `performance.now()` shifted onto the producing
 * thread's scale: a due time written by one thread and a receive time read by another subtract
 * to a latency, to within a microsecond.
 */
export class BenchClock {
  /** This thread's offset: monotonic clock minus performance.now(), in ms. */
  static offsetMs(): number {
    // Two back-to-back reads; the pair with the shortest gap bounds the error best.
    let best = Number.POSITIVE_INFINITY;
    let offsetMs = 0;
    for (let attempt = 0; attempt < 5; attempt++) {
      const beforeMs = performance.now();
      const monotonicMs = Number(process.hrtime.bigint()) / 1e6;
      const afterMs = performance.now();
      if (afterMs - beforeMs < best) {
        best = afterMs - beforeMs;
        offsetMs = monotonicMs - (beforeMs + afterMs) / 2;
      }
    }
    return offsetMs;
  }

  private readonly shiftMs: number;

  /** A clock on the scale of the thread whose `offsetMs()` was `referenceOffsetMs`. */
  constructor(referenceOffsetMs: number) {
    this.shiftMs = BenchClock.offsetMs() - referenceOffsetMs;
  }

  nowMs(): number {
    return performance.now() + this.shiftMs;
  }
}
