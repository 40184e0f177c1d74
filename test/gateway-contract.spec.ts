// Runs the gateway contract (libs/client/src/testing/gateway.contract.ts) against a real gateway:
// `spool dev` with one storage node, real processes and sockets. The SDK's specs run against the
// fake gateway; libs/client/src/gateway-contract.spec.ts runs the same suite against the fake, so
// the two cannot drift apart without one of them failing.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describeGatewayContract } from '@spool/client/testing';
import { expect, vi } from 'vitest';
import { cliEntryPoint } from './support/cli-process';

interface ClusterFile {
  processes: Array<{ role: string; ports: { grpc: number } }>;
}

/** spool dev's start-up on a loaded machine, with its own readiness checks. */
const startTimeoutMs = 30_000;

describeGatewayContract('real gateway (spool dev, one storage node)', async () => {
  const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-gateway-contract-'));
  const dev: ChildProcess = spawn(
    process.execPath,
    [cliEntryPoint, 'dev', '--nodes', '1', '--gateway-port', '0', '--data-dir', dataDirectory],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  dev.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  dev.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => dev.once('exit', resolve));
  const stop = async (): Promise<void> => {
    try {
      if (dev.exitCode === null) {
        dev.kill('SIGINT');
        expect(await exited).toBe(0);
      }
    } finally {
      dev.kill('SIGKILL');
      rmSync(dataDirectory, { recursive: true, force: true });
    }
  };
  try {
    // vi.waitFor, not expect.poll: this runs in the suite's beforeAll, outside any test.
    await vi.waitFor(
      () => expect(output.includes('processes ready') || dev.exitCode !== null).toBe(true),
      { timeout: startTimeoutMs, interval: 20 },
    );
    expect(output).toContain('processes ready');
    const cluster = JSON.parse(
      readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'),
    ) as ClusterFile;
    const gatewayPort = cluster.processes.find((entry) => entry.role === 'gateway')!.ports.grpc;
    return { address: `127.0.0.1:${gatewayPort}`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
});
