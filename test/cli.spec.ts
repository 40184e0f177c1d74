// Proves the spool CLI works end to end across processes: against `spool dev` (3 nodes) it creates
// a 6-partition RF 3 topic, pipes 20,000 keyed lines through `spool produce`, reads them back with
// `spool consume --format json` (each exactly once, offsets rising per partition in input order,
// each key on its murmur2 partition), maps failures to exit codes 1, 2 and 3, and on SIGINT
// `spool dev` leaves no process behind.
import { partitionForKey } from '@spool/client';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli-process';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const recordCount = 20_000;
const partitionCount = 6;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let dev: SpoolDevProcess | undefined;
afterAll(async () => {
  // Stopped by the test itself; this stops it only when the test failed midway.
  await dev?.stop();
});

describe('spool CLI against spool dev', () => {
  it('creates, produces, consumes, fails with the right exit codes and stops cleanly', async () => {
    dev = await startSpoolDev(['--nodes', '3']);
    const gateway = ['--gateway', dev.gatewayAddress];

    const created = await runCli([
      'topic',
      'create',
      'orders',
      '--partitions',
      String(partitionCount),
      '--replication-factor',
      '3',
      ...gateway,
    ]);
    expect(created).toMatchObject({ exitCode: 0, stdout: 'created topic orders\n' });

    const lines = Array.from({ length: recordCount }, (_, index) => `key-${index}:value-${index}`);
    const produced = await runCli(
      ['produce', 'orders', '--key-separator', ':', ...gateway],
      `${lines.join('\n')}\n`,
    );
    expect(produced.stderr).toMatch(new RegExp(`^produced ${recordCount} records in [\\d.]+ s`));
    expect(produced.exitCode).toBe(0);

    const consumed = await runCli([
      'consume',
      'orders',
      '--from-beginning',
      '--max-messages',
      String(recordCount),
      '--format',
      'json',
      ...gateway,
    ]);
    expect(consumed.exitCode).toBe(0);
    const records = consumed.stdout
      .trimEnd()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as { partition: number; offset: string; key: string; value: string },
      );
    expect(records).toHaveLength(recordCount);
    const seen = new Set<number>();
    const lastByPartition = new Map<number, { offset: bigint; index: number }>();
    for (const record of records) {
      const index = Number(record.key.slice('key-'.length));
      expect(record.value).toBe(`value-${index}`);
      expect(seen.has(index)).toBe(false);
      seen.add(index);
      // The SDK's default partitioner put each key on its murmur2 partition, as Kafka's does.
      expect(record.partition).toBe(partitionForKey(Buffer.from(record.key), partitionCount));
      // Within a partition, offsets rise and follow the order of the input lines.
      const offset = BigInt(record.offset);
      const last = lastByPartition.get(record.partition);
      if (last !== undefined) {
        expect(offset).toBeGreaterThan(last.offset);
        expect(index).toBeGreaterThan(last.index);
      }
      lastByPartition.set(record.partition, { offset, index });
    }
    expect(seen.size).toBe(recordCount);
    expect(lastByPartition.size).toBe(partitionCount);

    const tooManyReplicas = await runCli([
      'topic',
      'create',
      'wide',
      '--partitions',
      '1',
      '--replication-factor',
      '4',
      ...gateway,
    ]);
    expect(tooManyReplicas.exitCode).toBe(1);
    expect(tooManyReplicas.stderr).toMatch(/^spool: INVALID_REPLICATION_FACTOR: .+\n$/);

    const unreachable = await runCli(['topic', 'list', '--gateway', '127.0.0.1:1']);
    expect(unreachable.exitCode).toBe(3);
    expect(unreachable.stderr).toMatch(/^spool: UNAVAILABLE: /);

    const unknownFlag = await runCli(['topic', 'list', '--colour', ...gateway]);
    expect(unknownFlag).toMatchObject({
      exitCode: 2,
      stderr: 'spool: USAGE: unknown flag --colour\n',
    });

    await dev.stop();
    for (const entry of dev.processes) expect(isAlive(entry.pid)).toBe(false);
  });
});
