// Proves that unmodified Kafka clients work against the gateway's Kafka listener on a `spool dev`
// cluster (3 storage nodes): kcat (librdkafka) lists the cluster (the storage brokers, each at a
// port of the gateway's own) and the topic with its real leaders, produces keyed records and
// consumes them back; a KafkaJS idempotent producer's records (key, value, headers, timestamp) are
// read by the SDK at the offsets KafkaJS was told, and records the SDK produced are read by kcat
// with the same key, value, headers, timestamp and offset; a Fetch sent to a broker port that does
// not lead the partition is served (the gateway forwards to the leader). Groups (the classic
// protocol on the coordinators' consumer groups): two KafkaJS consumers split 6 partitions 3 and 3
// and read every record; a KafkaJS consumer and an SDK consumer share one group, 3 partitions each;
// a kcat group consumer commits, the SDK sees those commits as the group's offsets, and the next
// kcat of the group resumes from them (Apache Kafka's own tools have their spec,
// java-tools.spec.ts). The KafkaJS admin creates a topic, grows it and deletes records below an
// offset. Bad input on raw sockets (random bytes, a 2 GiB size prefix, a truncated frame, an
// unknown API key, a version not served) closes only that connection: the gateway stays up, serves
// the next client, and nothing is written.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Spool, type Admin } from '@spool/client';
import {
  type FetchResponse,
  type MetadataResponse,
  defaultFetchRequest,
  defaultFetchRequestFetchPartition,
  defaultFetchRequestFetchTopic,
  defaultMetadataRequest,
  readFetchResponse,
  readMetadataResponse,
  writeFetchRequest,
  writeMetadataRequest,
} from '@spool/kafka-protocol';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';
import { kafkaRequest } from '../support/kafka-wire-client';
import { consumeFromBeginning } from '../support/sdk-consume';

const partitionCount = 6;
const specTopics = [
  ...['kcat', 'from-kafkajs', 'from-sdk', 'bad-input', 'groups', 'kcat-group', 'mixed'],
] as const;
const kcatTimeoutMs = 20_000;

let dev: SpoolDevProcess | undefined;
let spool: Spool;
let admin: Admin;
let bootstrap: string;
let kafkaPort: number;

/** Runs kcat with `args` (stdin from `input`), resolving with its stdout; fails on a non-0 exit. */
function kcat(args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kcat',
      ['-b', bootstrap, ...args],
      { timeout: kcatTimeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kcat ${args.join(' ')} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** The high watermark of every partition of `topic`, through the SDK. */
async function endOffsets(topic: string): Promise<string[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .sort((left, right) => left.partition - right.partition)
    .map((entry) => String(entry.high));
}

/** Sends `bytes` on a new connection; resolves once the gateway closed it, with what it sent. */
function sendRaw(bytes: Buffer, endAfterWrite = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(kafkaPort, '127.0.0.1');
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the gateway did not close the connection within 10 s'));
    }, 10_000);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(received));
    });
    socket.write(bytes, () => {
      if (endAfterWrite) socket.end();
    });
  });
}

/** A request frame: size, apiKey, apiVersion, correlationId, then `body`. */
function frame(apiKey: number, apiVersion: number, correlationId: number, body: Buffer): Buffer {
  const header = Buffer.alloc(12);
  header.writeInt32BE(8 + body.length, 0);
  header.writeInt16BE(apiKey, 4);
  header.writeInt16BE(apiVersion, 6);
  header.writeInt32BE(correlationId, 8);
  return Buffer.concat([header, body]);
}

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '3']);
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  expect(kafkaPort).toBeGreaterThan(0);
  bootstrap = `localhost:${kafkaPort}`;
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'kafka-clients-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
  await admin.createTopics({
    topics: specTopics.map((topic) => ({
      topic,
      numPartitions: partitionCount,
      replicationFactor: 3,
    })),
  });
  await waitForTopics(specTopics);
});

/** Every topic of the spec, with a leader (a storage broker) for each partition in Metadata. */
async function waitForTopics(topics: readonly string[]): Promise<void> {
  await vi.waitFor(
    async () => {
      const listing = await kcat(['-L']);
      for (const topic of topics) {
        expect(listing).toContain(`topic "${topic}" with ${partitionCount} partitions:`);
      }
      expect(listing.match(/, leader \d+,/g)?.length ?? 0).toBeGreaterThanOrEqual(
        topics.length * partitionCount,
      );
    },
    { timeout: 30_000, interval: 200 },
  );
}

