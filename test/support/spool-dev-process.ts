// `spool dev` as a child process for cross-process tests: started from the built CLI on a data
// directory of its own, ready once it prints "processes ready" (waited for with vi.waitFor, within
// a bound), with the cluster file it writes (every process's role, pid and ports). Stopping sends
// SIGINT and expects a clean exit, then SIGKILLs whatever is left and removes the data directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { expect, vi } from 'vitest';
import { cliEntryPoint } from './cli-process';

export interface SpoolDevClusterProcess {
  readonly role: string;
  readonly id: number;
  readonly pid: number;
  readonly ports: { readonly grpc: number; readonly metrics: number };
}

export interface SpoolDevProcess {
  readonly child: ChildProcess;
  readonly dataDirectory: string;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** Every process of the cluster, from cluster.json. */
  readonly processes: readonly SpoolDevClusterProcess[];
  /** host:port of the gateway's gRPC listener. */
  readonly gatewayAddress: string;
  /** What spool dev printed so far (stdout and stderr). */
  output(): string;
  /** SIGINT, expecting exit 0; then SIGKILL and the data directory removed, whatever happened. */
  stop(): Promise<void>;
}

/** spool dev's start-up on a loaded machine, with its own readiness checks. */
export const spoolDevReadyTimeoutMsDefault = 30_000;

/**
 * Starts `spool dev <args> --gateway-port 0 --kafka-port 0 --data-dir <a new temporary folder>` and waits until
 * it is ready. `env` adds to the environment (settings reach every process through it).
 */
export async function startSpoolDev(
  args: readonly string[],
  options: {
    readonly env?: Readonly<Record<string, string>>;
    readonly readyTimeoutMs?: number;
    readonly entryPoint?: string;
  } = {},
): Promise<SpoolDevProcess> {
  const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-dev-test-'));
  const child = spawn(
    process.execPath,
    [
      options.entryPoint ?? cliEntryPoint,
      'dev',
      ...args,
      '--gateway-port',
      '0',
      '--kafka-port',
      '0',
      '--data-dir',
      dataDirectory,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const stop = async (): Promise<void> => {
    try {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT');
        expect(await exited, `spool dev's exit code; it printed:\n${output}`).toBe(0);
      }
    } finally {
      child.kill('SIGKILL');
      rmSync(dataDirectory, { recursive: true, force: true });
    }
  };
  try {
    // vi.waitFor, not expect.poll: callers start clusters in beforeAll, outside any test.
    await vi.waitFor(
      () => expect(output.includes('processes ready') || child.exitCode !== null).toBe(true),
      { timeout: options.readyTimeoutMs ?? spoolDevReadyTimeoutMsDefault, interval: 20 },
    );
    expect(output, 'spool dev did not get ready').toContain('processes ready');
    const { processes } = JSON.parse(
      readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'),
    ) as { processes: SpoolDevClusterProcess[] };
    const gateway = processes.find((entry) => entry.role === 'gateway');
    expect(gateway, 'a gateway in cluster.json').toBeDefined();
    return {
      child,
      dataDirectory,
      exited,
      processes,
      gatewayAddress: `127.0.0.1:${gateway!.ports.grpc}`,
      output: () => output,
      stop,
    };
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dataDirectory, { recursive: true, force: true });
    throw error;
  }
}
