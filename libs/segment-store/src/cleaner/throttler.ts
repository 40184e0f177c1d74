/**
 * Kafka's `Throttler` for log.cleaner.io.max.bytes.per.second: the cleaner reports the bytes it
 * read and wrote, and waits whenever it is ahead of the rate, measured over windows of
 * `checkIntervalMs`, so cleaning never takes more of the disk than the operator allowed.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** How often the rate is checked; Kafka's default for the cleaner's throttler. */
const checkIntervalMs = 100;

export class Throttler {
  private windowStartMs: number;
  private windowBytes = 0;
  /** Milliseconds spent waiting, for the cleaner's statistics. */
  throttledMs = 0;

  constructor(
    private readonly bytesPerSecondMax: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.windowStartMs = clock();
  }

  /** Counts `bytes` of I/O, and waits as long as the rate requires. */
  async maybeThrottle(bytes: number): Promise<void> {
    if (!Number.isFinite(this.bytesPerSecondMax)) return;
    this.windowBytes += bytes;
    const elapsedMs = this.clock() - this.windowStartMs;
    if (elapsedMs < checkIntervalMs) return;
    const targetMs = (this.windowBytes * 1000) / this.bytesPerSecondMax;
    if (targetMs > elapsedMs) {
      const waitMs = Math.round(targetMs - elapsedMs);
      this.throttledMs += waitMs;
      await sleep(waitMs);
    }
    this.windowStartMs = this.clock();
    this.windowBytes = 0;
  }
}
