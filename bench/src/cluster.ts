/**
 * Cluster control for the benchmark: a fresh `spool dev` cluster per group of scenarios, the
 * `spool` command run against it, and what each of its processes used (CPU seconds from
 * /proc/<pid>/stat, peak RSS from /proc/<pid>/status).
 */
import { execFile, spawn, type ExecFileOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export const workspaceRoot = path.resolve(__dirname, '..', '..');
const cli = path.join(workspaceRoot, 'apps', 'cli', 'dist', 'main.js');
/** Linux's USER_HZ, what /proc/<pid>/stat counts in. */
const clockTicksPerSecond = 100;
/** The longest `spool dev` may take to report its processes ready. */
const clusterStartTimeoutMs = 60_000;
/** The cluster's logs kept for the message if start-up fails. */
const clusterOutputKeptBytes = 65_536;
/** The largest output a `spool` command may print (the bench JSON, progress on stderr). */
const commandOutputBytesMax = 64 * 1024 * 1024;
/** A port per run, so a run does not meet the gateway of one that is still stopping. */
const gatewayPort = 19290 + Math.floor(Math.random() * 500);
/** Where the cluster's gateway listens, for load generators in this process. */
export const gatewayAddress = `127.0.0.1:${gatewayPort}`;
/** The gateway's Kafka listener, beside its gRPC port. */
const kafkaPort = gatewayPort + 1000;
/** Where Kafka clients bootstrap. */
export const kafkaBootstrapAddress = `127.0.0.1:${kafkaPort}`;

/**
 * The V8 flags the `spool` command runs with (apps/cli/src/node-flags.ts): the bench client and
 * `spool dev` run as a user's `spool` would. Read from the CLI's build, which the bench needs.
 */
export const spoolNodeFlags = (
  createRequire(cli)('./node-flags.js') as { spoolNodeFlags: readonly string[] }
).spoolNodeFlags;

export function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

/** Runs a command, streams its stderr (progress lines), resolves with its stdout. */
export function run(
  command: string,
  args: readonly string[],
  options: ExecFileOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { maxBuffer: commandOutputBytesMax, ...options, encoding: 'utf8' },
      (error, stdout) =>
        error
          ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}`))
          : resolve(stdout),
    );
    child.stderr?.on('data', (chunk: Buffer | string) => process.stderr.write(chunk));
  });
}

/**
 * Runs `spool` with the bench's flags and resolves with its stdout; with `failureExitCodeOk` an
 * exit code of 1 still resolves (a command that prints what it measured before a failed step).
 */
export function runSpool(
  args: readonly string[],
  options: { gateway?: boolean; failureExitCodeOk?: boolean } = {},
): Promise<string> {
  const fullArgs = [
    ...spoolNodeFlags,
    cli,
    ...args,
    ...(options.gateway === false ? [] : ['--gateway', `localhost:${gatewayPort}`]),
    ...(clientProperties === undefined ? [] : ['--command-config', clientProperties]),
    '--json',
  ];
  if (options.failureExitCodeOk !== true) return run(process.execPath, fullArgs);
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      fullArgs,
      { maxBuffer: commandOutputBytesMax, encoding: 'utf8' },
      (error, output) =>
        error && error.code !== 1
          ? reject(new Error(`spool ${args.join(' ')} failed: ${error.message}`))
          : resolve(output),
    );
    child.stderr?.on('data', (chunk: Buffer | string) => process.stderr.write(chunk));
  });
}

/** The last line that is a JSON object (nx prints its summary after the command's output). */
export function lastJsonLine<T = Record<string, unknown>>(stdout: string): T {
  const lines = stdout.trim().split('\n').reverse();
  const line = lines.find((candidate) => candidate.trimStart().startsWith('{'));
  if (line === undefined) throw new Error(`no JSON line in:\n${stdout.slice(-2_000)}`);
  return JSON.parse(line) as T;
}

export function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
}

export function peakRssMbOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmHWM:'));
  if (line === undefined) throw new Error(`/proc/${pid}/status has no VmHWM line`);
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
}

export interface BenchCluster {
  readonly nodes: number;
  readonly processes: readonly { name: string; role: string; pid: number }[];
  /** CPU seconds each process used so far, by name (`storage-node-0`, `gateway`, ...). */
  cpuSeconds(): Record<string, number>;
  /** Peak RSS in MB of each process so far, by name. */
  peakRssMb(): Record<string, number>;
  /** Ends the cluster (SIGINT) and removes its folder. */
  stop(): Promise<void>;
}

/**
 * --tls: the client.properties of the running secure cluster, given to every `spool` command
 * (--command-config) while it runs; undefined for a plaintext cluster.
 */
let clientProperties: string | undefined;

/** A fresh `spool dev` cluster in a temporary folder; stop() ends it and removes the folder. */
export async function startCluster(
  nodes: number,
  options: { readonly tls?: boolean } = {},
): Promise<BenchCluster> {
  const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-bench-'));
  const child = spawn(
    process.execPath,
    [
      ...spoolNodeFlags,
      cli,
      'dev',
      '--nodes',
      String(nodes),
      '--data-dir',
      dataDirectory,
      '--gateway-port',
      String(gatewayPort),
      '--kafka-port',
      String(kafkaPort),
      ...(options.tls === true ? ['--secure'] : []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // The cluster's logs are read all along (a full pipe would stall it); the last 64 KiB are kept
  // for the error message if start-up fails.
  let output = '';
  const keep = (chunk: Buffer | string): void => {
    output = (output + chunk.toString()).slice(-clusterOutputKeptBytes);
  };
  child.stderr.on('data', keep);
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`spool dev did not start:\n${output}`)),
      clusterStartTimeoutMs,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (output.includes('processes ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`spool dev exited (${code}):\n${output}`)));
  });
  try {
    await started;
  } catch (error) {
    // Nothing of a cluster that did not start is left behind: spool dev stops what it started.
    child.kill('SIGINT');
    rmSync(dataDirectory, { recursive: true, force: true });
    throw error;
  }
  clientProperties =
    options.tls === true ? path.join(dataDirectory, 'client.properties') : undefined;
  const description = JSON.parse(
    readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'),
  ) as { processes: { role: string; id: number; pid: number }[] };
  const processes = description.processes.map(({ role, id, pid }) => ({
    name: role === 'storage-node' ? `storage-node-${id}` : role,
    role,
    pid,
  }));
  return {
    nodes,
    processes,
    cpuSeconds: () =>
      Object.fromEntries(processes.map((entry) => [entry.name, cpuSecondsOf(entry.pid)])),
    peakRssMb: () =>
      Object.fromEntries(processes.map((entry) => [entry.name, peakRssMbOf(entry.pid)])),
    async stop() {
      child.removeAllListeners('exit');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
      clientProperties = undefined;
      rmSync(dataDirectory, { recursive: true, force: true });
    },
  };
}
