// Proves the bench clock's arithmetic: a clock built with this thread's own offset reads this
// thread's performance.now(), and one built with another thread's offset is shifted by exactly
// the difference, so a time read on either side subtracts to a latency.
import { describe, expect, it } from 'vitest';
import { BenchClock } from './bench-clock';

describe('BenchClock', () => {
  it("reads performance.now() when built with this thread's own offset", () => {
    const clock = new BenchClock(BenchClock.offsetMs());
    const beforeMs = performance.now();
    const readMs = clock.nowMs();
    const afterMs = performance.now();
    expect(readMs).toBeGreaterThanOrEqual(beforeMs - 0.05);
    expect(readMs).toBeLessThanOrEqual(afterMs + 0.05);
  });

  it("is shifted onto the other thread's scale by the difference of the offsets", () => {
    // A producing thread that started 250 ms earlier has an offset 250 ms smaller (its
    // performance.now() is 250 ms ahead): a time read here must come out 250 ms later on its
    // scale.
    const clock = new BenchClock(BenchClock.offsetMs() - 250);
    expect(clock.nowMs() - performance.now()).toBeCloseTo(250, 1);
  });

  it('measures the same offset twice to within a few microseconds', () => {
    expect(Math.abs(BenchClock.offsetMs() - BenchClock.offsetMs())).toBeLessThan(0.05);
  });
});
