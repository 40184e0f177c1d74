// Proves the gateway end to end with real processes on loopback (a controller, three storage
// nodes and a gateway, all from the built output): a topic created through it (6 partitions,
// RF 3) is served by its leaders; one Produce writes batches to several partitions and Fetch
// returns them byte for byte (only the base offset and leader epoch the leader stamps differ);
// a long poll over two leaders answers as soon as one of them gets data; a Consume stream with small credit pauses when the credit is used up and resumes when more is
// granted, pushes new batches as they arrive and ends cleanly; a corrupted batch is refused with
// CORRUPT_MESSAGE and leaves the leader's log end where it was; an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; and after a partition leader is SIGKILLed a produce still succeeds
// once the gateway follows the new leader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Acks, OffsetSpec, type FetchedPartition } from '@spool/protocol';
import {
  decodeRecordBatches,
  encodeRecordBatch,
  recordBatchSizeBytes,
  setBaseOffset,
  setPartitionLeaderEpoch,
} from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { GatewayTestClient, startGatewayProcess } from './support/gateway-client';
import type { ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'events';
let cluster: StorageTestCluster;
let gateway: ServiceProcess;
let client: GatewayTestClient;

beforeAll(async () => {
  // A dead follower leaves the ISR within 2 s, so acks=all keeps working after the SIGKILL.
  cluster = await StorageTestCluster.start(3, { nodeArgs: ['--replica-lag-time-max-ms', '2000'] });
  gateway = await startGatewayProcess(cluster.controller.grpcPort);
  client = new GatewayTestClient(`127.0.0.1:${gateway.grpcPort}`);
}, 60_000);

afterAll(async () => {
  client?.close();
  gateway?.child.kill('SIGKILL');
  await gateway?.exited;
  await cluster?.stop();
});

function batch(label: string, count: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: Array.from({ length: count }, (_, index) => ({
      key: Buffer.from(`key-${index}`),
      value: Buffer.from(`${label}-${index}`),
      headers: [{ key: 'label', value: Buffer.from(label) }],
      timestampMs: 1_700_000_000_000n + BigInt(index),
    })),
  });
}

/** Fetched batches as the producer sent them: base offset 0 and no leader epoch. */
function asProduced(fetched: Buffer): Buffer {
  const copy = Buffer.from(fetched);
  for (let position = 0; position < copy.length; position += recordBatchSizeBytes(copy, position)) {
    setBaseOffset(copy, position, 0n);
    setPartitionLeaderEpoch(copy, position, -1);
  }
  return copy;
}

function decodedValues(records: Buffer): Array<{ offset: bigint; key: string; value: string }> {
  return decodeRecordBatches(records).flatMap((decoded) =>
    decoded.records.map((record) => ({
      offset: record.offset,
      key: record.key!.toString(),
      value: record.value!.toString(),
    })),
  );
}

function produce(partitions: Array<{ partition: number; records: Buffer }>, timeoutMs = 10_000) {
  return client.call(client.client.produce, {
    partitions: partitions.map((entry) => ({ topic, ...entry })),
    acks: Acks.ACKS_ALL,
    timeoutMs,
  });
}

async function fetchFromStart(partitions: number[]): Promise<FetchedPartition[]> {
  const response = await client.call(client.client.fetch, {
    partitions: partitions.map((partition) => ({
      topic,
      partition,
      fetchOffset: 0n,
      partitionMaxBytes: 1 << 20,
    })),
    maxWaitMs: 1_000,
    minBytes: 1,
    maxBytes: 4 << 20,
  });
  return response.partitions;
}

/** The leader's log end offset of a partition, read from its data port. */
async function logEndOffsetOf(partition: number): Promise<bigint> {
  const data = await cluster.dataClient(await cluster.leaderOf(topic, partition));
  try {
    const response = await data.fetch(
      {
        replicaId: -1,
        brokerEpoch: -1n,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1024,
        partitions: [
          {
            topic,
            partition,
            fetchOffset: 0n,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1024,
          },
        ],
      },
      { timeoutMs: 5_000 },
    );
    return response.partitions[0]!.logEndOffset;
  } finally {
    await data.close();
  }
}

