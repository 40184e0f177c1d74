// Proves the auto-balancer (--auto-balance) with real processes: a controller, storage nodes, a
// coordinator and a gateway. Three brokers hold a topic's 10 partitions at RF 3 with equal data;
// two brokers join while an acks=all producer and a group consumer run at a fixed rate. The
// controller moves replicas onto them by itself (its log gives each move's reason, its metrics
// count the moves and the bytes per broker) until the most loaded broker holds at most 1.25x the
// bytes of the least loaded one, with no reassignment left in progress; the consumer reports no
// error, and every acknowledged record is read back afterwards. Small records and a short
// balancing interval keep it to seconds.
import type { Admin, Consumer, Producer, Spool } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { family, scrape } from './support/prometheus-scrape';
import { startFrontEnds, type FrontEnds } from './support/front-ends';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'balanced';
const partitionCount = 10;
let storage: StorageTestCluster;
let frontEnds: FrontEnds | undefined;
let spool: Spool;
let admin: Admin;

beforeAll(async () => {
  storage = await StorageTestCluster.start(3, {
    controllerArgs: [
      ...['--auto-balance', 'true', '--auto-balance-interval-ms', '1000'],
      ...['--auto-balance-moves-max', '6', '--auto-balance-tolerance-percent', '10'],
      ...['--leader-imbalance-check-interval-ms', '500'],
    ],
  });
  frontEnds = await startFrontEnds(storage, 'auto-balance-spec');
  ({ spool, admin } = frontEnds);
}, 90_000);

afterAll(async () => {
  await frontEnds?.stop();
  await storage?.stop();
});

/** Each broker's bytes as the active controller reports them (spool_broker_bytes). */
async function brokerBytes(): Promise<Map<string, number>> {
  const scraped = await scrape(storage.controller.metricsPort);
  const bytes = new Map<string, number>();
  for (const metric of family(scraped, 'spool_broker_bytes')?.metrics ?? []) {
    bytes.set(metric.labels?.['broker'] ?? '', Number(metric.value));
  }
  return bytes;
}

async function gauge(name: string): Promise<number> {
  const scraped = await scrape(storage.controller.metricsPort);
  return Number(family(scraped, name)?.metrics[0]?.value ?? Number.NaN);
}

/** Sends one keyed record every `intervalMs` until stopped; collects what was acknowledged. */
function startProducer(intervalMs: number) {
  const producer: Producer = spool.producer({ acks: 'all', lingerMs: 0, requestTimeoutMs: 10_000 });
  const acknowledged = new Set<string>();
  let stopped = false;
  const done = (async () => {
    for (let sequence = 0; !stopped && sequence < 100_000; sequence++) {
      const started = Date.now();
      const value = `live-${sequence}`;
      try {
        await producer.send({
          topic,
          messages: [{ partition: sequence % partitionCount, key: value, value }],
        });
        acknowledged.add(value);
      } catch {
        // Unacknowledged: it may or may not be in the log, and is not counted.
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, intervalMs - (Date.now() - started))),
      );
    }
  })();
  return {
    acknowledged,
    stop: async () => {
      stopped = true;
      await done;
      await producer.disconnect();
    },
  };
}

describe('auto-balance', () => {
  it('spreads a topic over two new brokers under load, losing nothing', async () => {
    await admin.createTopics({
      topics: [
        {
          topic,
          numPartitions: partitionCount,
          replicationFactor: 3,
          configEntries: [{ name: 'min.insync.replicas', value: '2' }],
        },
      ],
    });
    // Equal data in every partition (40 x 2 KiB), so balance is a matter of replica placement.
    const filler = spool.producer({ acks: 'all', lingerMs: 5 });
    const value = 'x'.repeat(2_048);
    for (let round = 0; round < 40; round++) {
      await filler.send({
        topic,
        messages: Array.from({ length: partitionCount }, (_, partition) => ({ partition, value })),
      });
    }
    await filler.disconnect();

    const consumed = new Set<string>();
    const consumerErrors: Error[] = [];
    const consumer: Consumer = spool.consumer({
      groupId: 'balance-reader',
      requestTimeoutMs: 5_000,
    });
    consumer.on('crash', (error) => consumerErrors.push(error));
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        consumed.add(message.value?.toString() ?? '');
      },
    });
    const producer = startProducer(20);
    try {
      await vi.waitFor(() => expect(producer.acknowledged.size).toBeGreaterThan(20), {
        timeout: 20_000,
      });
      await Promise.all([storage.startNode(3), storage.startNode(4)]);
      await vi.waitFor(
        async () => {
          expect(await gauge('spool_reassigning_partitions')).toBe(0);
          expect(await gauge('spool_balancer_moves_in_progress')).toBe(0);
          const bytes = await brokerBytes();
          expect([...bytes.keys()].sort()).toEqual(['0', '1', '2', '3', '4']);
          const loads = [...bytes.values()];
          expect(Math.min(...loads)).toBeGreaterThan(0);
          expect(Math.max(...loads) / Math.min(...loads)).toBeLessThanOrEqual(1.25);
        },
        { timeout: 60_000, interval: 500 },
      );
      const moves = family(
        await scrape(storage.controller.metricsPort),
        'spool_balancer_moves_total',
      );
      const replicaMoves = moves?.metrics.find((metric) => metric.labels?.['kind'] === 'replica');
      expect(Number(replicaMoves?.value)).toBeGreaterThan(0);
      expect(storage.controller.logLines.join('\n')).toMatch(
        /balancer moves a replica of balanced-\d+/,
      );
      expect(storage.controller.logLines.join('\n')).toMatch(/gives \d+ bytes to broker [34]/);
      // Production keeps going after the moves.
      const afterMoves = producer.acknowledged.size;
      await vi.waitFor(() => expect(producer.acknowledged.size).toBeGreaterThan(afterMoves + 10), {
        timeout: 20_000,
      });
    } finally {
      await producer.stop();
    }
    await vi.waitFor(
      () => expect([...producer.acknowledged].filter((value) => !consumed.has(value))).toEqual([]),
      { timeout: 30_000, interval: 100 },
    );
    await consumer.disconnect();
    expect(consumerErrors).toEqual([]);
    // The topic's replicas now span all five brokers, three per partition.
    const [described] = await admin.describeTopics({ topics: [topic] });
    const brokersUsed = new Set(described!.partitions.flatMap((partition) => partition.replicas));
    expect([...brokersUsed].sort()).toEqual([0, 1, 2, 3, 4]);
    for (const partition of described!.partitions) expect(partition.replicas).toHaveLength(3);
  }, 150_000);
});
