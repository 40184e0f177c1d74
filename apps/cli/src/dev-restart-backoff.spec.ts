// Proves the restart back-off of `spool dev`: it starts at the initial delay, doubles with each
// quick exit up to the cap, and starts over after a run as long as the stable-run time.
import { describe, expect, it } from 'vitest';
import { RestartBackoff } from './dev-restart-backoff';

const settings = { initialDelayMs: 500, maxDelayMs: 4_000, stableRunMs: 30_000 };

describe('RestartBackoff', () => {
  it('doubles with each quick exit up to the cap', () => {
    const backoff = new RestartBackoff(settings);
    const delays = Array.from({ length: 6 }, () => backoff.delayAfterExitMs(100));
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000]);
  });

  it('starts over after a stable run, and only then', () => {
    const backoff = new RestartBackoff(settings);
    backoff.delayAfterExitMs(100);
    backoff.delayAfterExitMs(29_999);
    expect(backoff.delayAfterExitMs(29_999)).toBe(2_000);
    expect(backoff.delayAfterExitMs(30_000)).toBe(500);
    expect(backoff.delayAfterExitMs(10)).toBe(1_000);
  });

  it('stays at the cap however many exits came before', () => {
    const backoff = new RestartBackoff(settings);
    for (let exit = 0; exit < 100; exit++) backoff.delayAfterExitMs(0);
    expect(backoff.delayAfterExitMs(0)).toBe(4_000);
  });
});
