// Proves that a compacted topic's cleaner state reaches `spool topic describe`, and that zstd
// batches are compacted by the storage node: spool dev with one node (cleaner backoff 100 ms,
// heartbeats every 200 ms) takes keyed zstd batches from the SDK on a compacted topic with small
// segments; a zstd batch holding a keyless record is refused with INVALID_RECORD. The storage
// node's cleaner removes older records of the zstd batches (its records-removed counter moves),
// and `spool topic describe` (table and --json) shows the leader's first dirty offset, past the
// start of the log, its dirty ratio and no uncleanable reason; a delete-policy topic shows none.
import { randomBytes } from 'node:crypto';
import { Spool, SpoolError, type Admin } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli-process';
import { scrape, sumOf } from './support/prometheus-scrape';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const topic = 'changelog';
const keyCount = 6;
/** Records produced, in batches of recordsPerSend: about 40 KiB of incompressible values. */
const sendCount = 40;
const recordsPerSend = 5;

let dev: SpoolDevProcess | undefined;
let spool: Spool | undefined;
let admin: Admin | undefined;

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '1'], {
    env: { SPOOL_LOG_CLEANER_BACKOFF_MS: '100', SPOOL_BROKER_HEARTBEAT_INTERVAL_MS: '200' },
  });
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'compaction-describe' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  await admin?.disconnect();
  await dev?.stop();
});

async function describeJson(name: string): Promise<{
  partitions: Array<{
    partition: number;
    cleaner?: { firstDirtyOffset: string; dirtyRatio: number; uncleanableReason?: string };
  }>;
}> {
  const result = await runCli([
    'topic',
    'describe',
    name,
    '--gateway',
    dev!.gatewayAddress,
    '--json',
  ]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Awaited<ReturnType<typeof describeJson>>;
}

describe('a compacted topic', () => {
  it('is compacted through zstd batches and describes its cleaner state', async () => {
    await admin!.createTopics({
      topics: [
        {
          topic,
          numPartitions: 1,
          replicationFactor: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.bytes', value: '4096' },
            { name: 'min.cleanable.dirty.ratio', value: '0.01' },
          ],
        },
        { topic: 'plain', numPartitions: 1, replicationFactor: 1 },
      ],
    });
    const producer = spool!.producer({ compression: 'zstd', lingerMs: 0, retries: 0 });
    try {
      for (let send = 0; send < sendCount; send++) {
        await producer.send({
          topic,
          messages: Array.from({ length: recordsPerSend }, (_, index) => ({
            key: `key-${(send * recordsPerSend + index) % keyCount}`,
            value: randomBytes(200),
          })),
        });
      }
      const refusal = await producer
        .send({ topic, messages: [{ key: 'key-0', value: 'v' }, { value: 'keyless' }] })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refusal).toBeInstanceOf(SpoolError);
      expect((refusal as SpoolError).code).toBe('INVALID_RECORD');
      expect((refusal as SpoolError).message).toMatch(
        /Compacted topic cannot accept message without key/,
      );
    } finally {
      await producer.disconnect();
    }

    const storageNode = dev!.processes.find((entry) => entry.role === 'storage-node')!;
    await expect
      .poll(
        async () =>
          sumOf(
            [await scrape(storageNode.ports.metrics)],
            'spool_log_cleaner_records_removed_total',
          ) ?? 0,
        { timeout: 20_000, interval: 200 },
      )
      .toBeGreaterThan(0);

    // The cleaner's state reaches the controller with the next heartbeat.
    await expect
      .poll(
        async () => {
          const cleaner = (await describeJson(topic)).partitions[0]?.cleaner;
          return cleaner === undefined ? 0n : BigInt(cleaner.firstDirtyOffset);
        },
        { timeout: 20_000, interval: 250 },
      )
      .toBeGreaterThan(0n);
    const described = await describeJson(topic);
    const cleaner = described.partitions[0]!.cleaner!;
    expect(cleaner.dirtyRatio).toBeGreaterThanOrEqual(0);
    expect(cleaner.dirtyRatio).toBeLessThanOrEqual(1);
    expect(cleaner.uncleanableReason).toBeUndefined();
    expect(BigInt(cleaner.firstDirtyOffset)).toBeLessThanOrEqual(
      BigInt(sendCount * recordsPerSend),
    );

    const table = await runCli(['topic', 'describe', topic, '--gateway', dev!.gatewayAddress]);
    expect(table.exitCode, table.stderr).toBe(0);
    expect(table.stdout).toContain('log cleaner:');
    expect(table.stdout).toMatch(/FIRST-DIRTY-OFFSET\s+DIRTY-RATIO\s+UNCLEANABLE-REASON/);
    expect(table.stdout).toMatch(/\n0\s+\d+\s+[1-9]\d*\s+[01]\.\d{3}\s+-\s*\n/);

    // A delete-policy topic has no cleaner state.
    expect((await describeJson('plain')).partitions[0]!.cleaner).toBeUndefined();
    const plain = await runCli(['topic', 'describe', 'plain', '--gateway', dev!.gatewayAddress]);
    expect(plain.stdout).not.toContain('log cleaner:');
  }, 60_000);
});
