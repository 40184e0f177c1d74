/**
 * How long `spool dev` waits before restarting a process that exited: Kubernetes' crash-loop
 * back-off at a laptop's scale. The first restart comes quickly, so a killed storage node is
 * back within a second; a process that keeps dying waits twice as long each time, up to a cap,
 * so a broken one does not spin a core; a process that ran stably long enough starts over.
 */
export interface RestartBackoffSettings {
  /** initialDelayMs: before the first restart after a stable run. */
  readonly initialDelayMs: number;
  /** maxDelayMs: the cap of the doubling. */
  readonly maxDelayMs: number;
  /** stableRunMs: a run at least this long resets the doubling. */
  readonly stableRunMs: number;
}

export const devRestartBackoff: RestartBackoffSettings = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  stableRunMs: 30_000,
};

export class RestartBackoff {
  /** Exits since the last stable run, each one doubling the next delay. */
  private quickExits = 0;

  constructor(private readonly settings: RestartBackoffSettings = devRestartBackoff) {}

  /** The delay before the next start of a process that just exited after running `ranMs`. */
  delayAfterExitMs(ranMs: number): number {
    if (ranMs >= this.settings.stableRunMs) this.quickExits = 0;
    const delayMs = Math.min(
      this.settings.maxDelayMs,
      this.settings.initialDelayMs * 2 ** Math.min(this.quickExits, 30),
    );
    this.quickExits += 1;
    return delayMs;
  }
}
