import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { ipPath, type NetworkMember } from './fault-network';

/**
 * One cluster member's process, run inside the member's network namespace
 * (`ip netns exec <ns> <command>`; ip execs the command, so the child's pid is the service's and
 * signals reach it directly). It can be killed, paused, resumed and started again with the same
 * command line (same IP, ports and data). Its output is appended to `<logDirectory>/<name>.log`
 * across restarts, for the post-mortem of a failed run. Every wait is bounded.
 */
export type MemberRole = 'etcd' | 'controller' | 'storage-node' | 'coordinator' | 'gateway';

export interface MemberProcessOptions {
  readonly role: MemberRole;
  readonly member: NetworkMember;
  readonly command: string;
  readonly args: readonly string[];
  readonly logDirectory: string;
  /** Resolves once the started process is ready to serve; throws while it is not. */
  readonly isReady: () => Promise<boolean>;
  readonly startTimeoutMs: number;
}

const readyPollIntervalMs = 100;
const exitTimeoutMs = 10_000;

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

export class MemberProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private paused = false;
  private readonly log: WriteStream;
  /** Starts of this member, the first included. */
  starts = 0;
  /** Exits nobody asked for (not our SIGKILL or SIGTERM): a crash, with its exit status. */
  readonly unexpectedExits: string[] = [];
  private stopRequested = false;

  constructor(readonly options: MemberProcessOptions) {
    this.log = createWriteStream(path.join(options.logDirectory, `${options.member.name}.log`), {
      flags: 'a',
    });
  }

  get name(): string {
    return this.options.member.name;
  }

  get role(): MemberRole {
    return this.options.role;
  }

  get ip(): string {
    return this.options.member.ip;
  }

  get isRunning(): boolean {
    return this.child !== undefined;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Spawns the process and waits until it reports ready. */
  async start(): Promise<void> {
    if (this.child !== undefined) return;
    this.starts++;
    const child = spawn(
      ipPath,
      ['netns', 'exec', this.options.member.namespace, this.options.command, ...this.options.args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    this.log.write(`---- start ${this.starts} at ${new Date().toISOString()} pid ${child.pid}\n`);
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      this.log.write(`${line}\n`);
    });
    readline.createInterface({ input: child.stderr! }).on('line', (line) => {
      this.log.write(`[stderr] ${line}\n`);
    });
    this.exited = new Promise<void>((resolve) => {
      child.once('error', () => resolve());
      child.once('exit', (code, signal) => {
        this.log.write(`---- exited ${signal ?? code} at ${new Date().toISOString()}\n`);
        if (!this.stopRequested) {
          this.unexpectedExits.push(`${this.name} exited with ${signal ?? code}`);
        }
        resolve();
      });
    }).then(() => {
      running.delete(child);
      if (this.child === child) {
        this.child = undefined;
        this.paused = false;
      }
    });
    this.child = child;
    this.paused = false;
    this.stopRequested = false;
    const deadline = Date.now() + this.options.startTimeoutMs;
    for (;;) {
      if (this.child !== child) throw new Error(`${this.name} exited while starting`);
      if (await this.options.isReady().catch(() => false)) return;
      if (Date.now() > deadline) {
        throw new Error(`${this.name} was not ready within ${this.options.startTimeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, readyPollIntervalMs));
    }
  }

  /** SIGKILL (after SIGCONT, so a paused process dies too); resolves once it has exited. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.stopRequested = true;
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await this.waitForExit();
  }

  /** SIGTERM, then SIGKILL if it has not exited within the bound. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.stopRequested = true;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), exitTimeoutMs);
    await this.waitForExit();
    clearTimeout(timer);
  }

  pause(): void {
    if (this.child === undefined) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (this.child === undefined) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  private async waitForExit(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${this.name} did not exit within ${exitTimeoutMs} ms`)),
        exitTimeoutMs * 2,
      );
    });
    try {
      await Promise.race([this.exited, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  closeLog(): void {
    this.log.end();
  }
}
