/**
 * Loaded with `node --require` into every process `spool dev` starts, before the service: it
 * stops the service when `spool dev` is gone, however it went.
 *
 * Each child runs in its own process group (so a terminal's Ctrl-C reaches `spool dev` alone),
 * which also means nothing signals it when `spool dev` is killed with SIGKILL. Linux's
 * PR_SET_PDEATHSIG would, but Node.js does not expose it. What does work: the child's stdin is
 * a pipe whose only writer is `spool dev`, which never writes to it; when `spool dev` dies, for
 * any reason, the kernel closes the writer and the child reads end-of-file. The guard answers
 * with SIGTERM to itself, the service's ordinary graceful shutdown.
 *
 * The delay (SPOOL_DEV_ORPHAN_STOP_DELAY_MS) keeps the usual order when all of them are orphaned
 * at once: the controller waits a little, so storage nodes can still do their controlled shutdown
 * through it and the next start finds their ids free.
 *
 * Once orphaned, stdout and stderr have no reader either, and a write fails with EPIPE. The
 * logger (pino's sonic-boom) retries such a write forever when it flushes at exit, so the process
 * would hang instead of stopping. The logs have nowhere to go: from then on the guard drops
 * writes to fds 1 and 2 at the `fs` calls the logger makes, and the shutdown runs to its end.
 */
// The module object itself (not an import namespace's copy): the logger calls through it.
import fs from 'node:fs';
import { isMainThread } from 'node:worker_threads';

export const orphanStopDelayEnvironmentVariable = 'SPOOL_DEV_ORPHAN_STOP_DELAY_MS';

function installOrphanGuard(): void {
  const delayMs = Number(process.env[orphanStopDelayEnvironmentVariable] ?? '0');
  const stdin = process.stdin;
  let orphaned = false;
  const onOrphaned = (): void => {
    if (orphaned) return;
    orphaned = true;
    dropWritesToStandardOutputs();
    setTimeout(() => process.kill(process.pid, 'SIGTERM'), Number.isFinite(delayMs) ? delayMs : 0);
  };
  stdin.on('end', onOrphaned);
  stdin.on('close', onOrphaned);
  stdin.on('error', onOrphaned);
  // Read and drop anything written: nothing should be, but a full pipe must not block.
  stdin.on('data', () => {});
  // The guard must not keep a service alive that would otherwise exit.
  (stdin as { unref?: () => void }).unref?.();
}

/** fds 1 and 2 lead nowhere now: writes to them succeed without writing. */
function dropWritesToStandardOutputs(): void {
  const isStandardOutput = (fd: unknown): boolean => fd === 1 || fd === 2;
  const byteLength = (data: unknown, encoding: unknown): number =>
    typeof data === 'string'
      ? Buffer.byteLength(
          data,
          typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8',
        )
      : ArrayBuffer.isView(data)
        ? data.byteLength
        : 0;
  const writable = fs as unknown as Record<'writeSync' | 'write', (...args: unknown[]) => unknown>;
  const writeSync = writable.writeSync;
  const write = writable.write;
  writable.writeSync = (...args: unknown[]): unknown =>
    isStandardOutput(args[0]) ? byteLength(args[1], args[2]) : writeSync(...args);
  writable.write = (...args: unknown[]): unknown => {
    if (!isStandardOutput(args[0])) return write(...args);
    const callback = args[args.length - 1];
    const written = byteLength(args[1], args[2]);
    if (typeof callback === 'function') process.nextTick(() => callback(null, written, args[1]));
    return undefined;
  };
}

// Only in a process `spool dev` started (it sets the variable): importing this file anywhere
// else, a test or the bundle's type check, does nothing. Only on the main thread: a worker
// thread started with the process's flags would load it too, and a worker's stdin ends at once.
if (isMainThread && process.env[orphanStopDelayEnvironmentVariable] !== undefined) {
  installOrphanGuard();
}
