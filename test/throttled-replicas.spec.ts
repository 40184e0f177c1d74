// Proves Kafka's rule for follower.replication.throttled.replicas on real processes (a controller
// and two storage nodes): broker 1, stopped while broker 0 takes 1.5 MiB into each of two
// partitions, restarts with follower.replication.throttled.rate 256 KiB/s and catches up out of
// the ISR, no reassignment anywhere. The partition of the topic whose list is "*" catches up at
// the throttle's rate (seconds; the node counts its throttled waits), the unlisted topic's
// partition at full speed (back in the ISR first), and no byte counts as reassignment traffic.
import { Acks } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { scrape, sumOf } from './support/prometheus-scrape';
import { StorageTestCluster } from './support/storage-cluster';

const rateBytesPerSecond = 256 * 1024;
const appendCount = 24;
const recordBytes = 64 * 1024;
/** 1.5 MiB: at 256 KiB/s, about five seconds past the throttle's first second of tokens. */
const partitionBytes = appendCount * recordBytes;

let storage: StorageTestCluster;

beforeAll(async () => {
  storage = await StorageTestCluster.start(2, {
    nodeArgs: ['--replica-fetch-max-bytes', '65536'],
  });
}, 60_000);

afterAll(async () => {
  await storage?.stop();
});

async function isrOf(topic: string): Promise<number[]> {
  const described = await storage.admin.call(storage.admin.client.describeTopics, {
    names: [topic],
  });
  return described.topics[0]!.topic!.partitions[0]!.isr;
}

describe('follower.replication.throttled.replicas', () => {
  it('throttles a listed partition catching up after a restart, and not an unlisted one', async () => {
    await storage.createTopic('listed', 1, 2, [
      { name: 'follower.replication.throttled.replicas', value: '*' },
    ]);
    await storage.createTopic('unlisted', 1, 2);
    await storage.stopNode(1);
    for (const topic of ['listed', 'unlisted']) {
      await eventually(async () => expect(await isrOf(topic)).toEqual([0]), 20_000);
      for (let append = 0; append < appendCount; append++) {
        const response = await storage.append(
          topic,
          0,
          encodeRecordBatch({
            baseOffset: 0n,
            records: [{ key: null, value: Buffer.alloc(recordBytes, append), timestampMs: 0n }],
          }),
          Acks.ACKS_LEADER,
        );
        expect(response.results[0]!.error).toBeUndefined();
      }
    }

    // The node reports ready once its replicas caught up (replica sync readiness): the ISR is
    // watched while it starts.
    const restartedMs = Date.now();
    const started = storage.startNode(1, {
      extraArgs: ['--follower-replication-throttled-rate', String(rateBytesPerSecond)],
    });
    const caughtUpMs = new Map<string, number>();
    await eventually(async () => {
      for (const topic of ['listed', 'unlisted']) {
        if (!caughtUpMs.has(topic) && (await isrOf(topic)).includes(1)) {
          caughtUpMs.set(topic, Date.now() - restartedMs);
        }
      }
      expect([...caughtUpMs.keys()].sort()).toEqual(['listed', 'unlisted']);
    }, 60_000);
    await started;

    const scraped = await scrape(storage.processOf(1).metricsPort);
    const timing = `caught up after ${JSON.stringify(Object.fromEntries(caughtUpMs))} ms`;
    // The throttle's bucket starts with a second of tokens; the rest waits for the rate.
    const throttledMinMs = ((partitionBytes - rateBytesPerSecond) / rateBytesPerSecond) * 1_000;
    expect(caughtUpMs.get('listed')!, timing).toBeGreaterThan(0.6 * throttledMinMs);
    expect(caughtUpMs.get('unlisted')!, timing).toBeLessThan(caughtUpMs.get('listed')!);
    expect(sumOf([scraped], 'spool_reassignment_throttled_total')).toBeGreaterThan(0);
    expect(sumOf([scraped], 'spool_reassignment_bytes_in_total')).toBe(0);
  }, 120_000);
});
