import { spawn, type ChildProcess } from 'node:child_process';
import * as readline from 'node:readline';
import { assert } from '@spool/common';
import type { ClusterFileEntry, ProcessPlan, ServicePorts } from './dev-cluster-layout';
import type { RestartPolicy } from './dev-options';
import { RestartBackoff } from './dev-restart-backoff';
import { orphanStopDelayEnvironmentVariable } from './dev-orphan-guard';

/**
 * One process of `spool dev` and its whole life, as a StatefulSet's pod: started in a process
 * group of its own, its log lines streamed with its name, restarted after a back-off when it
 * exits on its own (with the same identity, data and ports), and stopped on request: SIGTERM to
 * its group, SIGKILL if it has not exited in time.
 *
 * States (one guarded transition each; every change of a running cluster is logged):
 *   starting   --'started' log record-->   running
 *   starting   --exit, never started-->    down      (the first start failed: the caller stops)
 *   starting|running --exit-->             restarting (back-off timer) | down (restart policy)
 *   restarting --timer-->                  starting
 *   any        --stop()-->                 stopping --exit--> stopped
 */
export type ProcessState = ClusterFileEntry['state'];
const everyState: readonly ProcessState[] = [
  'starting',
  'running',
  'restarting',
  'down',
  'stopping',
  'stopped',
];

export interface SupervisedProcessSettings {
  readonly plan: ProcessPlan;
  readonly controllerAddress: () => string;
  /** The node binary's flags and the entry point, in front of the service's arguments. */
  readonly commandPrefix: readonly string[];
  readonly restartPolicy: RestartPolicy;
  /** How long a process gets to exit after SIGTERM before its group is killed. */
  readonly stopTimeoutMs: number;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Called on every change of state, pid or ports: cluster.json follows. */
  readonly onChange: () => void;
}

export class SupervisedProcess {
  private stateValue: ProcessState = 'starting';
  private child: ChildProcess | undefined;
  private portsValue: ServicePorts | undefined;
  private startedAtMs = 0;
  private restartsValue = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly backoff = new RestartBackoff();
  /** Settled by the first start: the caller waits for the whole cluster on these. */
  private firstStart:
    { resolve: () => void; reject: (error: Error) => void; settled: boolean } | undefined;
  private readonly exitWaiters: Array<() => void> = [];

  constructor(private readonly settings: SupervisedProcessSettings) {}

  get name(): string {
    return this.settings.plan.name;
  }

  get role(): ProcessPlan['role'] {
    return this.settings.plan.role;
  }

  get state(): ProcessState {
    return this.stateValue;
  }

  get ports(): ServicePorts | undefined {
    return this.portsValue;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  describe(): ClusterFileEntry {
    return {
      role: this.settings.plan.role,
      id: this.settings.plan.id,
      pid: this.pid,
      ports: this.portsValue,
      state: this.stateValue,
      restarts: this.restartsValue,
    };
  }

  /** Starts the process; resolves once it reports its ports, rejects if it exits before. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.firstStart = { resolve, reject, settled: false };
      this.spawnChild();
    });
  }

  /** SIGTERM to the group, SIGKILL after the stop timeout; resolves once it has exited. */
  async stop(): Promise<void> {
    clearTimeout(this.restartTimer);
    if (!this.isAlive()) {
      this.transitionTo(everyState, 'stopped');
      return;
    }
    this.transitionTo(['starting', 'running', 'stopping'], 'stopping');
    const exited = this.waitForExit();
    const killTimer = setTimeout(() => {
      this.settings.stderr.write(
        `spool dev: ${this.name} did not stop in ${this.settings.stopTimeoutMs / 1000} s; ` +
          'killing it (SIGKILL)\n',
      );
      this.signalGroup('SIGKILL');
    }, this.settings.stopTimeoutMs);
    this.signalGroup('SIGTERM');
    await exited;
    clearTimeout(killTimer);
  }

  /** SIGKILL to the group at once (the second Ctrl-C); resolves once it has exited. */
  async kill(): Promise<void> {
    clearTimeout(this.restartTimer);
    if (!this.isAlive()) {
      this.transitionTo(everyState, 'stopped');
      return;
    }
    this.transitionTo(everyState, 'stopping');
    const exited = this.waitForExit();
    this.signalGroup('SIGKILL');
    await exited;
  }

  private isAlive(): boolean {
    return (
      this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
    );
  }

  private waitForExit(): Promise<void> {
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      // The child leads its own process group: the signal reaches anything it started too.
      process.kill(-pid, signal);
    } catch {
      // Gone already (ESRCH): its exit is on its way.
    }
  }

