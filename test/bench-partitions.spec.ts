// Proves `spool bench partitions` keeps working, untimed, at a tiny size: one timed create of 10
// partitions on the way to 30 (RF3 on 3 nodes), one idle round, the kill -9 failover, the cluster
// started again on the same data and one node restarted after SIGTERM and one after SIGKILL. The
// --json line has every figure, each a positive number where it is a time, a size or a count of
// what must exist, the killed node's partitions all moved, and none of the processes outlives it.
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli-process';

function expectPositive(values: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = values[name];
    expect(
      typeof value === 'number' && Number.isFinite(value) && value > 0,
      `${name}: ${String(value)}`,
    ).toBe(true);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface StartupReport extends Record<string, unknown> {
  cleanShutdown: boolean;
  logsLoaded: number;
  logsRecovered: number;
}

describe('spool bench partitions', () => {
  it('measures create, idle, failover and start-up at 30 partitions and prints them as JSON', async () => {
    const { exitCode, stdout, stderr } = await runCli([
      ...['bench', 'partitions', '--create', '10', '--partitions', '30'],
      ...['--idle-seconds', '1', '--settle-seconds', '0', '--timeout-seconds', '60', '--json'],
    ]);
    expect(exitCode, stderr.slice(-4_000)).toBe(0);
    expect(stderr).toContain('bench partitions: kill -9 of storage-node-');
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0]!);
    expect(result.mode).toBe('partitions');
    expect(result.errors).toEqual([]);
    expect(result.settings).toEqual({
      nodes: 3,
      replicationFactor: 3,
      topicPartitionsMax: 10_000,
      idleSeconds: 1,
      settleSeconds: 0,
    });

    expect(result.create).toHaveLength(1);
    expect(result.create[0]).toMatchObject({ partitions: 10, topics: 1, existingPartitions: 0 });
    expectPositive(result.create[0], ['createMs', 'leadersMs', 'inSyncMs']);

    expect(result.idle).toHaveLength(1);
    const idle = result.idle[0];
    expect(idle.partitions).toBe(30);
    expect(idle.partitionsInCluster).toBeGreaterThanOrEqual(30);
    expectPositive(idle, ['windowSeconds', 'clusterCpuPercent']);
    expect(idle.processes.map((process: { name: string }) => process.name).sort()).toEqual([
      'controller',
      'coordinator-0',
      'gateway',
      'storage-node-0',
      'storage-node-1',
      'storage-node-2',
    ]);
    for (const process of [...idle.processes, idle.supervisor]) {
      expectPositive(process, ['pid', 'rssMb']);
      expect(process.cpuPercent).toBeGreaterThanOrEqual(0);
    }
    expect(idle.storageNodes).toHaveLength(3);
    for (const node of idle.storageNodes) {
      expectPositive(node, ['openDescriptors', 'logOpenFiles', 'logOpenFilesMax']);
    }

    const failover = result.failover;
    expect(failover.partitions).toBe(idle.partitionsInCluster);
    expect(failover.partitionsLed).toBeGreaterThan(0);
    expect(failover.partitionsMoved).toBe(failover.partitionsLed);
    expectPositive(failover, ['p50Ms', 'p99Ms', 'maxMs', 'fencedMs']);
    expect(failover.p50Ms).toBeLessThanOrEqual(failover.p99Ms);
    expect(failover.p99Ms).toBeLessThanOrEqual(failover.maxMs);

    const startup = result.startup;
    expect(startup.partitions).toBe(idle.partitionsInCluster);
    expectPositive(startup, ['clusterInSyncMs']);
    expect(startup.nodes).toHaveLength(3);
    for (const node of startup.nodes as StartupReport[]) {
      expect(node.logsLoaded).toBeGreaterThan(0);
      expect(node.logsRecovered).toBeGreaterThanOrEqual(0);
      expectPositive(node, ['durationMs']);
    }
    // The node killed in the failover recovers from a crash; the others stopped cleanly.
    const killed = (startup.nodes as (StartupReport & { brokerId: number })[]).find(
      (node) => node.brokerId === failover.brokerId,
    );
    expect(killed?.cleanShutdown).toBe(false);
    for (const [restart, signal] of [
      [startup.afterCleanStop, 'SIGTERM'],
      [startup.afterKill, 'SIGKILL'],
    ] as const) {
      expect(restart.signal).toBe(signal);
      expectPositive(restart, ['stopMs', 'backoffMs', 'startedMs', 'inSyncMs']);
      expect(restart.report.logsLoaded).toBeGreaterThan(0);
      expectPositive(restart.report, ['durationMs']);
    }
    expect(startup.afterKill.report.cleanShutdown).toBe(false);

    for (const process of [...idle.processes, idle.supervisor]) {
      expect(isAlive(process.pid), `${process.name} (pid ${process.pid})`).toBe(false);
    }
  }, 240_000);

  it('lists its flags in --help and refuses a bad size with exit code 2', async () => {
    const help = await runCli(['bench', 'partitions', '--help']);
    expect(help.exitCode).toBe(0);
    for (const flag of [
      '--create',
      '--partitions',
      '--nodes',
      '--idle-seconds',
      '--timeout-seconds',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    const bad = await runCli(['bench', 'partitions', '--partitions', '20,x']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--partitions must be partition counts');
  });
});
