// Proves the storage node's data path with real processes on loopback (a controller and two
// storage nodes): batches appended through gRPC come back byte for byte through the data port
// (sendfile), offsets list as Kafka's do, a request with one bad batch writes nothing, a fetch at
// the log end long-polls (returns after maxWait with nothing, at once when a batch arrives), a
// malformed data-port frame closes only its own connection, and data survives a clean restart
// and a SIGKILL, each start logging its recovery report.
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callOnce } from '@spool/common';
import { Acks } from '@spool/protocol';
import { encodeRecordBatch, setBaseOffset, setPartitionLeaderEpoch } from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { StorageTestCluster } from './support/storage-cluster';

let cluster: StorageTestCluster;
beforeAll(async () => {
  cluster = await StorageTestCluster.start(2);
  await cluster.createTopic('orders', 2, 1);
}, 60_000);
afterAll(async () => cluster?.stop());

function batch(label: string, count: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: Array.from({ length: count }, (_, index) => ({
      key: Buffer.from(`key-${index}`),
      value: Buffer.from(`${label}-${index}`),
      timestampMs: BigInt(Date.now()),
    })),
  });
}

/** What the leader stores for a produced batch: the same bytes with offset and epoch patched. */
function stored(bytes: Buffer, baseOffset: bigint, leaderEpoch: number): Buffer {
  const copy = Buffer.from(bytes);
  setBaseOffset(copy, 0, baseOffset);
  setPartitionLeaderEpoch(copy, 0, leaderEpoch);
  return copy;
}

async function fetchAll(topic: string, partition: number, fetchOffset = 0n, maxWaitMs = 0) {
  const leader = await cluster.leaderOf(topic, partition);
  const client = await cluster.dataClient(leader);
  try {
    const response = await client.fetch(
      {
        replicaId: -1,
        brokerEpoch: -1n,
        maxWaitMs,
        minBytes: 1,
        maxBytes: 1 << 20,
        partitions: [
          {
            topic,
            partition,
            fetchOffset,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          },
        ],
      },
      { timeoutMs: maxWaitMs + 5_000 },
    );
    return response.partitions[0]!;
  } finally {
    client.close();
  }
}

const appended: Buffer[] = [];