  private spawnChild(): void {
    const { plan, commandPrefix } = this.settings;
    const ports = this.portsValue ?? plan.requestedPorts;
    const child = spawn(
      process.execPath,
      [...commandPrefix, ...plan.serviceArguments(this.settings.controllerAddress, ports)],
      {
        // stdin: the pipe the orphan guard watches (dev-orphan-guard.ts); nothing is written.
        stdio: ['pipe', 'pipe', 'pipe'],
        // A process group of its own: a terminal's Ctrl-C reaches `spool dev` alone.
        detached: true,
        env: {
          ...process.env,
          [orphanStopDelayEnvironmentVariable]: String(plan.orphanStopDelayMs),
        },
      },
    );
    this.child = child;
    this.startedAtMs = Date.now();
    child.stdin!.on('error', () => {});
    let dataPort: number | undefined;
    let kafkaPort: number | undefined;
    const prefix = `[${this.name}] `;
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      this.settings.stdout.write(`${prefix}${line}\n`);
      if (this.stateValue !== 'starting' || child !== this.child) return;
      const record = parseLogRecord(line);
      if (record?.dataPort !== undefined) dataPort = record.dataPort;
      if (record?.kafkaPort !== undefined) kafkaPort = record.kafkaPort;
      if (
        record?.event === 'started' &&
        record.grpcPort !== undefined &&
        record.metricsPort !== undefined
      ) {
        this.onStarted({
          grpc: record.grpcPort,
          metrics: record.metricsPort,
          ...(dataPort === undefined ? {} : { data: dataPort }),
          ...(kafkaPort === undefined ? {} : { kafka: kafkaPort }),
        });
      }
    });
    readline.createInterface({ input: child.stderr! }).on('line', (line) => {
      this.settings.stderr.write(`${prefix}${line}\n`);
    });
    child.once('error', (error) => {
      this.settings.stderr.write(
        `spool dev: ${this.name} could not be started: ${error.message}\n`,
      );
    });
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
    this.settings.onChange();
  }

  private onStarted(ports: ServicePorts): void {
    const restarted = this.portsValue !== undefined;
    this.portsValue = ports;
    this.transitionTo(['starting'], 'running');
    if (restarted) {
      this.settings.stdout.write(
        `spool dev: ${this.name} restarted (pid ${this.pid}, restart ${this.restartsValue})\n`,
      );
    }
    if (this.firstStart !== undefined && !this.firstStart.settled) {
      this.firstStart.settled = true;
      this.firstStart.resolve();
    }
    this.settings.onChange();
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    child.stdin?.destroy();
    for (const resolve of this.exitWaiters.splice(0)) resolve();
    const how = signal ?? `code ${code}`;
    if (this.stateValue === 'stopping') {
      this.transitionTo(['stopping'], 'stopped');
      this.settings.onChange();
      return;
    }
    if (this.firstStart !== undefined && !this.firstStart.settled) {
      this.firstStart.settled = true;
      this.transitionTo(['starting'], 'down');
      this.firstStart.reject(new Error(`${this.name} exited during start-up (${how})`));
      this.settings.onChange();
      return;
    }
    const ranMs = Date.now() - this.startedAtMs;
    const restart =
      this.settings.restartPolicy === 'always' ||
      (this.settings.restartPolicy === 'on-failure' && code !== 0);
    if (!restart) {
      this.transitionTo(['starting', 'running'], 'down');
      this.settings.stderr.write(
        `spool dev: ${this.name} exited (${how}) after ${seconds(ranMs)}; left down ` +
          `(--restart ${this.settings.restartPolicy}); the rest keeps serving\n`,
      );
      this.settings.onChange();
      return;
    }
    const delayMs = this.backoff.delayAfterExitMs(ranMs);
    this.transitionTo(['starting', 'running'], 'restarting');
    this.settings.stderr.write(
      `spool dev: ${this.name} exited (${how}) after ${seconds(ranMs)}; restarting it in ` +
        `${seconds(delayMs)} with the same id, data and ports\n`,
    );
    this.settings.onChange();
    this.restartTimer = setTimeout(() => {
      this.restartsValue += 1;
      this.transitionTo(['restarting'], 'starting');
      this.spawnChild();
    }, delayMs);
  }

  private transitionTo(allowedFrom: readonly ProcessState[], next: ProcessState): void {
    assert(
      allowedFrom.includes(this.stateValue),
      `${this.name}: no transition from ${this.stateValue} to ${next}`,
    );
    this.stateValue = next;
  }
}

interface LogRecord {
  readonly event?: string;
  readonly grpcPort?: number;
  readonly metricsPort?: number;
  readonly dataPort?: number;
  readonly kafkaPort?: number;
}

/** A service's JSON log line, or undefined for anything else (printed as it came). */
function parseLogRecord(line: string): LogRecord | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as LogRecord;
  } catch {
    return undefined;
  }
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(1)} s`;
}
