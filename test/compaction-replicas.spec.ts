// Proves that replicas compact on their own and agree, with three real storage nodes: a compacted
// topic (replication factor 3, small segments, a cleaner that runs every 100 ms) takes keyed
// records overwriting a few keys many times, with a tombstone; once every node's cleaner has
// cleaned past half of the log (its cleaner-offset-checkpoint) and its metrics show the cleaning,
// one follower's data directory is wiped and it copies the leader's compacted log (offsets with
// gaps) until it is back in the ISR; then the nodes stop cleanly
// and their logs are read from disk. Each replica must hold one record per key below its own
// cleaning point (it compacted), every key's latest record (value or tombstone) at its produced
// offset, and, record by record, the same records above the highest cleaning point (the
// uncleaned tail); the two that cleaned all along, the same latest value per key below the
// lower of their cleaning points.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import { Acks } from '@spool/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { scrape, sumOf } from './support/prometheus-scrape';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'changelog';
const keyCount = 12;
/** appendCount: produce calls, each a batch of recordsPerAppend records; about 40 KiB in all. */
const appendCount = 80;
const recordsPerAppend = 8;

let cluster: StorageTestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

interface DiskRecord {
  readonly offset: bigint;
  readonly key: string;
  readonly value: string | null;
}

function recordsOnDisk(dataDir: string): DiskRecord[] {
  const folder = path.join(dataDir, `${topic}-0`);
  const bytes = Buffer.concat(
    readdirSync(folder)
      .filter((name) => name.endsWith('.log'))
      .sort()
      .map((name) => readFileSync(path.join(folder, name))),
  );
  return decodeRecordBatches(bytes).flatMap((batch) =>
    batch.records.map((record) => ({
      offset: record.offset,
      key: record.key?.toString() ?? '',
      value: record.value?.toString() ?? null,
    })),
  );
}

/** The node's cleaner checkpoint entry for the topic's partition 0; undefined without one. */
function cleaningPointOf(dataDir: string): bigint | undefined {
  try {
    const lines = readFileSync(path.join(dataDir, 'cleaner-offset-checkpoint'), 'utf8').split('\n');
    const entry = lines.find((line) => line.startsWith(`${topic} 0 `));
    return entry === undefined ? undefined : BigInt(entry.split(' ')[2]!);
  } catch {
    return undefined;
  }
}

function latestByKey(records: readonly DiskRecord[], below: bigint): Map<string, DiskRecord> {
  const latest = new Map<string, DiskRecord>();
  for (const record of records) if (record.offset < below) latest.set(record.key, record);
  return latest;
}

