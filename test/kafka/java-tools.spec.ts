// Proves that Apache Kafka's own command-line tools (4.4.0, the pinned Maven artifacts of
// test/support/kafka-tools.ts), unmodified, work against `spool dev`'s Kafka listener: the console
// producer writes keyed records that the SDK counts and the console consumer reads back in a
// group, which commits and resumes, fetching in a fetch session (KIP-227: the gateway's
// metrics count incremental fetches, which name only what changed); kafka-get-offsets finds
// each partition's record with the largest timestamp (ListOffsets v7) and the earliest local
// offset (v8); kafka-consumer-groups --delete-offsets removes an empty group's commits (OffsetDelete);
// kafka-topics creates, lists and describes a topic with its real leaders, replicas and ISR (the
// storage brokers);
// kafka-consumer-groups describes a group's offsets and resets them; ProducerPerformance and
// ConsumerPerformance move a few thousand records; kafka-reassign-partitions moves a partition
// from storage broker 1 to broker 2 (AlterPartitionReassignments; the tool accepts the brokers
// DescribeCluster lists) under --throttle, which sets the topic's leader/follower
// .replication.throttled.replicas and both brokers' rates (the sending node applies its rate),
// --verify sees it complete and clears every throttle, --list (ListPartitionReassignments) finds
// nothing left, and --cancel with nothing moving finds nothing active, and kafka-log-dirs finds
// it, with its records' bytes, in broker 2's data directory (DescribeLogDirs); kafka-configs sets,
// describes and deletes a broker's and the cluster default's leader.replication.throttled.rate
// (BROKER config resources), which reaches the storage node, and is refused an unknown name and a
// static setting.
//
// One cluster (three storage nodes, so a partition can move between two that are not broker 0;
// JVM start-up dominates this file's time), every tool run bounded by a timeout.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Spool, type Admin } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runKafkaTool, type KafkaToolRun } from '../support/kafka-tools';
import { scrape, sumOf } from '../support/prometheus-scrape';
import { consumeFromBeginning } from '../support/sdk-consume';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';

const partitionCount = 6;
/** A JVM tool's run on a loaded machine: start-up is seconds, the work is small. */
const toolTimeoutMs = 45_000;

let dev: SpoolDevProcess | undefined;
let spool: Spool;
let admin: Admin;
let bootstrap: string;
let gatewayMetricsPort: number;

/** Runs a tool with --bootstrap-server first; the run's output is the message of any failure. */
function tool(
  name: Parameters<typeof runKafkaTool>[0],
  args: readonly string[],
  input?: string,
): Promise<KafkaToolRun> {
  return runKafkaTool(name, ['--bootstrap-server', bootstrap, ...args], {
    timeoutMs: toolTimeoutMs,
    ...(input === undefined ? {} : { input }),
  });
}

