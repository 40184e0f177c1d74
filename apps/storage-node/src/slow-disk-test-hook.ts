import { readFile } from 'node:fs/promises';
import type { Logger } from '@spool/common';

/**
 * TEST HOOK, off by default: a slow disk for the fault suite (test/faults). When the setting
 * `testSlowDiskFile` names a file, the node reads it every `pollIntervalMs`; a positive integer
 * in it is a delay in ms that every log append (a leader's append and a follower's) then blocks
 * for, synchronously, before it writes. The segment store writes synchronously, so a slow disk
 * stalls the whole event loop in the same way: heartbeats, fetches and appends all wait. An
 * absent or empty file means no delay. Nothing reads the file unless the setting is given.
 */
const pollIntervalMs = 250;
/** The longest delay the hook applies to one append, whatever the file says. */
export const slowDiskDelayMsMax = 2_000;

let delayMs = 0;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks for the current delay; a no-op while the hook is off or the delay is 0. */
export function beforeLogAppendTestHook(): void {
  if (delayMs > 0) Atomics.wait(sleeper, 0, 0, delayMs);
}

/** Starts polling the file; returns the function that stops it. */
export function startSlowDiskTestHook(file: string, logger: Logger): () => void {
  let stopped = false;
  const poll = async (): Promise<void> => {
    let next = 0;
    try {
      const text = (await readFile(file, 'utf8')).trim();
      const parsed = Number(text);
      if (text !== '' && Number.isSafeInteger(parsed) && parsed > 0) {
        next = Math.min(parsed, slowDiskDelayMsMax);
      }
    } catch {
      // No file: no delay.
    }
    if (next !== delayMs) {
      logger.warn({ delayMs: next, file }, 'slow-disk test hook: append delay changed');
      delayMs = next;
    }
  };
  const timer = setInterval(() => {
    if (!stopped) void poll();
  }, pollIntervalMs);
  timer.unref();
  void poll();
  return () => {
    stopped = true;
    clearInterval(timer);
    delayMs = 0;
  };
}
