// Proves that confluent-kafka for Python (librdkafka inside its PyPI wheel, pinned by
// test/support/ensure-python-kafka.sh), unmodified, works against `spool dev`'s Kafka listener:
// its AdminClient creates a topic; an idempotent producer (acks=all) writes keyed records with
// headers that the SDK reads with the same key, value, headers and offsets; a group member reads
// them, commits synchronously, and the SDK sees those commits as the group's offsets; the next
// member of the group resumes after them and reads only what was produced since. Groups
// rebalance: a lone member has all 6 partitions, a second member's join splits them 3 and 3,
// and its leave gives the first all 6 again.
// The client is test/kafka/confluent_kafka_client.py, one JSON answer per run.
import { execFile, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { Spool, type Admin, type ConsumedMessage } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';

const workspaceRoot = path.resolve(__dirname, '..', '..');
const clientScript = path.join(__dirname, 'confluent_kafka_client.py');
const partitionCount = 6;
/** The script bounds each of its waits by 30 s; the process by this. */
const clientTimeoutMs = 45_000;

let dev: SpoolDevProcess | undefined;
let spool: Spool;
let admin: Admin;
let bootstrap: string;
let python: string;

interface Delivered {
  readonly key: string;
  readonly partition: number;
  readonly offset: number;
}

interface ConsumedRecord extends Delivered {
  readonly value: string;
  readonly headers: [string, string][];
  readonly timestamp: number;
}

/** Runs one command of the Python client; resolves with its JSON answer, fails on exit != 0. */
function client<T>(command: string, args: readonly (string | number)[]): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      [clientScript, command, bootstrap, ...args.map(String)],
      { timeout: clientTimeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as T);
      },
    );
  });
}

/** A record the SDK read, its bytes as text (the SDK's buffers are views of its fetches). */
interface SdkRecord {
  readonly key: string | undefined;
  readonly value: string | undefined;
  readonly headers: (string | undefined)[][];
  readonly partition: number;
  readonly offset: bigint;
}

function sdkRecordOf(message: ConsumedMessage): SdkRecord {
  return {
    key: message.key?.toString(),
    value: message.value?.toString(),
    headers: message.headers.map((header) => [header.key, header.value?.toString()]),
    partition: message.partition,
    offset: message.offset,
  };
}

/** Reads `count` records of `topic` from the beginning through the SDK. */
async function consumeWithSdk(topic: string, count: number): Promise<SdkRecord[]> {
  const consumer = spool.consumer({ requestTimeoutMs: 5_000 });
  const messages: SdkRecord[] = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        messages.push(sdkRecordOf(message));
      },
    });
    await vi.waitFor(() => expect(messages.length).toBeGreaterThanOrEqual(count), {
      timeout: 20_000,
      interval: 50,
    });
  } finally {
    await consumer.disconnect();
  }
  return messages;
}

beforeAll(async () => {
  python = execFileSync('bash', [path.join(workspaceRoot, 'test/support/ensure-python-kafka.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 300_000,
  }).trim();
  dev = await startSpoolDev(['--nodes', '1']);
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  const kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  expect(kafkaPort).toBeGreaterThan(0);
  bootstrap = `127.0.0.1:${kafkaPort}`;
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'confluent-kafka-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
}, 360_000);

afterAll(async () => {
  try {
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
});

describe('confluent-kafka (Python) against the gateway', () => {
  it('the AdminClient creates a topic that Metadata and the SDK show', async () => {
    const created = await client<{ partitions: number }>('create-topic', [
      'python',
      partitionCount,
      1,
    ]);
    expect(created.partitions).toBe(partitionCount);
    const listed = await admin.fetchTopicMetadata({ topics: ['python'] });
    expect(listed.topics[0]!.partitions).toHaveLength(partitionCount);
  });

  it('an idempotent producer writes what the SDK reads: key, value, headers, offset', async () => {
    const { delivered } = await client<{ delivered: Delivered[] }>('produce', ['python', 0, 30]);
    expect(delivered).toHaveLength(30);
    const consumed = await consumeWithSdk('python', delivered.length);
    expect(consumed).toHaveLength(delivered.length);
    for (const sent of delivered) {
      const record = consumed.find((entry) => entry.key === sent.key)!;
      const index = sent.key.slice('key-'.length);
      expect(record.value).toBe(`value-${index}`);
      expect([record.partition, record.offset]).toEqual([sent.partition, BigInt(sent.offset)]);
      expect(record.headers).toEqual([
        ['origin', 'python'],
        ['index', index],
      ]);
    }
  });

  it('a group member reads, commits and leaves; the SDK sees the commits; the next member resumes', async () => {
    const first = await client<{ records: ConsumedRecord[] }>('consume', [
      'python',
      'python-group',
      30,
    ]);
    expect(first.records.map((record) => record.key).sort()).toEqual(
      Array.from({ length: 30 }, (_, index) => `key-${index}`).sort(),
    );
    expect(first.records.every((record) => record.headers[0]?.[1] === 'python')).toBe(true);
    // Committed offsets are the next offset to read, per partition: the SDK reads the same ones.
    const nextByPartition = new Map<number, number>();
    for (const record of first.records) {
      nextByPartition.set(
        record.partition,
        Math.max(nextByPartition.get(record.partition) ?? 0, record.offset + 1),
      );
    }
    const committed = await admin.fetchOffsets({ groupId: 'python-group', topics: ['python'] });
    for (const entry of committed[0]!.partitions) {
      expect(Number(entry.offset)).toBe(nextByPartition.get(entry.partition) ?? -1);
    }

    await client('produce', ['python', 30, 40]);
    const second = await client<{ records: ConsumedRecord[] }>('consume', [
      'python',
      'python-group',
      10,
    ]);
    expect(second.records.map((record) => record.key).sort()).toEqual(
      Array.from({ length: 10 }, (_, index) => `key-${30 + index}`).sort(),
    );
  });

  it('a group rebalances on join and leave: 6, then 3 and 3, then 6 again', async () => {
    const steps = await client<{ alone: number; split: number[]; afterLeave: number }>(
      'rebalance',
      ['python', 'python-rebalance', partitionCount],
    );
    expect(steps).toEqual({ alone: partitionCount, split: [3, 3], afterLeave: partitionCount });
  });
});
