// Proves the @spool/client SDK against a real `spool dev` cluster (3 nodes, separate processes):
// keys land on Kafka's murmur2 partition and come back in per-key order, every compression codec
// round-trips keys, values and headers, bad input fails with a precise SpoolError code and writes
// nothing, and a flood past a slow consumer leaves the gateway's RSS (/proc VmRSS) bounded.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  Spool,
  SpoolError,
  partitionForKey,
  type Admin,
  type CompressionName,
  type Message,
} from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';
import { consumeFromBeginning } from './support/sdk-consume';

const keyedPartitionCount = 6;
/** The flood stops at this many value bytes or after floodDurationMsMax, whichever is first. */
const floodValueBytesMax = 200 * 1024 * 1024;
const floodDurationMsMax = 20_000;
/** Well below the bytes produced: the gateway must not hold what the consumer has not taken. */
const gatewayRssGrowthBytesMax = 150 * 1024 * 1024;
const mebibyte = 1024 * 1024;

let dev: SpoolDevProcess | undefined;
let spool: Spool;
let admin: Admin;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

/** VmRSS of a process in bytes, from /proc (Linux). */
function residentSetSizeBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  expect(match).not.toBeNull();
  return Number(match![1]) * 1024;
}

/** The rejection of `promise`, which must reject. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '3']);
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'sdk-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
});

afterAll(async () => {
  try {
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
  for (const entry of dev?.processes ?? []) expect(isAlive(entry.pid)).toBe(false);
});

describe('the SDK against spool dev', () => {
  it('puts each key on its murmur2 partition and reads it back in per-key order', async () => {
    const topic = 'keyed';
    await admin.createTopics({
      topics: [{ topic, numPartitions: keyedPartitionCount, replicationFactor: 3 }],
    });
    const keyCount = 40;
    const sequencesPerKey = 15;
    const messages: Message[] = [];
    for (let sequence = 0; sequence < sequencesPerKey; sequence++) {
      for (let keyIndex = 0; keyIndex < keyCount; keyIndex++) {
        messages.push({ key: `customer-${keyIndex}`, value: String(sequence) });
      }
    }
    const producer = spool.producer({ lingerMs: 2 });
    try {
      const produced = await producer.send({ topic, messages });
      expect(produced).toHaveLength(messages.length);
      for (const [index, metadata] of produced.entries()) {
        const key = Buffer.from(messages[index]!.key as string);
        expect(metadata.partition).toBe(partitionForKey(key, keyedPartitionCount));
      }
      expect(new Set(produced.map((metadata) => metadata.partition)).size).toBe(
        keyedPartitionCount,
      );
    } finally {
      await producer.disconnect();
    }

    const consumed = await consumeFromBeginning(spool, topic, messages.length, 20_000);
    expect(consumed).toHaveLength(messages.length);
    const nextSequenceByKey = new Map<string, number>();
    for (const message of consumed) {
      const key = message.key!.toString();
      expect(message.partition).toBe(partitionForKey(message.key!, keyedPartitionCount));
      const sequence = Number(message.value!.toString());
      expect(sequence).toBe(nextSequenceByKey.get(key) ?? 0);
      nextSequenceByKey.set(key, sequence + 1);
    }
    expect(nextSequenceByKey.size).toBe(keyCount);
    for (const next of nextSequenceByKey.values()) expect(next).toBe(sequencesPerKey);
  });

  it.each<CompressionName>(['none', 'gzip', 'snappy', 'lz4', 'zstd'])(
    'round-trips keys, values and headers compressed with %s',
    async (compression) => {
      const topic = `codec-${compression}`;
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }] });
      const messages: Message[] = Array.from({ length: 200 }, (_, index) => ({
        key: index % 10 === 0 ? null : `key-${index}`,
        // Alternate text that compresses well with random bytes that do not.
        value: index % 2 === 0 ? `value-${index}-`.repeat(20) : randomBytes(100 + (index % 7) * 50),
        headers: { trace: `trace-${index}`, tag: ['a', Buffer.from([index & 0xff])], empty: null },
      }));
      const producer = spool.producer({ compression, lingerMs: 20 });
      try {
        await producer.send({ topic, messages });
      } finally {
        await producer.disconnect();
      }

      const consumed = await consumeFromBeginning(spool, topic, messages.length, 15_000);
      expect(consumed).toHaveLength(messages.length);
      for (const [index, message] of consumed.entries()) {
        const sent = messages[index]!;
        expect(message.offset).toBe(BigInt(index));
        expect(message.key).toEqual(sent.key === null ? null : Buffer.from(sent.key as string));
        expect(message.value).toEqual(Buffer.from(sent.value as string | Buffer));
        expect(message.headers).toEqual([
          { key: 'trace', value: Buffer.from(`trace-${index}`) },
          { key: 'tag', value: Buffer.from('a') },
          { key: 'tag', value: Buffer.from([index & 0xff]) },
          { key: 'empty', value: null },
        ]);
      }
    },
  );

  it('fails an unknown topic with UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const producer = spool.producer({ maxBlockMs: 1_500, requestTimeoutMs: 1_000 });
    try {
      const error = await rejectionOf(
        producer.send({ topic: 'no-such-topic', messages: [{ value: 'lost' }] }),
      );
      expect(error).toBeInstanceOf(SpoolError);
      expect((error as SpoolError).code).toBe('UNKNOWN_TOPIC_OR_PARTITION');
      expect((error as SpoolError).message).toContain('no-such-topic');
    } finally {
      await producer.disconnect();
    }
    expect(await admin.listTopics()).not.toContain('no-such-topic');
  });

  it('fails a record over the topic max.message.bytes with MESSAGE_TOO_LARGE, writing nothing', async () => {
    const topic = 'small-messages';
    await admin.createTopics({
      topics: [
        {
          topic,
          numPartitions: 1,
          replicationFactor: 3,
          configEntries: [{ name: 'max.message.bytes', value: '1000' }],
        },
      ],
    });
    const producer = spool.producer({ retries: 0, requestTimeoutMs: 5_000 });
    try {
      await producer.send({ topic, messages: [{ value: 'fits' }] });
      const [before] = await admin.fetchTopicOffsets(topic);
      expect(before!.high).toBe(1n);

      const error = await rejectionOf(
        producer.send({ topic, messages: [{ value: Buffer.alloc(5_000, 7) }] }),
      );
      expect(error).toBeInstanceOf(SpoolError);
      expect((error as SpoolError).code).toBe('MESSAGE_TOO_LARGE');
      expect((error as SpoolError).retriable).toBe(false);
      expect((error as SpoolError).message).toContain(`${topic}[0]`);

      const [after] = await admin.fetchTopicOffsets(topic);
      expect(after!.high).toBe(before!.high);
      // The producer is still usable, and the next record lands right after the first.
      const [next] = await producer.send({ topic, messages: [{ value: 'fits too' }] });
      expect(next!.offset).toBe(1n);
    } finally {
      await producer.disconnect();
    }
  });

  it('fails against an unreachable gateway with a retriable UNAVAILABLE in bounded time', async () => {
    const unreachable = new Spool({ brokers: ['127.0.0.1:1'], clientId: 'sdk-spec-unreachable' });
    const unreachableAdmin = unreachable.admin({ requestTimeoutMs: 500, retries: 1 });
    const producer = unreachable.producer({ maxBlockMs: 1_500, requestTimeoutMs: 500 });
    try {
      const adminStartedMs = Date.now();
      const adminError = await rejectionOf(unreachableAdmin.listTopics());
      expect(Date.now() - adminStartedMs).toBeLessThan(5_000);
      expect(adminError).toBeInstanceOf(SpoolError);
      expect((adminError as SpoolError).code).toBe('UNAVAILABLE');
      expect((adminError as SpoolError).retriable).toBe(true);

      const producerStartedMs = Date.now();
      const producerError = await rejectionOf(
        producer.send({ topic: 'anything', messages: [{ value: 'lost' }] }),
      );
      expect(Date.now() - producerStartedMs).toBeLessThan(5_000);
      expect(producerError).toBeInstanceOf(SpoolError);
      // The producer waits up to maxBlockMs for metadata, as Kafka's does; what stopped it is
      // the gateway being unreachable, which the cause keeps.
      expect((producerError as SpoolError).code).toBe('REQUEST_TIMED_OUT');
      expect((producerError as SpoolError).retriable).toBe(true);
      expect(((producerError as SpoolError).cause as SpoolError).code).toBe('UNAVAILABLE');
    } finally {
      await producer.disconnect();
      await unreachableAdmin.disconnect();
    }
  });

  it('keeps the gateway RSS bounded while a flood passes a slow consumer', async () => {
    const topic = 'flood';
    await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
    const gatewayPid = dev!.processes.find((entry) => entry.role === 'gateway')!.pid;

    const consumer = spool.consumer({ requestTimeoutMs: 5_000 });
    let consumedCount = 0;
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async () => {
        consumedCount += 1;
        await sleep(50);
      },
    });
    await sleep(500);

    const baselineBytes = residentSetSizeBytes(gatewayPid);
    let peakBytes = baselineBytes;
    const sampler = setInterval(() => {
      peakBytes = Math.max(peakBytes, residentSetSizeBytes(gatewayPid));
    }, 250);

    const producer = spool.producer({ lingerMs: 5, batchSizeBytes: 256 * 1024, maxInFlight: 2 });
    const value = randomBytes(1024);
    const messagesPerSend = 512;
    const sendsInFlightMax = 8;
    let producedBytes = 0;
    const floodStartedMs = Date.now();
    try {
      const pending = new Set<Promise<unknown>>();
      while (
        producedBytes < floodValueBytesMax &&
        Date.now() - floodStartedMs < floodDurationMsMax
      ) {
        const send = producer.send({
          topic,
          messages: Array.from({ length: messagesPerSend }, () => ({ value })),
        });
        const tracked: Promise<unknown> = send.finally(() => pending.delete(tracked));
        pending.add(tracked);
        producedBytes += messagesPerSend * value.length;
        if (pending.size >= sendsInFlightMax) await Promise.race(pending);
      }
      await Promise.all(pending);
      await producer.flush();
    } finally {
      await producer.disconnect();
      await sleep(500);
      clearInterval(sampler);
      peakBytes = Math.max(peakBytes, residentSetSizeBytes(gatewayPid));
      await consumer.disconnect();
    }
    const floodDurationMs = Date.now() - floodStartedMs;

    const growthBytes = peakBytes - baselineBytes;
    console.log(
      `gateway RSS: baseline ${(baselineBytes / mebibyte).toFixed(1)} MB, peak ` +
        `${(peakBytes / mebibyte).toFixed(1)} MB, growth ${(growthBytes / mebibyte).toFixed(1)} ` +
        `MB while ${(producedBytes / mebibyte).toFixed(0)} MB were produced in ` +
        `${floodDurationMs} ms and ${consumedCount} messages consumed`,
    );
    // The flood must outgrow the bound, or the bound proves nothing; the consumer took little.
    expect(producedBytes).toBeGreaterThan(gatewayRssGrowthBytesMax);
    expect(consumedCount).toBeLessThan(1_000);
    expect(growthBytes).toBeLessThan(gatewayRssGrowthBytesMax);
    expect(growthBytes).toBeLessThan(producedBytes / 2);
  });
});
