// Proves that a crash of the log cleaner's worker thread costs a real storage node nothing but
// the cleaning of that partition: spool dev with two storage nodes runs with the cleaner's test
// hook (SPOOL_TEST_CLEANER_THREAD_CRASH_AT=filterChunk, cleaner-thread-messages.ts), so each
// node's thread throws, uncaught, once its pass has built the offset map and created the
// .cleaned segment. A compacted topic (replication factor 2, small segments) takes keyed records
// until both nodes count a thread crash and an uncleanable partition; `spool topic describe`
// (--json and the table) then shows the partition uncleanable on each replica with the crash as
// its reason. Both nodes still serve: more records are produced (acks=all, so both replicas
// append them) and a consumer reads every record produced from offset 0, each at its offset
// (nothing was cleaned and nothing lost), and no .cleaned, .swap or .deleted file is left.
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Spool, type Admin } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from './support/cli-process';
import { scrape, sumOf } from './support/prometheus-scrape';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const topic = 'changelog';
const keyCount = 6;
/** Produce calls before the crash, each of recordsPerSend records: about 40 KiB of values. */
const sendCount = 40;
const recordsPerSend = 5;
/** Produce calls after the crash. */
const sendCountAfter = 10;
const crashReason = /the log cleaner thread crashed: test hook: crash at filterChunk/;

let dev: SpoolDevProcess | undefined;
let spool: Spool | undefined;
let admin: Admin | undefined;

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '2'], {
    env: {
      SPOOL_LOG_CLEANER_BACKOFF_MS: '100',
      SPOOL_BROKER_HEARTBEAT_INTERVAL_MS: '200',
      SPOOL_TEST_CLEANER_THREAD_CRASH_AT: 'filterChunk',
    },
  });
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'compaction-thread-crash' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  await admin?.disconnect();
  await dev?.stop();
});

interface DescribedCleaner {
  readonly brokerId: number;
  readonly firstDirtyOffset: string;
  readonly uncleanableReason?: string;
}

async function replicaCleaners(): Promise<DescribedCleaner[]> {
  const result = await runCli([
    'topic',
    'describe',
    topic,
    '--gateway',
    dev!.gatewayAddress,
    '--json',
  ]);
  expect(result.exitCode, result.stderr).toBe(0);
  const described = JSON.parse(result.stdout) as {
    partitions: Array<{ replicaCleaners: DescribedCleaner[] }>;
  };
  return described.partitions[0]!.replicaCleaners;
}

/** Every file under `directory` whose name a cleaner pass in progress would leave. */
function swapDebris(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' }).filter((name) =>
    /\.(cleaned|swap|deleted)$/.test(path.basename(name)),
  );
}

describe("a crash of the log cleaner's thread", () => {
  it('marks the partition uncleanable on each replica and loses nothing', async () => {
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
      ],
    });
    const producer = spool!.producer({ acks: 'all', lingerMs: 0 });
    const produced: string[] = [];
    const send = async (count: number): Promise<void> => {
      for (let index = 0; index < count; index++) {
        const messages = Array.from({ length: recordsPerSend }, () => {
          const value = `${produced.length}:${'x'.repeat(200)}`;
          produced.push(value);
          return { key: `key-${produced.length % keyCount}`, value };
        });
        await producer.send({ topic, messages });
      }
    };
    const consumer = spool!.consumer({ autoOffsetReset: 'earliest', requestTimeoutMs: 10_000 });
    try {
      await send(sendCount);

      const storageNodes = dev!.processes.filter((entry) => entry.role === 'storage-node');
      expect(storageNodes).toHaveLength(2);
      for (const node of storageNodes) {
        await expect
          .poll(
            async () => {
              const scraped = [await scrape(node.ports.metrics)];
              return [
                sumOf(scraped, 'spool_log_cleaner_thread_crashes'),
                sumOf(scraped, 'spool_log_cleaner_uncleanable_partitions'),
              ];
            },
            { timeout: 30_000, interval: 200 },
          )
          .toEqual([1, 1]);
      }

      // Each replica's report reaches the controller with its next heartbeat.
      await expect
        .poll(
          async () =>
            (await replicaCleaners())
              .filter((cleaner) => crashReason.test(cleaner.uncleanableReason ?? ''))
              .map((cleaner) => cleaner.brokerId)
              .sort(),
          { timeout: 20_000, interval: 250 },
        )
        .toEqual(storageNodes.map((node) => node.id).sort());
      // Nothing was cleaned: the dirty section starts where the log does.
      for (const cleaner of await replicaCleaners()) expect(cleaner.firstDirtyOffset).toBe('0');
      const table = await runCli(['topic', 'describe', topic, '--gateway', dev!.gatewayAddress]);
      expect(table.exitCode, table.stderr).toBe(0);
      expect(table.stdout).toMatch(
        /\n0\s+\d+\s+leader\s+0\s+[01]\.\d{3}\s+the log cleaner thread crashed: test hook: crash at filterChunk\n/,
      );
      expect(table.stdout).toMatch(/\n0\s+\d+\s+follower\s+0\s+[01]\.\d{3}\s+the log cleaner/);

      // Both nodes go on serving: acks=all needs the follower's fetch as well as the leader.
      await send(sendCountAfter);
      const consumed: Array<{ offset: bigint; value: string }> = [];
      consumer.assign([{ topic, partition: 0, offset: 0n }]);
      await consumer.run({
        eachMessage: async ({ message }) => {
          consumed.push({ offset: message.offset, value: message.value!.toString() });
        },
      });
      await vi.waitFor(() => expect(consumed.length).toBeGreaterThanOrEqual(produced.length), {
        timeout: 20_000,
        interval: 100,
      });
      expect(consumed).toEqual(produced.map((value, index) => ({ offset: BigInt(index), value })));
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
    // The passes the crashes ended removed their .cleaned files and swapped nothing in.
    expect(swapDebris(dev!.dataDirectory)).toEqual([]);
    const metrics = await Promise.all(
      dev!.processes
        .filter((entry) => entry.role === 'storage-node')
        .map(async (node) =>
          sumOf([await scrape(node.ports.metrics)], 'spool_log_cleaner_thread_crashes'),
        ),
    );
    // Uncleanable partitions are not chosen again: no further pass, no further crash.
    expect(metrics).toEqual([1, 1]);
  }, 90_000);
});
