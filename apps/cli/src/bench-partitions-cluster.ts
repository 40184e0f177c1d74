import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { createGrpcClient, sleep } from '@spool/common';
import { ClusterMetadataCache, ControllerServiceClient } from '@spool/protocol';
import type { ClusterFileEntry } from './dev-cluster-layout';
import type { RestartPolicy } from './dev-options';
import { spoolNodeFlags } from './node-flags';

/**
 * The cluster `spool bench partitions` measures: a `spool dev` it starts as a child process, seen
 * the way an operator sees one (cluster.json for pids and ports, the services' log lines for a
 * storage node's start-up report), and the controller's metadata as any follower receives it
 * (a WatchMetadata stream into a ClusterMetadataCache), so "has a leader" and "in sync" mean what
 * the brokers and gateways are told.
 */

/** How often cluster.json and conditions on the processes are looked at. */
const processPollIntervalMs = 20;
/** A condition on the metadata is checked at most this often (a full scan of 20,000 partitions). */
const metadataCheckIntervalMs = 20;
/** How much of spool dev's output is kept for an error message. */
const outputKeptBytes = 65_536;
/** How long spool dev gets for its orderly stop before a second SIGINT kills everything. */
const devStopTimeoutMs = 120_000;

/** What a storage node logs once its local logs are open (LogDirectoryLoadReport). */
export interface StorageStartupReport {
  readonly cleanShutdown: boolean;
  readonly logsLoaded: number;
  readonly logsRecovered: number;
  readonly segmentsRecovered: number;
  readonly bytesTruncated: number;
  /** durationMs: the node's own time to open (and recover) every local log. */
  readonly durationMs: number;
}

