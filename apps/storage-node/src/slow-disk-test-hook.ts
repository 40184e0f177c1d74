import { readFile } from 'node:fs/promises';
import type { Logger } from '@spool/common';

/**
 * TEST HOOK, off by default: a slow disk for the fault suite (test/faults) and nothing else.
 *
 * Why it exists: Kafka has no such hook; its fault tests slow a disk from outside the broker
 * (dm-delay, a FUSE mount, cgroup I/O limits), which all need root. The fault suite runs real
 * processes on one unprivileged machine, so the storage node delays its own appends instead.
 * The segment store writes synchronously, so a slow disk stalls the whole event loop, and this
 * hook does the same: it blocks the thread, and heartbeats, fetches and appends all wait.
 *
 * How: when the setting `testSlowDiskFile` names a file, the node starts the hook, which reads
 * the file every `pollIntervalMs`; a positive integer in it is a delay in ms that every log
 * append (a leader's and a follower's) then blocks for before it writes. An absent or empty file
 * means no delay.
 *
 * Its cost when off is nil: without the setting nothing is started, and the append paths
 * (storage-rpc.ts, replica-fetcher.ts) are given no `beforeLogAppend` function, so each append
 * pays one test of an undefined option: no call, no timer, no file read, no shared state.
 */
const pollIntervalMs = 250;
/** The longest delay the hook applies to one append, whatever the file says. */
export const slowDiskDelayMsMax = 2_000;

export interface SlowDiskTestHook {
  /** Blocks for the current delay; returns at once while the delay is 0. */
  readonly beforeLogAppend: () => void;
  /** Stops polling the file; appends are no longer delayed. */
  stop(): void;
  /** Reads of the file finished so far: a delay read by then is in force. */
  readonly polls: number;
}

/** Starts polling the file; its delay applies to every `beforeLogAppend()` until `stop()`. */
export function startSlowDiskTestHook(file: string, logger: Logger): SlowDiskTestHook {
  let stopped = false;
  let delayMs = 0;
  let polls = 0;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
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
    if (stopped) return;
    if (next !== delayMs) {
      logger.warn({ delayMs: next, file }, 'slow-disk test hook: append delay changed');
      delayMs = next;
    }
    polls++;
  };
  const timer = setInterval(() => void poll(), pollIntervalMs);
  timer.unref();
  void poll();
  return {
    beforeLogAppend: () => {
      if (delayMs > 0) Atomics.wait(sleeper, 0, 0, delayMs);
    },
    stop: () => {
      stopped = true;
      clearInterval(timer);
      delayMs = 0;
    },
    get polls() {
      return polls;
    },
  };
}
