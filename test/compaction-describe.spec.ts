// Proves that a compacted topic's cleaner state on each replica reaches `spool topic describe`,
// and that zstd batches are compacted by the storage nodes: spool dev with two nodes (cleaner
// backoff 100 ms, heartbeats every 200 ms) takes keyed zstd batches from the SDK on a compacted
// topic with small segments and replication factor 2; a zstd batch holding a keyless record is
// refused with INVALID_RECORD. Each storage node's cleaner removes older records of the zstd
// batches (its records-removed counter moves), and `spool topic describe` (table and --json)
// shows, for the leader and for the follower, its first dirty offset, past the start of the log,
// its dirty ratio and no uncleanable reason; a delete-policy topic shows none.
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
  dev = await startSpoolDev(['--nodes', '2'], {
    env: { SPOOL_LOG_CLEANER_BACKOFF_MS: '100', SPOOL_BROKER_HEARTBEAT_INTERVAL_MS: '200' },
  });
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'compaction-describe' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  await admin?.disconnect();
  await dev?.stop();
});

interface DescribedCleaner {
  readonly brokerId: number;
  readonly firstDirtyOffset: string;
  readonly dirtyRatio: number;
  readonly uncleanableReason?: string;
}

async function describeJson(name: string): Promise<{
  partitions: Array<{
    partition: number;
    leaderId: number;
    cleaner?: DescribedCleaner;
    replicaCleaners: DescribedCleaner[];
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
          replicationFactor: 2,
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

    const storageNodes = dev!.processes.filter((entry) => entry.role === 'storage-node');
    expect(storageNodes).toHaveLength(2);
    for (const node of storageNodes) {
      await expect
        .poll(
          async () =>
            sumOf([await scrape(node.ports.metrics)], 'spool_log_cleaner_records_removed_total') ??
            0,
          { timeout: 20_000, interval: 200 },
        )
        .toBeGreaterThan(0);
    }

    // Each replica's cleaner state reaches the controller with its node's next heartbeat.
    const cleanedBrokers = async (): Promise<number[]> =>
      (await describeJson(topic)).partitions[0]!.replicaCleaners.filter(
        (cleaner) => BigInt(cleaner.firstDirtyOffset) > 0n,
      )
        .map((cleaner) => cleaner.brokerId)
        .sort();
    await expect
      .poll(cleanedBrokers, { timeout: 20_000, interval: 250 })
      .toEqual(storageNodes.map((node) => node.id).sort());
    const described = (await describeJson(topic)).partitions[0]!;
    // The leader's state first, and alone as the partition's `cleaner`.
    expect(described.replicaCleaners[0]!.brokerId).toBe(described.leaderId);
    expect(described.cleaner).toEqual(described.replicaCleaners[0]);
    for (const cleaner of described.replicaCleaners) {
      expect(cleaner.dirtyRatio).toBeGreaterThanOrEqual(0);
      expect(cleaner.dirtyRatio).toBeLessThanOrEqual(1);
      expect(cleaner.uncleanableReason).toBeUndefined();
      expect(BigInt(cleaner.firstDirtyOffset)).toBeLessThanOrEqual(
        BigInt(sendCount * recordsPerSend),
      );
    }

    const table = await runCli(['topic', 'describe', topic, '--gateway', dev!.gatewayAddress]);
    expect(table.exitCode, table.stderr).toBe(0);
    expect(table.stdout).toContain('log cleaner:');
    expect(table.stdout).toMatch(/ROLE\s+FIRST-DIRTY-OFFSET\s+DIRTY-RATIO\s+UNCLEANABLE-REASON/);
    expect(table.stdout).toMatch(/\n0\s+\d+\s+leader\s+[1-9]\d*\s+[01]\.\d{3}\s+-\s*\n/);
    expect(table.stdout).toMatch(/\n0\s+\d+\s+follower\s+[1-9]\d*\s+[01]\.\d{3}\s+-\s*\n/);

    // A delete-policy topic has no cleaner state.
    expect((await describeJson('plain')).partitions[0]!).toMatchObject({ replicaCleaners: [] });
    expect((await describeJson('plain')).partitions[0]!.cleaner).toBeUndefined();
    const plain = await runCli(['topic', 'describe', 'plain', '--gateway', dev!.gatewayAddress]);
    expect(plain.stdout).not.toContain('log cleaner:');
  }, 60_000);
});
