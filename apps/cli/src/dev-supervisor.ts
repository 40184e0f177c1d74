import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { assert } from '@spool/common';
import { serviceEntryPoint } from './commands';
import {
  clusterLayout,
  stopPhases,
  writeClusterFile,
  type ProcessPlan,
} from './dev-cluster-layout';
import type { DevOptions } from './dev-options';
import { SupervisedProcess } from './dev-supervised-process';
import { spoolNodeFlags } from './node-flags';

/**
 * The processes of `spool dev` as one cluster: started in order (the controller, then everyone
 * else, who is told where it is), supervised one by one (dev-supervised-process.ts), published
 * in cluster.json after every change, stopped in phases (gateway and coordinators, storage
 * nodes, controller), or killed all at once.
 */

/**
 * How long a process gets to exit after SIGTERM before it is killed: longer than a service's own
 * shutdown budget (its --shutdown-timeout-ms, 10 s by default, for the drain, and as much again
 * for the steps after it, such as a storage node closing its logs), so that a clean stop is never
 * cut short into a crash that the next start must recover from.
 */
const stopTimeoutMs = 30_000;

export class DevSupervisor {
  readonly processes: readonly SupervisedProcess[];
  readonly clusterFilePath: string;
  private publishing = false;

  constructor(
    private readonly options: DevOptions,
    private readonly output: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
  ) {
    mkdirSync(options.dataDirectory, { recursive: true });
    if (options.profileDirectory !== undefined) {
      mkdirSync(options.profileDirectory, { recursive: true });
    }
    this.clusterFilePath = path.join(options.dataDirectory, 'cluster.json');
    this.processes = clusterLayout(options).map(
      (plan) =>
        new SupervisedProcess({
          plan,
          controllerAddress: () => this.controllerAddress(),
          commandPrefix: this.commandPrefix(plan),
          restartPolicy: options.restartPolicy,
          stopTimeoutMs,
          stdout: output.stdout,
          stderr: output.stderr,
          onChange: () => this.publish(),
        }),
    );
  }

  get gatewayAddress(): string {
    return `127.0.0.1:${this.gatewayPort}`;
  }

  get gatewayPort(): number {
    const ports = this.processOf('gateway').ports;
    assert(ports !== undefined, 'the gateway started before anyone asks where it is');
    return ports.grpc;
  }

  /** Where Kafka clients bootstrap: the gateway's Kafka listener. */
  get kafkaBootstrapAddress(): string {
    return `localhost:${this.processOf('gateway').ports?.kafka}`;
  }

  /** The controller first: everyone else is given its address. Rejects if any start fails. */
  async startAll(): Promise<void> {
    this.publishing = true;
    const [controller, ...others] = this.processes;
    await controller!.start();
    await Promise.all(others.map((process) => process.start()));
    this.publish();
  }

  /** Stops in phases, each waiting for the one before; logs each phase. */
  async stopInOrder(): Promise<void> {
    for (const phase of stopPhases) {
      const stopping = this.processes.filter((process) => phase.roles.includes(process.role));
      const running = stopping.filter((process) =>
        ['starting', 'running', 'restarting'].includes(process.state),
      );
      if (running.length === 0) continue;
      this.output.stdout.write(
        `spool dev: stopping ${running.map((process) => process.name).join(', ')} (${phase.why})\n`,
      );
      await Promise.all(stopping.map((process) => process.stop()));
    }
  }

  /** SIGKILL to every process group at once. */
  async killAll(): Promise<void> {
    await Promise.all(this.processes.map((process) => process.kill()));
  }

  private processOf(role: ProcessPlan['role']): SupervisedProcess {
    const found = this.processes.find((process) => process.role === role);
    assert(found !== undefined, `the layout has a ${role}`);
    return found;
  }

  private controllerAddress(): string {
    const ports = this.processOf('controller').ports;
    assert(ports !== undefined, 'the controller started before anyone asks where it is');
    return `127.0.0.1:${ports.grpc}`;
  }

  /** Node's flags (spoolNodeFlags, profiling, the orphan guard), then the entry point. */
  private commandPrefix(plan: ProcessPlan): string[] {
    const { profileDirectory } = this.options;
    const profiled = profileDirectory !== undefined;
    return [
      ...spoolNodeFlags,
      // NODE_OPTIONS may not carry --cpu-prof, so it goes on the command line.
      ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profileDirectory}`] : []),
      '--require',
      path.join(__dirname, 'dev-orphan-guard.js'),
      serviceEntryPoint(plan.role),
    ];
  }

  /** cluster.json follows every change once the cluster is starting. */
  private publish(): void {
    if (!this.publishing) return;
    writeClusterFile(
      this.clusterFilePath,
      this.processes.map((process) => process.describe()),
    );
  }
}