afterAll(async () => {
  try {
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
});

describe('Kafka clients against the gateway', () => {
  it('kcat lists the cluster: the storage brokers, each at a port of the gateway, and the real leaders', async () => {
    const listing = await kcat(['-L', '-t', 'kcat']);
    const brokers = [...listing.matchAll(/^ {2}broker (\d+) at 127\.0\.0\.1:(\d+)/gm)];
    expect(
      brokers.map((match) => Number(match[1])),
      listing,
    ).toEqual([0, 1, 2]);
    const ports = new Set(brokers.map((match) => Number(match[2])));
    expect(ports.size, listing).toBe(3);
    expect(ports.has(kafkaPort), listing).toBe(false);
    expect(listing).toMatch(/broker 0 at \S+ \(controller\)/);
    expect(listing).toContain(`topic "kcat" with ${partitionCount} partitions:`);
    // Each partition as the SDK describes it: leader, replicas and ISR are the storage brokers.
    const [described] = await admin.describeTopics({ topics: ['kcat'] });
    for (const partition of described!.partitions) {
      expect(listing).toContain(
        `partition ${partition.partition}, leader ${partition.leaderId}, ` +
          `replicas: ${partition.replicas.join(',')}, isrs: ${partition.isr.join(',')}`,
      );
    }
  });

  it('kcat produces keyed records and consumes every one of them back', async () => {
    const lines = Array.from({ length: 30 }, (_, index) => `key-${index}:value-${index}`);
    await kcat(['-P', '-t', 'kcat', '-K:'], `${lines.join('\n')}\n`);
    const consumed = await kcat(['-C', '-t', 'kcat', '-e', '-q', '-f', '%k:%s\n']);
    expect(consumed.trim().split('\n').sort()).toEqual([...lines].sort());
    const total = (await endOffsets('kcat')).reduce((sum, offset) => sum + Number(offset), 0);
    expect(total).toBe(lines.length);
  });

  it("a Fetch sent to another broker's port than the partition leader's is served all the same", async () => {
    const metadataVersion = 12;
    const metadata = await kafkaRequest<MetadataResponse>(
      { host: '127.0.0.1', port: kafkaPort },
      {
        apiKey: 3,
        version: metadataVersion,
        write: (writer) =>
          writeMetadataRequest(
            writer,
            { ...defaultMetadataRequest(), topics: [{ topicId: Buffer.alloc(16), name: 'kcat' }] },
            metadataVersion,
          ),
        read: (reader) => readMetadataResponse(reader, metadataVersion),
      },
    );
    const partitions = metadata.topics[0]!.partitions;
    expect(partitions).toHaveLength(partitionCount);
    const fetchVersion = 12;
    let recordBytes = 0;
    for (const partition of partitions) {
      // Any broker but the leader: the gateway behind its port forwards to the real leader.
      const other = metadata.brokers.find((broker) => broker.nodeId !== partition.leaderId)!;
      const answer = await kafkaRequest<FetchResponse>(
        { host: '127.0.0.1', port: other.port },
        {
          apiKey: 1,
          version: fetchVersion,
          write: (writer) =>
            writeFetchRequest(
              writer,
              {
                ...defaultFetchRequest(),
                maxBytes: 1024 * 1024,
                topics: [
                  {
                    ...defaultFetchRequestFetchTopic(),
                    topic: 'kcat',
                    partitions: [
                      {
                        ...defaultFetchRequestFetchPartition(),
                        partition: partition.partitionIndex,
                        partitionMaxBytes: 1024 * 1024,
                      },
                    ],
                  },
                ],
              },
              fetchVersion,
            ),
          read: (reader) => readFetchResponse(reader, fetchVersion),
        },
      );
      const [served] = answer.responses[0]!.partitions;
      expect(served!.errorCode).toBe(0);
      expect(String(served!.highWatermark)).toBe(
        (await endOffsets('kcat'))[partition.partitionIndex],
      );
      recordBytes += served!.records?.length ?? 0;
    }
    // The 30 records kcat produced came back through ports that do not lead their partitions.
    expect(recordBytes).toBeGreaterThan(0);
  });

  it('a KafkaJS idempotent producer writes what the SDK reads, at the offsets it was told', async () => {
    const kafka = new Kafka({
      brokers: [bootstrap],
      clientId: 'kafkajs-spec',
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const timestamp = String(Date.now() - 60_000);
    const messages = Array.from({ length: 12 }, (_, index) => ({
      key: `kafkajs-${index}`,
      value: `value-${index}`,
      timestamp,
      headers: { origin: 'kafkajs', index: String(index) },
    }));
    let sent;
    try {
      sent = await producer.send({ topic: 'from-kafkajs', acks: -1, messages });
    } finally {
      await producer.disconnect();
    }
    expect(sent.every((result) => result.errorCode === 0)).toBe(true);
    const consumed = await consumeFromBeginning(spool, 'from-kafkajs', messages.length);
    expect(consumed).toHaveLength(messages.length);
    for (const message of messages) {
      const record = consumed.find((entry) => entry.key?.toString() === message.key)!;
      expect(record.value?.toString()).toBe(message.value);
      expect(record.timestamp).toBe(BigInt(timestamp));
      expect(record.headers.map((header) => [header.key, header.value?.toString()])).toEqual(
        Object.entries(message.headers),
      );
      // KafkaJS learns each partition's base offset; records of one partition follow it in order.
      const partitionResult = sent.find((result) => result.partition === record.partition)!;
      expect(record.offset).toBeGreaterThanOrEqual(BigInt(partitionResult.baseOffset!));
    }
  });

  it('kcat reads what the SDK produced: key, value, headers, timestamp and offset', async () => {
    const producer = spool.producer({ lingerMs: 1 });
    const timestamp = Date.now() - 120_000;
    let produced;
    try {
      produced = await producer.send({
        topic: 'from-sdk',
        messages: Array.from({ length: 8 }, (_, index) => ({
          key: `sdk-${index}`,
          value: `value-${index}`,
          timestamp: BigInt(timestamp),
          headers: [{ key: 'origin', value: 'sdk' }],
        })),
      });
    } finally {
      await producer.disconnect();
    }
    const consumed = await kcat([
      ...['-C', '-t', 'from-sdk', '-e', '-q'],
      ...['-f', '%p|%o|%k|%s|%T|%h\n'],
    ]);
    const lines = consumed.trim().split('\n').sort();
    const expected = produced
      .map(
        (metadata, index) =>
          `${metadata.partition}|${metadata.offset}|sdk-${index}|value-${index}|${timestamp}|origin=sdk`,
      )
      .sort();
    expect(lines).toEqual(expected);
  });

  it('two KafkaJS consumers of one group split 6 partitions and read every record', async () => {
    const lines = Array.from({ length: 60 }, (_, index) => `group-${index}:value-${index}`);
    await kcat(['-P', '-t', 'groups', '-K:'], `${lines.join('\n')}\n`);
    // One Kafka instance per consumer, as two processes: KafkaJS shares committed offsets between
    // the consumers of one instance, and one with no partitions yet clears the other's.
    const consumers = [0, 1].map(() =>
      new Kafka({
        brokers: [bootstrap],
        clientId: 'group-spec',
        logLevel: logLevel.NOTHING,
      }).consumer({
        groupId: 'kafkajs-group',
        sessionTimeout: 10_000,
        heartbeatInterval: 500,
        maxWaitTimeInMs: 200,
      }),
    );
    const assigned: number[][] = [[], []];
    const read = new Set<string>();
    try {
      for (const [index, consumer] of consumers.entries()) {
        consumer.on(consumer.events.GROUP_JOIN, (event) => {
          assigned[index] = [...(event.payload.memberAssignment['groups'] ?? [])].sort();
        });
        await consumer.connect();
        await consumer.subscribe({ topic: 'groups', fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => {
            read.add(message.key!.toString());
          },
        });
      }
      await vi.waitFor(
        () => {
          expect(assigned.map((partitions) => partitions.length)).toEqual([3, 3]);
          expect([...assigned[0]!, ...assigned[1]!].sort()).toEqual([0, 1, 2, 3, 4, 5]);
          expect(read.size).toBe(lines.length);
        },
        { timeout: 30_000, interval: 100 },
      );
    } finally {
      await Promise.all(consumers.map((consumer) => consumer.disconnect()));
    }
  });

  it('a KafkaJS consumer and an SDK consumer share one group and split its partitions', async () => {
    const kafkajs = new Kafka({
      brokers: [bootstrap],
      clientId: 'mixed-spec',
      logLevel: logLevel.NOTHING,
    }).consumer({
      groupId: 'mixed-group',
      sessionTimeout: 10_000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 200,
    });
    const sdk = spool.consumer({ groupId: 'mixed-group', requestTimeoutMs: 5_000 });
    let kafkajsPartitions: number[] = [];
    kafkajs.on(kafkajs.events.GROUP_JOIN, (event) => {
      kafkajsPartitions = [...(event.payload.memberAssignment['mixed'] ?? [])].sort();
    });
    try {
      await kafkajs.connect();
      await kafkajs.subscribe({ topic: 'mixed', fromBeginning: true });
      await kafkajs.run({ eachMessage: async () => {} });
      await sdk.subscribe({ topic: 'mixed', fromBeginning: true });
      await sdk.run({ eachMessage: async () => {} });
      await vi.waitFor(
        () => {
          const sdkPartitions = sdk
            .assignment()
            .map((entry) => entry.partition)
            .sort();
          expect([kafkajsPartitions.length, sdkPartitions.length]).toEqual([3, 3]);
          expect([...kafkajsPartitions, ...sdkPartitions].sort()).toEqual([0, 1, 2, 3, 4, 5]);
        },
        { timeout: 30_000, interval: 100 },
      );
      const group = await admin.describeGroup('mixed-group');
      expect(group.members).toHaveLength(2);
    } finally {
      await Promise.all([kafkajs.disconnect(), sdk.disconnect()]);
    }
  });

  it('a kcat group commits what it read; the SDK sees the commits; the next kcat resumes', async () => {
    const lines = Array.from({ length: 24 }, (_, index) => `kg-${index}:value-${index}`);
    await kcat(['-P', '-t', 'kcat-group', '-K:'], `${lines.join('\n')}\n`);
    const groupArguments = ['-G', 'kcat-group', '-X', 'auto.offset.reset=earliest', '-e', '-q'];
    const first = await kcat([...groupArguments, '-f', '%k\n', 'kcat-group']);
    expect(first.trim().split('\n').sort()).toEqual(
      lines.map((line) => line.split(':')[0]!).sort(),
    );
    const committed = await admin.fetchOffsets({ groupId: 'kcat-group', topics: ['kcat-group'] });
    const committedOffsets = committed
      .flatMap((topic) => topic.partitions)
      .sort((left, right) => left.partition - right.partition)
      .map((partition) => String(partition.offset));
    // Every record read is committed; a partition that had none has no commit (-1).
    const ends = await endOffsets('kcat-group');
    expect(committedOffsets).toEqual(ends.map((end) => (end === '0' ? '-1' : end)));
    const second = await kcat([...groupArguments, '-f', '%k\n', 'kcat-group']);
    expect(second.trim()).toBe('');
  });

  it('the KafkaJS admin deletes an empty group with its offsets, not one with members', async () => {
    const kafka = new Kafka({
      brokers: [bootstrap],
      clientId: 'delete-groups-spec',
      logLevel: logLevel.NOTHING,
    });
    const kafkaAdmin = kafka.admin();
    const member = kafka.consumer({
      groupId: 'busy-group',
      sessionTimeout: 10_000,
      heartbeatInterval: 500,
    });
    let joined = false;
    member.on(member.events.GROUP_JOIN, () => {
      joined = true;
    });
    const failureOf = async (groupIds: string[]): Promise<unknown> => {
      const error = await kafkaAdmin.deleteGroups(groupIds).then(
        () => undefined,
        (failure: { groups?: Array<{ groupId: string; error: { type: string } }> }) => failure,
      );
      return (
        error as { groups?: Array<{ groupId: string; error: { type: string } }> }
      )?.groups?.map((group) => [group.groupId, group.error.type]);
    };
    await kafkaAdmin.connect();
    try {
      await member.connect();
      await member.subscribe({ topic: 'groups', fromBeginning: true });
      await member.run({ eachMessage: async () => {} });
      await vi.waitFor(() => expect(joined).toBe(true), { timeout: 30_000, interval: 100 });
      expect(await failureOf(['busy-group'])).toEqual([['busy-group', 'NON_EMPTY_GROUP']]);
      expect(await failureOf(['no-such-group'])).toEqual([['no-such-group', 'GROUP_ID_NOT_FOUND']]);
      // kcat-group is empty, with the offsets the test before committed.
      const before = await admin.fetchOffsets({ groupId: 'kcat-group', topics: ['kcat-group'] });
      expect(
        before.flatMap((topic) => topic.partitions).some((entry) => entry.offset !== -1n),
      ).toBe(true);
      expect(await kafkaAdmin.deleteGroups(['kcat-group'])).toEqual([
        expect.objectContaining({ groupId: 'kcat-group', errorCode: 0 }),
      ]);
      const after = await admin.fetchOffsets({ groupId: 'kcat-group', topics: ['kcat-group'] });
      expect(after.flatMap((topic) => topic.partitions).map((entry) => entry.offset)).toEqual(
        Array.from({ length: partitionCount }, () => -1n),
      );
      expect(await failureOf(['kcat-group'])).toEqual([['kcat-group', 'GROUP_ID_NOT_FOUND']]);
      expect((await admin.describeGroup('busy-group')).members).toHaveLength(1);
    } finally {
      await Promise.all([member.disconnect(), kafkaAdmin.disconnect()]);
    }
  });

  it('the KafkaJS admin grows a topic and deletes records below an offset', async () => {
    const kafkaAdmin = new Kafka({
      brokers: [bootstrap],
      clientId: 'admin-spec',
      logLevel: logLevel.NOTHING,
    }).admin();
    await kafkaAdmin.connect();
    try {
      expect(
        await kafkaAdmin.createTopics({
          topics: [{ topic: 'admin', numPartitions: 2, replicationFactor: 3 }],
        }),
      ).toBe(true);
      await kafkaAdmin.createPartitions({ topicPartitions: [{ topic: 'admin', count: 4 }] });
      await vi.waitFor(async () => expect(await endOffsets('admin')).toHaveLength(4), {
        timeout: 10_000,
        interval: 100,
      });
      const lines = Array.from({ length: 10 }, (_, index) => `value-${index}`);
      await kcat(['-P', '-t', 'admin', '-p', '0'], `${lines.join('\n')}\n`);
      await kafkaAdmin.deleteTopicRecords({
        topic: 'admin',
        partitions: [{ partition: 0, offset: '4' }],
      });
      const offsets = await admin.fetchTopicOffsets('admin');
      const first = offsets.find((entry) => entry.partition === 0)!;
      expect([String(first.low), String(first.high)]).toEqual(['4', '10']);
    } finally {
      await kafkaAdmin.disconnect();
    }
  });

  it('closes a connection on bad input, stays up and writes nothing', async () => {
    const before = await endOffsets('bad-input');
    // A Produce v9 whose body is cut short: the connection closes and nothing is appended.
    const produce = frame(0, 9, 1, Buffer.from([0, 0, 0, 0x10, 0x61]));
    // Random bytes behind a size prefix that says they are one whole request (a random prefix
    // of 4096 random bytes named a frame still to come in about 1 run of 40, which the gateway
    // rightly waits for, as Kafka's brokers do) and an API key that is served (Produce), so the
    // version and body are what is random.
    const garbage = randomBytes(4096);
    garbage.writeInt32BE(garbage.length - 4, 0);
    garbage.writeInt16BE(0, 4);
    const cases: Array<[string, Buffer]> = [
      ['random bytes', garbage],
      ['a 2 GiB size prefix', Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 1, 2, 3])],
      ['a negative size prefix', Buffer.from([0x80, 0, 0, 0, 0, 1, 2, 3])],
      ['a truncated Produce', produce],
      ['an unknown API key', frame(9999, 0, 2, Buffer.alloc(4))],
      ['a Metadata version not served', frame(3, 200, 3, Buffer.alloc(4))],
    ];
    for (const [name, bytes] of cases) {
      const answer = await sendRaw(bytes);
      expect(answer.length, name).toBe(0);
    }
    // A frame that never completes: the client gives up; the gateway keeps nothing of it.
    await sendRaw(Buffer.from([0, 0, 0, 100, 0, 3, 0, 1]), true);
    // ApiVersions at a version not served is answered, at v0, with UNSUPPORTED_VERSION (35).
    const apiVersions = await new Promise<Buffer>((resolve, reject) => {
      const socket = net.connect(kafkaPort, '127.0.0.1', () => {
        socket.write(frame(18, 99, 7, Buffer.alloc(2)));
      });
      socket.once('data', (chunk: Buffer) => {
        socket.destroy();
        resolve(chunk);
      });
      socket.once('error', reject);
    });
    expect(apiVersions.readInt32BE(4)).toBe(7);
    expect(apiVersions.readInt16BE(8)).toBe(35);
    expect(apiVersions.readInt32BE(10)).toBeGreaterThan(0);
    // The gateway is up and serves the next client; nothing was written.
    expect(await kcat(['-L', '-t', 'bad-input'])).toContain('topic "bad-input"');
    expect(await endOffsets('bad-input')).toEqual(before);
    const gateway = dev!.processes.find((entry) => entry.role === 'gateway')!;
    expect(() => process.kill(gateway.pid, 0)).not.toThrow();
  });
});