describe('compacted topic replicas', () => {
  it('compact on their own and agree on every key below the cleaning point', async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--log-cleaner-backoff-ms', '100'],
    });
    await cluster.createTopic(topic, 1, 3, [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'segment.bytes', value: '4096' },
      { name: 'min.cleanable.dirty.ratio', value: '0.01' },
    ]);
    const produced = new Map<bigint, DiskRecord>();
    for (let append = 0; append < appendCount; append++) {
      const records = Array.from({ length: recordsPerAppend }, (_, index) => {
        const key = `key-${(append * recordsPerAppend + index) % keyCount}`;
        // One tombstone, late enough that no later record of its key follows it.
        const tombstone = append === appendCount - 1 && index === 0;
        return {
          key: Buffer.from(key),
          value: tombstone ? null : Buffer.from(`${key}@${append}.${index}`),
          timestampMs: BigInt(Date.now()),
        };
      });
      const response = await cluster.append(
        topic,
        0,
        encodeRecordBatch({ baseOffset: 0n, records }),
        Acks.ACKS_ALL,
      );
      const result = response.results[0]!;
      expect(result.error).toBeUndefined();
      records.forEach((record, index) =>
        produced.set(result.baseOffset + BigInt(index), {
          offset: result.baseOffset + BigInt(index),
          key: record.key.toString(),
          value: record.value?.toString() ?? null,
        }),
      );
    }
    const recordCount = BigInt(appendCount * recordsPerAppend);

    const brokers = [0, 1, 2];
    await eventually(async () => {
      for (const brokerId of brokers) {
        const point = cleaningPointOf(cluster!.dataDirOf(brokerId)) ?? 0n;
        expect(point, `node ${brokerId}'s cleaning point`).toBeGreaterThan(recordCount / 2n);
      }
    }, 30_000);
    // Each node's metrics show its cleaning: bytes read and records removed, and the partition's
    // cleaning point as its checkpoint has it.
    for (const brokerId of brokers) {
      const scraped = [await scrape(cluster.nodes.get(brokerId)!.process.metricsPort)];
      expect(sumOf(scraped, 'spool_log_cleaner_bytes_read_total')).toBeGreaterThan(0);
      expect(sumOf(scraped, 'spool_log_cleaner_records_removed_total')).toBeGreaterThan(0);
      expect(sumOf(scraped, 'spool_log_cleaner_uncleanable_partitions')).toBe(0);
      expect(
        sumOf(scraped, 'spool_log_cleaner_partition_first_dirty_offset', { topic, partition: '0' }),
      ).toBeGreaterThan(0);
    }
    // A follower that lost its disk copies the leader's compacted log, gaps and all, and rejoins
    // the ISR; its own cleaner then compacts what it copied.
    const leader = await cluster.leaderOf(topic, 0);
    const wiped = brokers.find((brokerId) => brokerId !== leader)!;
    expect(await cluster.stopNode(wiped, 'SIGTERM')).toBe(0);
    rmSync(cluster.dataDirOf(wiped), { recursive: true, force: true });
    await cluster.startNode(wiped);
    await eventually(async () => {
      const described = await cluster!.admin.call(cluster!.admin.client.describeTopics, {
        names: [topic],
      });
      expect(described.topics[0]!.topic!.partitions[0]!.isr).toHaveLength(3);
    }, 30_000);
    for (const brokerId of brokers) {
      expect(await cluster.stopNode(brokerId, 'SIGTERM')).toBe(0);
    }

    const replicas = brokers.map((brokerId) => {
      const dataDir = cluster!.dataDirOf(brokerId);
      // The wiped follower copied an already compacted log: its cleaning point, if it has one,
      // says nothing of what was removed before it copied.
      return {
        records: recordsOnDisk(dataDir),
        cleaningPoint: cleaningPointOf(dataDir) ?? 0n,
        wiped: brokerId === wiped,
      };
    });
    const latestProduced = latestByKey([...produced.values()], recordCount);
    for (const { records, cleaningPoint } of replicas) {
      // Compacted: one record per key below its cleaning point, each exactly as produced.
      const cleaned = records.filter((record) => record.offset < cleaningPoint);
      expect(new Set(cleaned.map((record) => record.key)).size).toBe(cleaned.length);
      for (const record of records) expect(record).toEqual(produced.get(record.offset));
      // Kafka's guarantee: every key's latest record, tombstone included.
      for (const latest of latestProduced.values()) expect(records).toContainEqual(latest);
    }
    const cleaned = replicas.filter((replica) => !replica.wiped);
    const lowest = cleaned.reduce(
      (point, replica) => (replica.cleaningPoint < point ? replica.cleaningPoint : point),
      recordCount,
    );
    const highest = cleaned.reduce(
      (point, replica) => (replica.cleaningPoint > point ? replica.cleaningPoint : point),
      0n,
    );
    const [first, ...others] = replicas;
    const tail = (records: readonly DiskRecord[]) =>
      records.filter((record) => record.offset >= highest);
    for (const other of others) {
      if (!other.wiped && !first!.wiped) {
        expect(latestByKey(other.records, lowest)).toEqual(latestByKey(first!.records, lowest));
      }
      expect(tail(other.records)).toEqual(tail(first!.records));
    }
  }, 60_000);
});