describe('storage node', () => {
  it('appends through gRPC and fetches the same bytes back through the data port', async () => {
    const described = await cluster.admin.call(cluster.admin.client.describeTopics, {
      names: ['orders'],
    });
    const leaderEpoch = described.topics[0]!.topic!.partitions[0]!.leaderEpoch;
    let nextOffset = 0n;
    for (const [index, count] of [3, 1, 5].entries()) {
      const bytes = batch(`b${index}`, count);
      const response = await cluster.append('orders', 0, bytes, Acks.ACKS_ALL);
      const result = response.results[0]!;
      expect(result.error).toBeUndefined();
      expect(result.baseOffset).toBe(nextOffset);
      appended.push(stored(bytes, nextOffset, leaderEpoch));
      nextOffset += BigInt(count);
    }
    const fetched = await fetchAll('orders', 0);
    expect(fetched.errorCode).toBe('');
    expect(fetched.highWatermark).toBe(9n);
    expect(fetched.records.equals(Buffer.concat(appended))).toBe(true);
  });

  it('lists offsets: earliest, latest (the high watermark) and by timestamp', async () => {
    const leader = await cluster.leaderOf('orders', 0);
    const client = cluster.storageClient(leader);
    try {
      const response = await callOnce(client, client.listOffsets, {
        partitions: [
          { topic: 'orders', partition: 0, spec: 1, timestampMs: 0n },
          { topic: 'orders', partition: 0, spec: 2, timestampMs: 0n },
          { topic: 'orders', partition: 0, spec: 3, timestampMs: 0n },
          { topic: 'orders', partition: 0, spec: 3, timestampMs: BigInt(Date.now() + 60_000) },
        ],
      });
      expect(response.results.map((result) => result.offset)).toEqual([0n, 9n, 0n, -1n]);
    } finally {
      client.close();
    }
  });

  it('writes nothing from a request with one bad batch, and names the problem', async () => {
    const corrupt = batch('bad', 2);
    corrupt[corrupt.length - 1]! ^= 0xff;
    const response = await cluster.append('orders', 0, Buffer.concat([batch('good', 2), corrupt]));
    expect(response.results[0]!.error?.code).toBe('CORRUPT_MESSAGE');
    expect(response.results[0]!.error?.message).toMatch(/crc/);
    expect((await fetchAll('orders', 0)).highWatermark).toBe(9n);
  });

  it('refuses appends on a node that does not lead the partition', async () => {
    const leader = await cluster.leaderOf('orders', 0);
    const other = leader === 0 ? 1 : 0;
    const client = cluster.storageClient(other);
    try {
      const response = await callOnce(client, client.append, {
        partitions: [{ topic: 'orders', partition: 0, records: batch('x', 1) }],
        acks: Acks.ACKS_LEADER,
        timeoutMs: 1_000,
      });
      expect(response.results[0]!.error?.code).toBe('NOT_LEADER_OR_FOLLOWER');
    } finally {
      client.close();
    }
  });

  it('long-polls at the log end: waits maxWait for nothing, returns at once for new data', async () => {
    const startedAt = Date.now();
    const empty = await fetchAll('orders', 0, 9n, 600);
    const waitedMs = Date.now() - startedAt;
    expect(empty.records.length).toBe(0);
    expect(waitedMs).toBeGreaterThanOrEqual(550);
    expect(waitedMs).toBeLessThan(3_000);

    const pollStartedAt = Date.now();
    const poll = fetchAll('orders', 0, 9n, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const bytes = batch('late', 2);
    const leaderEpoch = (
      await cluster.admin.call(cluster.admin.client.describeTopics, { names: ['orders'] })
    ).topics[0]!.topic!.partitions[0]!.leaderEpoch;
    await cluster.append('orders', 0, bytes, Acks.ACKS_LEADER);
    appended.push(stored(bytes, 9n, leaderEpoch));
    const woken = await poll;
    expect(Date.now() - pollStartedAt).toBeLessThan(3_000);
    expect(woken.records.equals(appended.at(-1)!)).toBe(true);
  });

  it('closes only the connection that sent a malformed frame', async () => {
    const leader = await cluster.leaderOf('orders', 0);
    const good = await cluster.dataClient(leader);
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const socket = net.connect(cluster.nodes.get(leader)!.dataPort, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('close', () => resolve(Buffer.concat(chunks)));
      socket.on('error', reject);
      socket.write(Buffer.from([0, 0, 0, 12, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 9, 9, 9, 9]));
    });
    expect(
      reply.includes(Buffer.from('UNSUPPORTED_VERSION')) ||
        reply.includes(Buffer.from('INVALID_REQUEST')),
    ).toBe(true);
    const fetched = await good.fetch(
      {
        replicaId: -1,
        brokerEpoch: -1n,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        partitions: [
          {
            topic: 'orders',
            partition: 0,
            fetchOffset: 0n,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          },
        ],
      },
      { timeoutMs: 5_000 },
    );
    expect(fetched.partitions[0]!.records.equals(Buffer.concat(appended))).toBe(true);
    good.close();
  });

  it('keeps every byte across a clean restart and a SIGKILL, logging each recovery', async () => {
    const leader = await cluster.leaderOf('orders', 0);
    expect(await cluster.stopNode(leader, 'SIGTERM')).toBe(0);
    const clean = await cluster.startNode(leader);
    expect(
      clean.logLines.some(
        (line) => line.includes('"msg":"local logs open') && line.includes('"cleanShutdown":true'),
      ),
    ).toBe(true);
    await eventually(
      async () =>
        expect((await fetchAll('orders', 0)).records.equals(Buffer.concat(appended))).toBe(true),
      10_000,
    );

    expect(await cluster.stopNode(leader, 'SIGKILL')).toBe('SIGKILL');
    const recovered = await cluster.startNode(leader);
    expect(
      recovered.logLines.some(
        (line) => line.includes('"msg":"log recovered"') && line.includes('"bytesTruncated":0'),
      ),
    ).toBe(true);
    await eventually(
      async () =>
        expect((await fetchAll('orders', 0)).records.equals(Buffer.concat(appended))).toBe(true),
      10_000,
    );
    expect(recovered.logLines.some((line) => line.includes('fetch transfer path: sendfile'))).toBe(
      true,
    );
  });
});
