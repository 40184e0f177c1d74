// Proves the leader's reassignment throttle (leader.replication.throttled.rate) can be changed
// while a reassignment runs, under an acks=all producer writing the very partition that moves:
// real processes (a controller, three storage nodes, a coordinator and a gateway). The partition
// holds 8 MiB when a replica on another broker is added; the new replica's bytes
// (spool_reassignment_bytes_in_total on its node) arrive at about the leader's dynamic rate of
// 1 MiB/s; the rate changed to 256 KiB/s (AlterBrokerConfigs, as kafka-configs --alter
// --entity-type brokers does) reaches the leader within a few heartbeats and the bytes then arrive
// at about 256 KiB/s; the config deleted (unthrottled) lets the move complete. Every rate measured
// over a window of seconds is within [0.6, 1.3] of the rate in effect; the producer has no error
// and a consumer reads every acknowledged record.
import type { Admin, Spool } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { startFrontEnds, type FrontEnds } from './support/front-ends';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'moving';
const throttleConfig = 'leader.replication.throttled.rate';
const fastBytesPerSecond = 1024 * 1024;
const slowBytesPerSecond = 256 * 1024;
/** The partition's size when the move starts: more than both windows can move. */
const batchCount = 64;
const batchRecords = 16;
const recordBytes = 8 * 1024;
/** A measured rate is within these factors of the rate in effect. */
const rateFactorMin = 0.6;
const rateFactorMax = 1.3;

let storage: StorageTestCluster;
let frontEnds: FrontEnds | undefined;
let spool: Spool;
let admin: Admin;

beforeAll(async () => {
  // Small fetches (64 KiB per partition), so the throttle's rate shows within a second's window
  // rather than in 1 MiB steps.
  storage = await StorageTestCluster.start(3, { nodeArgs: ['--replica-fetch-max-bytes', '65536'] });
  frontEnds = await startFrontEnds(storage, 'replication-throttle-spec');
  ({ spool, admin } = frontEnds);
}, 90_000);

afterAll(async () => {
  await frontEnds?.stop();
  await storage?.stop();
});

async function metric(brokerId: number, pattern: RegExp): Promise<number> {
  const port = storage.processOf(brokerId).metricsPort;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const match = pattern.exec(text);
  if (match === null) throw new Error(`no ${pattern} on broker ${brokerId}`);
  return Number(match[1]);
}

const bytesIn = (brokerId: number): Promise<number> =>
  metric(brokerId, /^spool_reassignment_bytes_in_total(?:\{[^}]*\})? (\S+)$/m);
const leaderRate = (brokerId: number): Promise<number> =>
  metric(brokerId, /^spool_replication_throttled_rate_bytes\{[^}]*side="leader"[^}]*\} (\S+)$/m);

async function setLeaderRate(brokerId: number, rate: number | undefined): Promise<void> {
  const response = await storage.admin.call(storage.admin.client.alterBrokerConfigs, {
    brokers: [
      rate === undefined
        ? { broker: String(brokerId), set: [], delete: [throttleConfig] }
        : {
            broker: String(brokerId),
            set: [{ name: throttleConfig, value: String(rate), isDefault: false }],
            delete: [],
          },
    ],
    validateOnly: false,
  });
  expect(response.results[0]!.error).toBeUndefined();
}

/** Bytes the new replica received over `windowMs`, per second. */
async function measuredRate(brokerId: number, windowMs: number): Promise<number> {
  const startBytes = await bytesIn(brokerId);
  const startedMs = Date.now();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const bytes = (await bytesIn(brokerId)) - startBytes;
  return (bytes * 1_000) / (Date.now() - startedMs);
}