export class BenchDevCluster {
  /** The last start-up report of each storage node, by broker id, and when it was read. */
  private readonly startupReports = new Map<
    number,
    { report: StorageStartupReport; atMs: number }
  >();
  private output = '';
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly clusterFilePath: string,
  ) {
    child.once('exit', () => (this.exited = true));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => this.onLine(line));
    child.stderr!.on('data', (chunk: Buffer) => this.keep(chunk.toString()));
  }

  /**
   * Starts `spool dev` on `dataDirectory` (a later start on the same folder resumes the cluster)
   * and resolves once every process runs; rejects with its output if it does not in time.
   */
  static async start(options: {
    readonly dataDirectory: string;
    readonly storageNodeCount: number;
    readonly restartPolicy: RestartPolicy;
    readonly timeoutMs: number;
  }): Promise<BenchDevCluster> {
    const child = spawn(
      process.execPath,
      [
        ...spoolNodeFlags,
        path.join(__dirname, 'main.js'),
        'dev',
        ...['--nodes', String(options.storageNodeCount)],
        ...['--data-dir', options.dataDirectory],
        ...['--gateway-port', '0', '--kafka-port', '0'],
        ...['--restart', options.restartPolicy],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const cluster = new BenchDevCluster(child, path.join(options.dataDirectory, 'cluster.json'));
    const expected = options.storageNodeCount + 3;
    try {
      await cluster.until(
        () => {
          const processes = cluster.processes();
          return (
            processes.length === expected && processes.every((entry) => entry.state === 'running')
          );
        },
        options.timeoutMs,
        'every process of spool dev running',
      );
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** spool dev's own pid: the supervisor, which reads every process's output. */
  get supervisorPid(): number {
    return this.child.pid!;
  }

  /** Every process as cluster.json shows it now; none before spool dev wrote the file. */
  processes(): ClusterFileEntry[] {
    if (!existsSync(this.clusterFilePath)) return [];
    const file = JSON.parse(readFileSync(this.clusterFilePath, 'utf8')) as {
      processes: ClusterFileEntry[];
    };
    return file.processes;
  }

  process(role: ClusterFileEntry['role'], id: number): ClusterFileEntry {
    const found = this.processes().find((entry) => entry.role === role && entry.id === id);
    if (found === undefined) throw new Error(`cluster.json lists no ${role} ${id}`);
    return found;
  }

  address(role: ClusterFileEntry['role']): string {
    const port = this.process(role, 0).ports?.grpc;
    if (port === undefined) throw new Error(`cluster.json has no gRPC port for the ${role}`);
    return `127.0.0.1:${port}`;
  }

  /** The storage node's last start-up report if it was logged after `sinceMs` (performance.now). */
  startupReport(brokerId: number, sinceMs = 0): StorageStartupReport | undefined {
    const entry = this.startupReports.get(brokerId);
    return entry !== undefined && entry.atMs >= sinceMs ? entry.report : undefined;
  }

  /**
   * Resolves once `condition` holds (checked every few milliseconds); rejects after `timeoutMs`
   * naming `what`, or at once if spool dev exits.
   */
  async until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadlineMs = performance.now() + timeoutMs;
    for (;;) {
      if (condition()) return;
      if (this.exited)
        throw new Error(`spool dev exited while waiting for ${what}:\n${this.output}`);
      if (performance.now() > deadlineMs) {
        throw new Error(
          `not ${what} after ${timeoutMs / 1000} s; spool dev's last output:\n${this.output}`,
        );
      }
      await sleep(processPollIntervalMs);
    }
  }

  /** Stops spool dev in order (SIGINT); a second SIGINT after devStopTimeoutMs kills it all. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGINT');
    const timer = setTimeout(() => this.child.kill('SIGINT'), devStopTimeoutMs);
    await exited;
    clearTimeout(timer);
  }

  private onLine(line: string): void {
    this.keep(`${line}\n`);
    const match = /^\[storage-node-(\d+)\] (\{.*)$/.exec(line);
    if (match === null) return;
    let record: Partial<StorageStartupReport>;
    try {
      record = JSON.parse(match[2]!) as Partial<StorageStartupReport>;
    } catch {
      return;
    }
    if (typeof record.logsLoaded !== 'number' || typeof record.cleanShutdown !== 'boolean') return;
    this.startupReports.set(Number(match[1]), {
      atMs: performance.now(),
      report: {
        cleanShutdown: record.cleanShutdown,
        logsLoaded: record.logsLoaded,
        logsRecovered: Number(record.logsRecovered),
        segmentsRecovered: Number(record.segmentsRecovered),
        bytesTruncated: Number(record.bytesTruncated),
        durationMs: Number(record.durationMs),
      },
    });
  }

  private keep(text: string): void {
    this.output = (this.output + text).slice(-outputKeptBytes);
  }
}

/**
 * The controller's metadata as a follower sees it: one WatchMetadata stream from version 0 (a
 * snapshot, then deltas) applied to a ClusterMetadataCache. A broken stream fails every wait.
 */
export class MetadataWatch {
  readonly metadata = new ClusterMetadataCache();
  private readonly client: ControllerServiceClient;
  private readonly stream: ReturnType<ControllerServiceClient['watchMetadata']>;
  private failure: Error | undefined;

  constructor(controllerAddress: string) {
    this.client = createGrpcClient(ControllerServiceClient, controllerAddress);
    this.stream = this.client.watchMetadata({ fromVersion: 0n });
    this.stream.on('data', (message) => this.metadata.apply(message));
    this.stream.on('error', (error: Error) => {
      this.failure ??= new Error(`the controller's metadata stream broke: ${error.message}`);
    });
    this.stream.on('end', () => {
      this.failure ??= new Error("the controller's metadata stream ended");
    });
  }

  /**
   * Resolves with performance.now() of the first check `condition` passed (checked now, then at
   * most every metadataCheckIntervalMs after a change); rejects after `timeoutMs`, when the
   * stream breaks, or soon after `signal` aborts.
   */
  waitUntil(
    condition: () => boolean,
    timeoutMs: number,
    what: string,
    signal?: AbortSignal,
    /** describe: what is still missing, for the timeout's message. */
    describe?: () => string,
  ): Promise<number> {
    return new Promise((resolve, reject) => {
      let scheduled: NodeJS.Timeout | undefined;
      const finish = (error: Error | undefined): void => {
        clearTimeout(scheduled);
        clearTimeout(deadline);
        clearInterval(failureCheck);
        unsubscribe();
        if (error === undefined) resolve(performance.now());
        else reject(error);
      };
      const check = (): void => {
        scheduled = undefined;
        if (condition()) finish(undefined);
      };
      const deadline = setTimeout(() => {
        const missing = describe === undefined ? '' : `: ${describe()}`;
        finish(new Error(`not ${what} after ${timeoutMs / 1000} s${missing}`));
      }, timeoutMs);
      const failureCheck = setInterval(() => {
        if (this.failure !== undefined) finish(this.failure);
        else if (signal?.aborted === true) finish(new Error(`stopped waiting for ${what}`));
      }, 100);
      const unsubscribe = this.metadata.onChange(() => {
        scheduled ??= setTimeout(check, metadataCheckIntervalMs);
      });
      check();
    });
  }

  close(): void {
    this.stream.cancel();
    this.client.close();
  }
}