describe('gateway', () => {
  it('creates a topic whose every partition is then served by its leader', async () => {
    const created = await client.call(client.client.createTopics, {
      topics: [{ name: topic, numPartitions: 6, replicationFactor: 3, configs: [] }],
      validateOnly: false,
    });
    expect(created.results[0]!.error).toBeUndefined();
    const described = await client.call(client.client.describeTopics, { names: [topic] });
    const partitions = described.topics[0]!.topic!.partitions;
    expect(partitions).toHaveLength(6);
    expect(partitions.every((partition) => partition.replicas.length === 3)).toBe(true);
    await eventually(async () => {
      const offsets = await client.call(client.client.listOffsets, {
        partitions: partitions.map(({ partition }) => ({
          topic,
          partition,
          spec: OffsetSpec.OFFSET_SPEC_LATEST,
          timestampMs: 0n,
        })),
      });
      expect(offsets.results.map((result) => [result.error?.code, result.offset])).toEqual(
        partitions.map(() => [undefined, 0n]),
      );
    }, 20_000);
  });

  it('produces to several partitions in one request and fetches the same bytes back', async () => {
    const sent = new Map([
      [0, Buffer.concat([batch('zero-a', 3), batch('zero-b', 2)])],
      [1, batch('one', 1)],
      [3, batch('three', 4)],
    ]);
    const response = await produce(
      [...sent].map(([partition, records]) => ({ partition, records })),
    );
    expect(
      response.results.map((result) => [
        result.partition,
        result.error,
        result.baseOffset,
        result.lastOffset,
      ]),
    ).toEqual([
      [0, undefined, 0n, 4n],
      [1, undefined, 0n, 0n],
      [3, undefined, 0n, 3n],
    ]);

    const fetched = await fetchFromStart([...sent.keys()]);
    for (const partition of fetched) {
      const produced = sent.get(partition.partition)!;
      expect(partition.error).toBeUndefined();
      expect(partition.highWatermark).toBe(BigInt(decodedValues(produced).length));
      expect(asProduced(partition.records).equals(produced)).toBe(true);
      expect(decodedValues(partition.records)).toEqual(
        decodedValues(produced).map((record, index) => ({ ...record, offset: BigInt(index) })),
      );
    }
  });

  it('answers a long poll as soon as one of several leaders has data', async () => {
    // Two partitions written above, led by different brokers, fetched at their log ends.
    const quiet = 0;
    const quietLeader = await cluster.leaderOf(topic, quiet);
    let busy = -1;
    for (const partition of [1, 3]) {
      if ((await cluster.leaderOf(topic, partition)) !== quietLeader) {
        busy = partition;
        break;
      }
    }
    expect(busy).toBeGreaterThan(0);
    const ends = new Map([
      [quiet, 5n],
      [busy, busy === 1 ? 1n : 4n],
    ]);
    const startedMs = Date.now();
    const polling = client.call(client.client.fetch, {
      partitions: [quiet, busy].map((partition) => ({
        topic,
        partition,
        fetchOffset: ends.get(partition)!,
        partitionMaxBytes: 1 << 20,
      })),
      maxWaitMs: 10_000,
      minBytes: 1,
      maxBytes: 1 << 20,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      (await produce([{ partition: busy, records: batch('wake-up', 1) }])).results[0]!.error,
    ).toBeUndefined();
    const [quietAnswer, busyAnswer] = (await polling).partitions;
    expect(Date.now() - startedMs).toBeLessThan(5_000);
    expect(decodedValues(busyAnswer!.records).map((record) => record.value)).toEqual(['wake-up-0']);
    // The quiet leader's poll was abandoned; its partition keeps the first read's answer.
    expect(quietAnswer).toMatchObject({ error: undefined, highWatermark: ends.get(quiet) });
    expect(quietAnswer!.records.length).toBe(0);
  });

  it('pauses a Consume stream when its credit is used up and resumes with more', async () => {
    const batches = Array.from({ length: 5 }, (_, index) => batch(`consume-${index}`, 2));
    const batchBytes = batches[0]!.length;
    expect(batches.every((entry) => entry.length === batchBytes)).toBe(true);
    const produced = await produce([{ partition: 2, records: Buffer.concat(batches) }]);
    expect(produced.results[0]!.error).toBeUndefined();

    const stream = client.consume(
      [{ topic, partition: 2, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }],
      BigInt(2 * batchBytes),
    );
    await eventually(async () => expect(stream.receivedBytes).toBe(2 * batchBytes), 10_000);
    // The credit is used up: nothing more comes while five batches wait at the leader.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(stream.receivedBytes).toBe(2 * batchBytes);

    stream.grant(BigInt(2 * batchBytes));
    await eventually(async () => expect(stream.receivedBytes).toBe(4 * batchBytes), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(stream.receivedBytes).toBe(4 * batchBytes);

    // More credit than there is data: the last batch, then a batch produced while it waits.
    stream.grant(BigInt(10 * batchBytes));
    await eventually(async () => expect(stream.receivedBytes).toBe(5 * batchBytes), 10_000);
    const late = batch('consume-5', 2);
    expect((await produce([{ partition: 2, records: late }])).results[0]!.error).toBeUndefined();
    await eventually(async () => expect(stream.receivedBytes).toBe(6 * batchBytes), 10_000);

    const records = Buffer.concat(stream.records());
    expect(asProduced(records).equals(Buffer.concat([...batches, late]))).toBe(true);
    expect(decodedValues(records).map((record) => record.offset)).toEqual(
      Array.from({ length: 12 }, (_, index) => BigInt(index)),
    );
    stream.end();
    expect(await stream.ended).toBeUndefined();
  });

  it('refuses a corrupted batch with CORRUPT_MESSAGE and writes nothing', async () => {
    expect(
      (await produce([{ partition: 4, records: batch('intact', 2) }])).results[0]!.error,
    ).toBeUndefined();
    const logEndBefore = await logEndOffsetOf(4);
    expect(logEndBefore).toBe(2n);

    const corrupted = batch('corrupted', 2);
    corrupted[corrupted.length - 3]! ^= 0x01;
    const response = await produce([
      { partition: 4, records: corrupted },
      { partition: 5, records: batch('neighbour', 1) },
    ]);
    expect(response.results[0]!.error).toMatchObject({ code: 'CORRUPT_MESSAGE', retriable: true });
    expect(response.results[0]!.error!.message).toMatch(/^events-4: .*crc/);
    // The other partition of the request is written all the same.
    expect(response.results[1]!.error).toBeUndefined();
    expect(await logEndOffsetOf(4)).toBe(logEndBefore);
  });

  it('answers an unknown topic with UNKNOWN_TOPIC_OR_PARTITION naming it', async () => {
    const produced = await client.call(client.client.produce, {
      partitions: [{ topic: 'no-such-topic', partition: 0, records: batch('lost', 1) }],
      acks: Acks.ACKS_ALL,
      timeoutMs: 5_000,
    });
    expect(produced.results[0]!.error).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(produced.results[0]!.error!.message).toContain('"no-such-topic"');
    const fetched = await client.call(client.client.fetch, {
      partitions: [{ topic: 'no-such-topic', partition: 0, fetchOffset: 0n, partitionMaxBytes: 0 }],
      maxWaitMs: 100,
      minBytes: 1,
      maxBytes: 0,
    });
    expect(fetched.partitions[0]!.error?.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('keeps producing after a partition leader is SIGKILLed', async () => {
    const before = await fetchFromStart([5]);
    const recordsBefore = decodedValues(before[0]!.records).length;
    const leader = await cluster.leaderOf(topic, 5);
    await cluster.stopNode(leader, 'SIGKILL');

    const response = await produce([{ partition: 5, records: batch('after-kill', 2) }], 30_000);
    expect(response.results[0]!.error).toBeUndefined();
    expect(response.results[0]!.baseOffset).toBe(BigInt(recordsBefore));
    const newLeader = await cluster.leaderOf(topic, 5);
    expect(newLeader).not.toBe(leader);
    expect(newLeader).toBeGreaterThanOrEqual(0);

    const after = await fetchFromStart([5]);
    expect(decodedValues(after[0]!.records).map((record) => record.value)).toEqual([
      ...decodedValues(before[0]!.records).map((record) => record.value),
      'after-kill-0',
      'after-kill-1',
    ]);
  });
});
