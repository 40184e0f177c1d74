import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';

/**
 * Starts a Spool service from its built entry point as a real child process and waits for the
 * `started` log record that names the ports it bound. Every process a test starts is killed when
 * the test process exits, so a failing test leaves nothing behind.
 */
export const workspaceRoot = path.resolve(__dirname, '../..');

export type ServiceName = 'controller' | 'storage-node' | 'coordinator' | 'gateway';

export interface ServiceProcess {
  readonly name: ServiceName;
  readonly child: ChildProcess;
  readonly grpcPort: number;
  readonly metricsPort: number;
  readonly logLines: string[];
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function serviceEntryPoint(name: ServiceName): string {
  return path.join(workspaceRoot, 'apps', name, 'dist', 'main.js');
}

export function spawnService(
  name: ServiceName,
  argv: readonly string[] = [],
  env: Record<string, string> = {},
): { child: ChildProcess; exited: Promise<number | string>; stdout: string[]; stderr: string[] } {
  const child = spawn(process.execPath, [serviceEntryPoint(name), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  running.add(child);
  const stdout: string[] = [];
  const stderr: string[] = [];
  readline.createInterface({ input: child.stdout! }).on('line', (line) => stdout.push(line));
  readline.createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(signal ?? code ?? -1);
    });
  });
  return { child, exited, stdout, stderr };
}

export async function startServiceProcess(
  name: ServiceName,
  argv: readonly string[] = [],
  env: Record<string, string> = {},
  startTimeoutMs = 20_000,
): Promise<ServiceProcess> {
  const { child, exited, stdout, stderr } = spawnService(
    name,
    [
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      ...(name === 'gateway' ? ['--kafka-port', '0'] : []),
      ...defaultStateArgs(name, argv),
      ...argv,
    ],
    env,
  );
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    for (const line of stdout) {
      const record = parseRecord(line);
      if (record?.['event'] === 'started') {
        return {
          name,
          child,
          grpcPort: record['grpcPort'] as number,
          metricsPort: record['metricsPort'] as number,
          logLines: stdout,
          exited,
        };
      }
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not start:\n${stdout.join('\n')}\n${stderr.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A fresh temporary place for a service's state, unless the test chose one. */
function defaultStateArgs(name: ServiceName, argv: readonly string[]): string[] {
  if (
    name === 'controller' &&
    !argv.includes('--metadata-path') &&
    !argv.includes('--metadata-backend')
  ) {
    return [
      '--metadata-path',
      path.join(mkdtempSync(path.join(tmpdir(), 'spool-metadata-')), 'metadata.journal'),
    ];
  }
  return [];
}

function parseRecord(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
