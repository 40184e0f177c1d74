// The contract the SDK relies on from a gateway, as one suite that runs against the fake gateway
// (fake-gateway.spec.ts, in memory) and against a real one (test/gateway-contract.spec.ts, real
// processes), so the fake the SDK's specs run against cannot drift from the real service without
// a test failing: topics created through the gateway, records produced and consumed back in order
// with their offsets, keys, values and headers, each partition's offsets, a group member that
// gets every partition and commits, what DescribeGroup and DeleteGroup answer, and the error
// codes of a missing topic and a missing group. Kept small: the real run costs seconds.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Spool, type Admin, type Consumer, type SpoolError } from '../index';

export interface GatewayContractBackend {
  /** host:port of the gateway's gRPC listener, for `brokers`. */
  readonly address: string;
  /** Stops whatever the backend started. */
  stop(): Promise<void>;
}

interface Received {
  readonly partition: number;
  readonly offset: bigint;
  readonly key: string | undefined;
  readonly value: string | undefined;
  readonly headers: string[];
}

/** Bounds every wait: generous for a loaded machine, short against a hang. */
const waitTimeoutMs = 20_000;

export function describeGatewayContract(
  backendName: string,
  startBackend: () => Promise<GatewayContractBackend>,
): void {
  describe(`gateway contract: ${backendName}`, () => {
    let backend: GatewayContractBackend;
    let spool: Spool;
    let admin: Admin;
    const consumers: Consumer[] = [];

    beforeAll(async () => {
      backend = await startBackend();
      spool = new Spool({ brokers: [backend.address], clientId: 'contract', logLevel: 'silent' });
      admin = spool.admin({ requestTimeoutMs: 10_000 });
    });

    afterAll(async () => {
      for (const consumer of consumers.splice(0)) await consumer.close();
      await admin?.disconnect();
      await backend?.stop();
    });

    /** A topic no other test uses, with `partitionCount` partitions. */
    async function newTopic(partitionCount: number): Promise<string> {
      const topic = `contract-${randomUUID().slice(0, 8)}`;
      await admin.createTopics({
        topics: [{ topic, numPartitions: partitionCount, replicationFactor: 1 }],
      });
      return topic;
    }

    /**
     * A group member reading `topic` from the beginning; what it receives lands in `received`,
     * copied out of the fetched bytes (which the next fetch may reuse).
     */
    async function startMember(
      groupId: string,
      topic: string,
      received: Received[],
    ): Promise<Consumer> {
      const consumer = spool.consumer({ groupId, autoOffsetReset: 'earliest' });
      consumers.push(consumer);
      await consumer.subscribe({ topic });
      await consumer.run({
        eachMessage: async ({ message }) => {
          received.push({
            partition: message.partition,
            offset: message.offset,
            key: message.key?.toString(),
            value: message.value?.toString(),
            headers: message.headers.map((header) => `${header.key}=${header.value?.toString()}`),
          });
        },
      });
      return consumer;
    }

    it('gives back what was produced, in order per partition, with offsets from 0', async () => {
      const topic = await newTopic(2);
      const producer = spool.producer();
      try {
        await producer.send({
          topic,
          messages: [0, 1, 2].map((index) => ({
            key: `k${index}`,
            value: `v${index}`,
            partition: index % 2,
            headers: { index: String(index) },
          })),
        });
      } finally {
        await producer.disconnect();
      }
      const offsets = await admin.fetchTopicOffsets(topic);
      expect(offsets.map(({ partition, low, high }) => ({ partition, low, high }))).toEqual([
        { partition: 0, low: 0n, high: 2n },
        { partition: 1, low: 0n, high: 1n },
      ]);

      const received: Received[] = [];
      const groupId = `contract-${randomUUID().slice(0, 8)}`;
      await startMember(groupId, topic, received);
      await expect
        .poll(() => received.length, { timeout: waitTimeoutMs, interval: 20 })
        .toBeGreaterThanOrEqual(3);
      const byPartition = (partition: number) =>
        received.filter((message) => message.partition === partition);
      expect(byPartition(0)).toEqual([
        { partition: 0, offset: 0n, key: 'k0', value: 'v0', headers: ['index=0'] },
        { partition: 0, offset: 1n, key: 'k2', value: 'v2', headers: ['index=2'] },
      ]);
      expect(byPartition(1)).toEqual([
        { partition: 1, offset: 0n, key: 'k1', value: 'v1', headers: ['index=1'] },
      ]);
    });

    it('gives a lone member every partition, keeps its commits, and describes the group', async () => {
      const topic = await newTopic(3);
      const producer = spool.producer();
      try {
        await producer.send({
          topic,
          messages: [0, 1, 2, 3].map((index) => ({ value: `r${index}`, partition: index % 3 })),
        });
      } finally {
        await producer.disconnect();
      }
      const groupId = `contract-${randomUUID().slice(0, 8)}`;
      const received: Received[] = [];
      const consumer = await startMember(groupId, topic, received);
      await expect
        .poll(() => received.length, { timeout: waitTimeoutMs, interval: 20 })
        .toBeGreaterThanOrEqual(4);
      await expect
        .poll(() => consumer.assignment().length, { timeout: waitTimeoutMs, interval: 20 })
        .toBe(3);

      const live = await admin.describeGroup(groupId);
      expect(live.members).toHaveLength(1);
      expect(live.members[0]!.memberEpoch).toBeGreaterThan(0);
      expect(live.members[0]!.assignment.map(({ partition }) => partition).sort()).toEqual([
        0, 1, 2,
      ]);
      const error = await admin.deleteGroup(groupId).then(
        () => undefined,
        (caught: unknown) => caught as SpoolError,
      );
      expect(error?.code).toBe('NON_EMPTY_GROUP');

      // Closing commits what was consumed and leaves: the group is empty, its offsets kept.
      await consumer.close();
      consumers.splice(consumers.indexOf(consumer), 1);
      const left = await admin.describeGroup(groupId);
      expect(left.state).toBe('EMPTY');
      expect(left.members).toEqual([]);
      expect(
        left.partitions.map(({ partition, committedOffset, highWatermark, lag }) => ({
          partition,
          committedOffset,
          highWatermark,
          lag,
        })),
      ).toEqual([
        { partition: 0, committedOffset: 2n, highWatermark: 2n, lag: 0n },
        { partition: 1, committedOffset: 1n, highWatermark: 1n, lag: 0n },
        { partition: 2, committedOffset: 1n, highWatermark: 1n, lag: 0n },
      ]);
      await admin.deleteGroup(groupId);
      const deleted = await admin.describeGroup(groupId).then(
        () => undefined,
        (caught: unknown) => caught as SpoolError,
      );
      expect(deleted?.code).toBe('GROUP_ID_NOT_FOUND');
    });

    it('answers a missing topic with UNKNOWN_TOPIC_OR_PARTITION', async () => {
      const error = await admin.fetchTopicOffsets(`missing-${randomUUID().slice(0, 8)}`).then(
        () => undefined,
        (caught: unknown) => caught as SpoolError,
      );
      expect(error?.code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    });
  });
}
