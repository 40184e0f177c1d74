// Proves the bench throttle's clock: the e2e latency of a record counts from when the fixed rate
// made it due, so a producer loop that falls behind shows its lag (no coordinated omission), and
// the clock starts at the first admitted record, not when the throttle was made.
import { describe, expect, it } from 'vitest';
import { Throttle } from './bench-produce';

function busyWaitMs(durationMs: number): void {
  const untilMs = performance.now() + durationMs;
  while (performance.now() < untilMs) {
    // Spin: a timer would let the clock be judged by the event loop's own lateness.
  }
}

describe('Throttle.dueAtMs', () => {
  it('is now without a rate', () => {
    const throttle = new Throttle(undefined);
    const beforeMs = performance.now();
    const dueMs = throttle.dueAtMs(1_000_000);
    expect(dueMs).toBeGreaterThanOrEqual(beforeMs);
    expect(dueMs).toBeLessThanOrEqual(performance.now());
  });

  it('counts from the first admitted record, not from construction', async () => {
    const throttle = new Throttle(1_000);
    busyWaitMs(30);
    const admittedAtMs = performance.now();
    await throttle.admit(0);
    expect(throttle.dueAtMs(0)).toBeGreaterThanOrEqual(admittedAtMs);
  });

  it('keeps the due time of a record the loop reaches late, so its lag is measured', async () => {
    const throttle = new Throttle(1_000);
    await throttle.admit(0);
    const startMs = throttle.dueAtMs(0);
    busyWaitMs(60);
    // Record 10 was due 10 ms after the start at 1,000 records/s; the loop gets to it at 60 ms.
    const lagMs = performance.now() - throttle.dueAtMs(10);
    expect(throttle.dueAtMs(10)).toBeCloseTo(startMs + 10, 6);
    expect(lagMs).toBeGreaterThanOrEqual(49);
  });

  it('is never later than now for a record not yet due', async () => {
    const throttle = new Throttle(1_000);
    await throttle.admit(0);
    const dueMs = throttle.dueAtMs(100_000);
    expect(dueMs).toBeLessThanOrEqual(performance.now());
  });
});