describe('leader.replication.throttled.rate changed during a reassignment', () => {
  it('holds the moving bytes to each new rate while an acks=all producer writes', async () => {
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
    const [created] = await admin.describeTopics({ topics: [topic] });
    const leader = created!.partitions[0]!.replicas[0]!;
    const target = (leader + 1) % 3;
    const filler = spool.producer({ acks: 'all', lingerMs: 0 });
    try {
      for (let batch = 0; batch < batchCount; batch++) {
        await filler.send({
          topic,
          messages: Array.from({ length: batchRecords }, () => ({
            value: Buffer.alloc(recordBytes, batch),
          })),
        });
      }
    } finally {
      await filler.disconnect();
    }

    await setLeaderRate(leader, fastBytesPerSecond);
    await eventually(async () => {
      expect(await leaderRate(leader)).toBe(fastBytesPerSecond);
    }, 10_000);

    // The producer: one small record every 20 ms into the moving partition, acks=all.
    const producer = spool.producer({ acks: 'all', lingerMs: 0, requestTimeoutMs: 10_000 });
    const acknowledged = new Set<string>();
    const failures: string[] = [];
    let producing = true;
    const production = (async () => {
      for (let sequence = 0; producing && sequence < 10_000; sequence++) {
        const value = `record-${sequence}`;
        try {
          await producer.send({ topic, messages: [{ key: value, value }] });
          acknowledged.add(value);
        } catch (error) {
          failures.push(String(error));
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    try {
      await admin.alterPartitionReassignments({
        topics: [{ topic, partitions: [{ partition: 0, replicas: [leader, target] }] }],
      });
      // The bucket starts full (one second of the rate goes at once): measure after it.
      await eventually(async () => {
        expect(await bytesIn(target)).toBeGreaterThan(fastBytesPerSecond * 1.25);
      }, 10_000);
      const fastRate = await measuredRate(target, 2_000);

      const changedMs = Date.now();
      await setLeaderRate(leader, slowBytesPerSecond);
      await eventually(async () => {
        expect(await leaderRate(leader)).toBe(slowBytesPerSecond);
      }, 10_000);
      const appliedMs = Date.now() - changedMs;
      // The tokens taken at the fast rate are kept: let them run out before measuring.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const slowRate = await measuredRate(target, 3_000);
      const [moving] = await admin.describeTopics({ topics: [topic] });
      expect(moving!.partitions[0]!.addingReplicas).toEqual([target]);

      await setLeaderRate(leader, undefined);
      await eventually(async () => {
        const [now] = await admin.describeTopics({ topics: [topic] });
        const partition = now!.partitions[0]!;
        expect(partition.addingReplicas).toEqual([]);
        expect([...partition.isr].sort()).toEqual([leader, target].sort());
      }, 30_000);
      process.stdout.write(
        `[replication-throttle] ${fastBytesPerSecond} B/s: moved at ${Math.round(fastRate)} B/s; ` +
          `${slowBytesPerSecond} B/s applied on the leader after ${appliedMs} ms, moved at ` +
          `${Math.round(slowRate)} B/s\n`,
      );
      expect(fastRate).toBeGreaterThanOrEqual(fastBytesPerSecond * rateFactorMin);
      expect(fastRate).toBeLessThanOrEqual(fastBytesPerSecond * rateFactorMax);
      expect(slowRate).toBeGreaterThanOrEqual(slowBytesPerSecond * rateFactorMin);
      expect(slowRate).toBeLessThanOrEqual(slowBytesPerSecond * rateFactorMax);
    } finally {
      producing = false;
      await production;
      await producer.disconnect();
    }
    expect(failures).toEqual([]);
    expect(acknowledged.size).toBeGreaterThan(100);

    const consumer = spool.consumer({ groupId: 'throttle-check', requestTimeoutMs: 5_000 });
    const seen = new Set<string>();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const value = message.value?.toString() ?? '';
          if (value.startsWith('record-')) seen.add(value);
        },
      });
      await eventually(async () => {
        expect([...acknowledged].filter((value) => !seen.has(value))).toEqual([]);
      }, 30_000);
    } finally {
      await consumer.disconnect();
    }
  }, 120_000);
});
