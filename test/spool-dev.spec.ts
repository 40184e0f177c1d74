// Proves `spool dev` runs a whole cluster as separate processes: it reports ready, writes
// cluster.json with every process's role, pid and ports (each answering /readyz), and on
// SIGINT stops them all and exits 0 with no process left behind.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

interface ClusterFile {
  processes: Array<{
    role: string;
    id: number;
    pid: number;
    ports: { grpc: number; metrics: number };
  }>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-dev-'));
afterAll(() => rmSync(dataDirectory, { recursive: true, force: true }));

describe('spool dev', () => {
  it('starts every service as its own process and stops them all on SIGINT', async () => {
    const cli = spawn(
      process.execPath,
      [
        path.join(workspaceRoot, 'apps/cli/dist/main.js'),
        'dev',
        '--nodes',
        '2',
        '--gateway-port',
        '0',
        '--data-dir',
        dataDirectory,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    cli.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    cli.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) =>
      cli.once('exit', (code) => resolve(code)),
    );
    try {
      const deadline = Date.now() + 30_000;
      while (
        !output.includes('processes ready') &&
        Date.now() < deadline &&
        cli.exitCode === null
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(output).toContain('spool dev: 5 processes ready');

      const cluster = JSON.parse(
        readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'),
      ) as ClusterFile;
      expect(cluster.processes.map((entry) => `${entry.role}-${entry.id}`).sort()).toEqual([
        'controller-0',
        'coordinator-0',
        'gateway-0',
        'storage-node-0',
        'storage-node-1',
      ]);
      for (const entry of cluster.processes) {
        expect(isAlive(entry.pid)).toBe(true);
        expect((await fetch(`http://127.0.0.1:${entry.ports.metrics}/readyz`)).status).toBe(200);
      }

      cli.kill('SIGINT');
      expect(await exited).toBe(0);
      for (const entry of cluster.processes) expect(isAlive(entry.pid)).toBe(false);
      expect(output).toMatch(/\[storage-node-1\] \{.*"event":"stopped"/);
    } finally {
      cli.kill('SIGKILL');
    }
  });
});