function describeRun(run: KafkaToolRun): string {
  return `exit ${run.exitCode}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
}

/** The sum of every partition's high watermark of `topic`, through the SDK. */
async function recordCount(topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
}

/** Keyed lines `key-<n>:value-<n>` for n in [from, to). */
function keyedLines(from: number, to: number): string[] {
  return Array.from(
    { length: to - from },
    (_, index) => `key-${from + index}:value-${from + index}`,
  );
}

/** The console consumer in group `group`, until `count` records; its output as key:value lines. */
async function consumeConsole(
  topic: string,
  group: string,
  count: number,
  fromBeginning: boolean,
): Promise<string[]> {
  const run = await tool('consoleConsumer', [
    '--topic',
    topic,
    '--group',
    group,
    ...(fromBeginning ? ['--from-beginning'] : []),
    '--max-messages',
    String(count),
    '--timeout-ms',
    '20000',
    '--formatter-property',
    'print.key=true',
    '--formatter-property',
    'key.separator=:',
  ]);
  expect(run.exitCode, describeRun(run)).toBe(0);
  expect(run.stderr, describeRun(run)).toContain(`Processed a total of ${count} messages`);
  return run.stdout
    .split('\n')
    .filter((line) => line.startsWith('key-'))
    .sort();
}

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '3']);
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  const kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  expect(kafkaPort).toBeGreaterThan(0);
  bootstrap = `127.0.0.1:${kafkaPort}`;
  gatewayMetricsPort = gateway.ports.metrics;
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'java-tools-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
  await admin.createTopics({
    topics: ['console', 'perf'].map((topic) => ({
      topic,
      numPartitions: partitionCount,
      replicationFactor: 1,
    })),
  });
});

afterAll(async () => {
  try {
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
});

describe("Apache Kafka's tools against the gateway's Kafka listener", () => {
  it('kafka-topics creates a topic, lists it and describes its partitions', async () => {
    const create = await tool('topics', [
      '--create',
      '--topic',
      'from-kafka-topics',
      '--partitions',
      String(partitionCount),
      '--replication-factor',
      '1',
    ]);
    expect(create.exitCode, describeRun(create)).toBe(0);
    expect(create.stdout).toContain('Created topic from-kafka-topics.');
    const topics = (await admin.fetchTopicMetadata({ topics: ['from-kafka-topics'] })).topics;
    expect(topics[0]!.partitions).toHaveLength(partitionCount);

    const list = await tool('topics', ['--list']);
    expect(list.exitCode, describeRun(list)).toBe(0);
    expect(list.stdout.trim().split('\n').sort()).toEqual(
      expect.arrayContaining(['console', 'from-kafka-topics', 'perf']),
    );

    const describeTopic = await tool('topics', ['--describe', '--topic', 'from-kafka-topics']);
    expect(describeTopic.exitCode, describeRun(describeTopic)).toBe(0);
    expect(describeTopic.stdout).toMatch(
      new RegExp(`Topic: from-kafka-topics\\s+TopicId: \\S+\\s+PartitionCount: ${partitionCount}`),
    );
    // Each partition as the SDK describes it: the storage brokers that lead and hold it.
    const [described] = await admin.describeTopics({ topics: ['from-kafka-topics'] });
    for (const partition of described!.partitions) {
      expect(describeTopic.stdout, describeRun(describeTopic)).toMatch(
        new RegExp(
          `Partition: ${partition.partition}\\s+Leader: ${partition.leaderId}\\s+` +
            `Replicas: ${partition.replicas.join(',')}\\s+Isr: ${partition.isr.join(',')}`,
        ),
      );
    }
  });

  it('the console producer writes keyed records; the console consumer reads them in a group, commits and resumes', async () => {
    const first = keyedLines(0, 30);
    const produce = await tool(
      'consoleProducer',
      [
        '--topic',
        'console',
        '--reader-property',
        'parse.key=true',
        '--reader-property',
        'key.separator=:',
      ],
      `${first.join('\n')}\n`,
    );
    expect(produce.exitCode, describeRun(produce)).toBe(0);
    expect(await recordCount('console')).toBe(first.length);

    const fetchesBefore = await scrape(gatewayMetricsPort);
    expect(await consumeConsole('console', 'console-group', first.length, true)).toEqual(
      [...first].sort(),
    );
    // The Java consumer took the fetch session the gateway gave it: after the first full fetch
    // its fetches were incremental, and none was refused for its session.
    const fetchesAfter = await scrape(gatewayMetricsPort);
    const fetches = (kind: string) =>
      (sumOf([fetchesAfter], 'spool_kafka_fetch_requests_total', { kind }) ?? 0) -
      (sumOf([fetchesBefore], 'spool_kafka_fetch_requests_total', { kind }) ?? 0);
    expect(fetches('full')).toBeGreaterThanOrEqual(1);
    expect(fetches('incremental')).toBeGreaterThanOrEqual(1);
    expect(fetches('session_error')).toBe(0);
    // The group committed what it read (the SDK sees it): the next member resumes after it.
    const committed = await admin.fetchOffsets({ groupId: 'console-group', topics: ['console'] });
    const committedTotal = committed[0]!.partitions.reduce(
      (sum, entry) => sum + Number(entry.offset),
      0,
    );
    expect(committedTotal).toBe(first.length);

    const second = keyedLines(30, 40);
    const produceMore = await tool(
      'consoleProducer',
      [
        '--topic',
        'console',
        '--reader-property',
        'parse.key=true',
        '--reader-property',
        'key.separator=:',
      ],
      `${second.join('\n')}\n`,
    );
    expect(produceMore.exitCode, describeRun(produceMore)).toBe(0);
    expect(await consumeConsole('console', 'console-group', second.length, false)).toEqual(
      [...second].sort(),
    );
  });

  it('kafka-consumer-groups describes the group and resets its offsets to the earliest', async () => {
    const describeGroup = await tool('consumerGroups', ['--describe', '--group', 'console-group']);
    expect(describeGroup.exitCode, describeRun(describeGroup)).toBe(0);
    const rows = describeGroup.stdout
      .split('\n')
      .filter((line) => line.startsWith('console-group '))
      .map((line) => line.trim().split(/\s+/));
    // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    expect(rows).toHaveLength(partitionCount);
    expect(rows.reduce((sum, row) => sum + Number(row[3]), 0)).toBe(40);
    expect(rows.every((row) => row[1] === 'console' && row[3] === row[4] && row[5] === '0')).toBe(
      true,
    );

    const reset = await tool('consumerGroups', [
      '--reset-offsets',
      '--group',
      'console-group',
      '--topic',
      'console',
      '--to-earliest',
      '--execute',
    ]);
    expect(reset.exitCode, describeRun(reset)).toBe(0);
    const committed = await admin.fetchOffsets({ groupId: 'console-group', topics: ['console'] });
    expect(committed[0]!.partitions.every((entry) => Number(entry.offset) === 0)).toBe(true);
    expect(await consumeConsole('console', 'console-group', 40, false)).toEqual(
      keyedLines(0, 40).sort(),
    );
  });

  it('kafka-get-offsets finds the largest timestamp (ListOffsets v7) and the earliest local offset (v8)', async () => {
    /** `topic:partition:offset` lines by partition; an empty offset (none) as -1. */
    const offsetsAt = async (time: string): Promise<Map<number, number>> => {
      const run = await tool('getOffsets', ['--topic', 'console', '--time', time]);
      expect(run.exitCode, describeRun(run)).toBe(0);
      const lines = run.stdout.split('\n').filter((line) => line.startsWith('console:'));
      expect(lines, describeRun(run)).toHaveLength(partitionCount);
      return new Map(
        lines.map((line) => {
          const [, partition, offset] = line.split(':');
          return [Number(partition), offset === '' ? -1 : Number(offset)];
        }),
      );
    };
    // The SDK's view: per partition, the first record carrying its largest timestamp.
    const records = await consumeFromBeginning(spool, 'console', 40);
    const expected = new Map<number, number>();
    for (let partition = 0; partition < partitionCount; partition++) {
      let best: { offset: bigint; timestamp: bigint } | undefined;
      for (const record of records.filter((entry) => entry.partition === partition)) {
        if (best === undefined || record.timestamp > best.timestamp) {
          best = { offset: record.offset, timestamp: record.timestamp };
        }
      }
      expected.set(partition, best === undefined ? -1 : Number(best.offset));
    }
    expect(await offsetsAt('-3')).toEqual(expected);
    expect(await offsetsAt('-4')).toEqual(
      new Map(Array.from({ length: partitionCount }, (_, partition) => [partition, 0])),
    );
  });

  it("kafka-consumer-groups --delete-offsets removes an empty group's commits of a topic", async () => {
    const before = await admin.fetchOffsets({ groupId: 'console-group', topics: ['console'] });
    expect(before[0]!.partitions.some((entry) => Number(entry.offset) > 0)).toBe(true);
    const deleted = await tool('consumerGroups', [
      '--delete-offsets',
      '--group',
      'console-group',
      '--topic',
      'console',
    ]);
    expect(deleted.exitCode, describeRun(deleted)).toBe(0);
    expect(deleted.stdout, describeRun(deleted)).toMatch(/console\s+0\s+Successful/);
    const after = await admin.fetchOffsets({ groupId: 'console-group', topics: ['console'] });
    expect(after[0]?.partitions.filter((entry) => Number(entry.offset) >= 0) ?? []).toEqual([]);
  });

  it('ProducerPerformance and ConsumerPerformance move every record', async () => {
    const records = 5_000;
    const produce = await runKafkaTool(
      'producerPerformance',
      [
        '--topic',
        'perf',
        '--num-records',
        String(records),
        '--record-size',
        '100',
        '--throughput',
        '-1',
        // One flag, several properties (a second --command-property replaces the first).
        '--command-property',
        `bootstrap.servers=${bootstrap}`,
        'acks=all',
      ],
      { timeoutMs: toolTimeoutMs },
    );
    expect(produce.exitCode, describeRun(produce)).toBe(0);
    expect(produce.stdout).toMatch(
      new RegExp(`^${records} records sent, [\\d.]+ records/sec`, 'm'),
    );
    expect(await recordCount('perf')).toBe(records);

    const consume = await tool('consumerPerformance', [
      '--topic',
      'perf',
      '--num-records',
      String(records),
      '--timeout',
      '20000',
    ]);
    expect(consume.exitCode, describeRun(consume)).toBe(0);
    // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ...
    const figures = consume.stdout.trim().split('\n').at(-1)!.split(', ');
    expect(Number(figures[4]), describeRun(consume)).toBe(records);
  });

  it('kafka-reassign-partitions moves a partition from broker 1 to broker 2, verifies it and lists nothing left', async () => {
    // The tool refuses a target broker that DescribeCluster does not list: it lists the storage
    // brokers, so the move is between two of them, neither of which is broker 0.
    await admin.createTopics({
      topics: [{ topic: 'moving', numPartitions: 3, replicationFactor: 1 }],
    });
    const [described] = await admin.describeTopics({ topics: ['moving'] });
    const onBrokerOne = described!.partitions.find((entry) => entry.replicas[0] === 1);
    expect(onBrokerOne, 'placement put one of three partitions on broker 1').toBeDefined();
    const movingPartition = onBrokerOne!.partition;
    const to = 2;
    const producer = spool.producer();
    await producer.send({
      topic: 'moving',
      messages: Array.from({ length: 20 }, (_, index) => ({
        partition: movingPartition,
        value: `moving-${index}`,
      })),
    });
    await producer.close();
    const folder = mkdtempSync(path.join(tmpdir(), 'spool-reassign-tool-'));
    const plan = path.join(folder, 'plan.json');
    writeFileSync(
      plan,
      JSON.stringify({
        version: 1,
        partitions: [
          { topic: 'moving', partition: movingPartition, replicas: [to], log_dirs: ['any'] },
        ],
      }),
    );
    const throttle = 10_000_000;
    /** The throttles in effect: the topic's replica lists and brokers 1 and 2's rates. */
    const describeThrottles = async () => {
      const [topic, brokers] = await Promise.all([
        tool('configs', ['--entity-type', 'topics', '--entity-name', 'moving', '--describe']),
        tool('configs', ['--entity-type', 'brokers', '--describe']),
      ]);
      expect(topic.exitCode, describeRun(topic)).toBe(0);
      expect(brokers.exitCode, describeRun(brokers)).toBe(0);
      return { topic: topic.stdout, brokers: brokers.stdout };
    };
    try {
      // --throttle sets the moving partition's replica lists on the topic (its current replica
      // on the leader side, the new one on the follower side) and both rates on the brokers it
      // moves between.
      const executed = await tool('reassignPartitions', [
        '--execute',
        '--throttle',
        String(throttle),
        '--reassignment-json-file',
        plan,
      ]);
      expect(executed.exitCode, describeRun(executed)).toBe(0);
      expect(executed.stdout, describeRun(executed)).toContain(
        'Successfully started partition reassignment',
      );
      expect(executed.stdout, describeRun(executed)).toContain(
        `The inter-broker throttle limit was set to ${throttle} B/s`,
      );
      const during = await describeThrottles();
      expect(during.topic).toContain(
        `leader.replication.throttled.replicas=${movingPartition}:1 sensitive=false`,
      );
      expect(during.topic).toContain(
        `follower.replication.throttled.replicas=${movingPartition}:${to} sensitive=false`,
      );
      for (const broker of [1, to]) {
        const section = during.brokers.split(`Dynamic configs for broker ${broker} are:`)[1];
        expect(section, during.brokers).toBeDefined();
        const own = section!.split('Dynamic configs for broker')[0]!;
        expect(own).toContain(`leader.replication.throttled.rate=${throttle}`);
        expect(own).toContain(`follower.replication.throttled.rate=${throttle}`);
      }
      // The rates reach the storage node that sends the moving partition's records.
      const fromNode = dev!.processes.find(
        (entry) => entry.role === 'storage-node' && entry.id === 1,
      )!;
      await vi.waitFor(
        async () =>
          expect(
            sumOf(
              [await scrape(fromNode.ports.metrics)],
              'spool_replication_throttled_rate_bytes',
              {
                side: 'leader',
              },
            ),
          ).toBe(throttle),
        { timeout: 20_000, interval: 300 },
      );
      // --verify without --preserve-throttles clears every throttle once the move completed:
      // both replica lists on the topic, and the two rates and
      // replica.alter.log.dirs.io.max.bytes.per.second on every broker.
      await vi.waitFor(
        async () => {
          const verified = await tool('reassignPartitions', [
            '--verify',
            '--reassignment-json-file',
            plan,
          ]);
          expect(verified.exitCode, describeRun(verified)).toBe(0);
          expect(verified.stdout, describeRun(verified)).toContain(
            `Reassignment of partition moving-${movingPartition} is completed`,
          );
          expect(verified.stdout, describeRun(verified)).toContain(
            'Clearing topic-level throttles on topic moving',
          );
        },
        { timeout: 90_000, interval: 500 },
      );
      const after = await describeThrottles();
      expect(after.topic).not.toContain('throttled');
      expect(after.brokers).not.toContain('throttled');
      await vi.waitFor(
        async () =>
          expect(
            sumOf(
              [await scrape(fromNode.ports.metrics)],
              'spool_replication_throttled_rate_bytes',
              {
                side: 'leader',
              },
            ),
          ).toBe(0),
        { timeout: 20_000, interval: 300 },
      );
      const [moved] = await admin.describeTopics({ topics: ['moving'] });
      expect(
        moved!.partitions.find((entry) => entry.partition === movingPartition)!.replicas,
      ).toEqual([to]);
      // kafka-log-dirs asks broker 2 itself (DescribeLogDirs on its port): the partition is in
      // its data directory, with the size its heartbeats report once it holds the records.
      await vi.waitFor(
        async () => {
          const logDirs = await tool('logDirs', [
            '--describe',
            '--broker-list',
            String(to),
            '--topic-list',
            'moving',
          ]);
          expect(logDirs.exitCode, describeRun(logDirs)).toBe(0);
          const json = logDirs.stdout.split('\n').find((line) => line.startsWith('{'));
          const described = JSON.parse(json ?? '{}') as {
            brokers?: Array<{
              broker: number;
              logDirs: Array<{
                logDir: string;
                error: string | null;
                partitions: Array<{ partition: string; size: number }>;
              }>;
            }>;
          };
          const [logDir] = described.brokers?.find((entry) => entry.broker === to)?.logDirs ?? [];
          expect(logDir, describeRun(logDirs)).toMatchObject({
            logDir: `spool-storage-${to}`,
            error: null,
          });
          const moved = logDir!.partitions.find(
            (entry) => entry.partition === `moving-${movingPartition}`,
          );
          expect(moved?.size ?? 0, describeRun(logDirs)).toBeGreaterThan(0);
        },
        { timeout: 60_000, interval: 1_000 },
      );
      const listed = await tool('reassignPartitions', ['--list']);
      expect(listed.exitCode, describeRun(listed)).toBe(0);
      expect(listed.stdout, describeRun(listed)).toContain('No partition reassignments found');
      // Nothing is moving: the cancel is answered NO_REASSIGNMENT_IN_PROGRESS, which the tool
      // reports as nothing active, and it clears the (already cleared) throttles again.
      const cancelled = await tool('reassignPartitions', [
        '--cancel',
        '--reassignment-json-file',
        plan,
      ]);
      expect(cancelled.exitCode, describeRun(cancelled)).toBe(0);
      expect(cancelled.stdout, describeRun(cancelled)).toContain(
        'None of the specified partition reassignments are active',
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 150_000);

  it("kafka-configs sets, describes and deletes brokers' dynamic configs, which reach the storage node", async () => {
    const configs = (args: readonly string[]) =>
      tool('configs', ['--entity-type', 'brokers', ...args]);
    const storageNode = dev!.processes.find(
      (entry) => entry.role === 'storage-node' && entry.id === 1,
    )!;
    /** Broker 1's replication throttles in effect, by side, from its own metrics. */
    const throttlesOfBrokerOne = async () => {
      const scraped = await scrape(storageNode.ports.metrics);
      return Object.fromEntries(
        ['leader', 'follower'].map((side) => [
          side,
          sumOf([scraped], 'spool_replication_throttled_rate_bytes', { side }),
        ]),
      );
    };

    const setOwn = await configs([
      '--entity-name',
      '1',
      '--alter',
      '--add-config',
      'leader.replication.throttled.rate=1000000',
    ]);
    expect(setOwn.exitCode, describeRun(setOwn)).toBe(0);
    expect(setOwn.stdout, describeRun(setOwn)).toContain('Completed updating config for broker 1.');
    const setDefault = await configs([
      '--entity-default',
      '--alter',
      '--add-config',
      'follower.replication.throttled.rate=2000000',
    ]);
    expect(setDefault.exitCode, describeRun(setDefault)).toBe(0);

    const describedOwn = await configs(['--entity-name', '1', '--describe']);
    expect(describedOwn.exitCode, describeRun(describedOwn)).toBe(0);
    expect(describedOwn.stdout, describeRun(describedOwn)).toContain(
      'Dynamic configs for broker 1 are:\n  leader.replication.throttled.rate=1000000 ' +
        'sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000000}',
    );
    const describedDefault = await configs(['--entity-default', '--describe']);
    expect(describedDefault.exitCode, describeRun(describedDefault)).toBe(0);
    expect(describedDefault.stdout, describeRun(describedDefault)).toContain(
      'follower.replication.throttled.rate=2000000 sensitive=false ' +
        'synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=2000000}',
    );
    // The storage node applies its own value and the default within a heartbeat or so.
    await vi.waitFor(
      async () =>
        expect(await throttlesOfBrokerOne()).toEqual({ leader: 1_000_000, follower: 2_000_000 }),
      { timeout: 20_000, interval: 300 },
    );

    // An unknown name is INVALID_CONFIG naming it; a static setting is refused as Kafka refuses
    // a config it cannot update dynamically. Neither changes anything.
    const unknown = await configs([
      '--entity-name',
      '1',
      '--alter',
      '--add-config',
      'no.such.config=1',
    ]);
    expect(unknown.exitCode, describeRun(unknown)).not.toBe(0);
    expect(`${unknown.stdout}${unknown.stderr}`).toMatch(
      /InvalidConfigurationException.*no\.such\.config/,
    );
    const readOnly = await configs([
      '--entity-name',
      '1',
      '--alter',
      '--add-config',
      'log.dirs=/elsewhere',
    ]);
    expect(readOnly.exitCode, describeRun(readOnly)).not.toBe(0);
    expect(`${readOnly.stdout}${readOnly.stderr}`).toMatch(
      /InvalidRequestException.*Cannot update these configs dynamically: log\.dirs/,
    );

    const deletedOwn = await configs([
      '--entity-name',
      '1',
      '--alter',
      '--delete-config',
      'leader.replication.throttled.rate',
    ]);
    expect(deletedOwn.exitCode, describeRun(deletedOwn)).toBe(0);
    const deletedDefault = await configs([
      '--entity-default',
      '--alter',
      '--delete-config',
      'follower.replication.throttled.rate',
    ]);
    expect(deletedDefault.exitCode, describeRun(deletedDefault)).toBe(0);
    const describedAfter = await configs(['--entity-name', '1', '--describe']);
    expect(describedAfter.stdout, describeRun(describedAfter)).not.toContain('throttled');
    await vi.waitFor(
      async () => expect(await throttlesOfBrokerOne()).toEqual({ leader: 0, follower: 0 }),
      { timeout: 20_000, interval: 300 },
    );
  }, 120_000);
});
