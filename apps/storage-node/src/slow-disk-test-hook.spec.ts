// The slow-disk test hook: no delay until the file names one, blocks each append for the delay
// the file names (capped), and goes back to no delay when the file is removed or the hook is
// stopped. Off (no setting), the service starts no hook at all: the append paths get none.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '@spool/common';
import {
  slowDiskDelayMsMax,
  startSlowDiskTestHook,
  type SlowDiskTestHook,
} from './slow-disk-test-hook';

const logger = createLogger({ service: 'slow-disk-test', level: 'silent' });
const directory = mkdtempSync(path.join(tmpdir(), 'slow-disk-hook-'));
const file = path.join(directory, 'delay');
let hook: SlowDiskTestHook | undefined;

afterEach(() => {
  hook?.stop();
  hook = undefined;
  rmSync(file, { force: true });
});

function blockedMs(): number {
  const startedAt = performance.now();
  hook!.beforeLogAppend();
  return performance.now() - startedAt;
}

/** The blocked time of an append once `predicate` holds for it (vi.waitFor, within 5 s). */
function untilBlockedMs(predicate: (ms: number) => boolean): Promise<number> {
  return vi.waitFor(
    () => {
      const ms = blockedMs();
      expect(predicate(ms), `an append blocked ${ms} ms`).toBe(true);
      return ms;
    },
    { timeout: 5_000, interval: 50 },
  );
}

/** Two reads of the file after now: whatever the file says is in force by then. */
async function afterTwoPolls(): Promise<void> {
  const target = hook!.polls + 2;
  await vi.waitFor(() => expect(hook!.polls).toBeGreaterThanOrEqual(target), {
    timeout: 5_000,
    interval: 20,
  });
}

describe('slow-disk test hook', () => {
  it('delays nothing while the file is absent', async () => {
    hook = startSlowDiskTestHook(file, logger);
    await afterTwoPolls();
    expect(blockedMs()).toBeLessThan(20);
  });

  it('blocks each append for the delay in the file, and stops when the file goes', async () => {
    writeFileSync(file, '60');
    hook = startSlowDiskTestHook(file, logger);
    expect(await untilBlockedMs((ms) => ms >= 55)).toBeGreaterThanOrEqual(55);
    rmSync(file);
    expect(await untilBlockedMs((ms) => ms < 20)).toBeLessThan(20);
  });

  it(`caps the delay at ${slowDiskDelayMsMax} ms and ignores what is not a positive integer`, async () => {
    writeFileSync(file, 'slow');
    hook = startSlowDiskTestHook(file, logger);
    await afterTwoPolls();
    expect(blockedMs()).toBeLessThan(20);
    writeFileSync(file, String(slowDiskDelayMsMax * 10));
    const ms = await untilBlockedMs((blocked) => blocked >= slowDiskDelayMsMax - 5);
    expect(ms).toBeGreaterThanOrEqual(slowDiskDelayMsMax - 5);
    expect(ms).toBeLessThan(slowDiskDelayMsMax * 2);
    hook.stop();
    expect(blockedMs()).toBeLessThan(20);
  }, 20_000);
});
