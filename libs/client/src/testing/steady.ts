import { expect } from 'vitest';

/** How often a steady value is looked at: often enough that a change fails the test at once. */
const steadyCheckIntervalMs = 10;

/**
 * Asserts that nothing happens for `forMs`: `probe()` keeps the value it has now, looked at every
 * 10 ms, and the test fails at the first change, naming `what` with the value before and after.
 * For a claim of absence ("no regrant while the application is blocked"), which no event can
 * end early; the window is the claim's bound, not a guess at how long something takes.
 */
export async function expectSteady<T>(probe: () => T, forMs: number, what: string): Promise<void> {
  const before = probe();
  const endMs = performance.now() + forMs;
  while (performance.now() < endMs) {
    await new Promise((resolve) => setTimeout(resolve, steadyCheckIntervalMs));
    expect(probe(), `${what} changed within ${forMs} ms`).toEqual(before);
  }
}
