// Proves KIP-848 on the Kafka listener with Apache Kafka's own Java client (the pinned 4.4.0
// tools): console consumers with group.protocol=consumer heartbeat with ConsumerGroupHeartbeat,
// split a topic's partitions 3 and 3, and when one leaves the other is given all six and reads
// what follows; their auto-commits are the group's committed offsets (the SDK reads them) and a
// later consumer resumes after them; a Java consumer and an SDK consumer share one group; and
// kafka-consumer-groups --describe (ConsumerGroupDescribe) shows the members of such a group:
// each partition's member, its host and its client id.
//
// One cluster (one storage node), every wait bounded; the consoles run as child processes and are
// stopped (SIGTERM: they leave their group) at the end of each test whatever happens.
import { Spool, type Admin } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  runKafkaTool,
  startKafkaTool,
  type KafkaToolRun,
  type RunningKafkaTool,
} from '../support/kafka-tools';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';

const partitionCount = 6;
/** A JVM start on a loaded machine, then a few heartbeats of a rebalance. */
const rebalanceTimeoutMs = 60_000;
const toolTimeoutMs = 45_000;
/** Each test starts three JVMs (seconds each on a loaded machine) and waits for rebalances. */
const testTimeoutMs = 150_000;

let dev: SpoolDevProcess | undefined;
let spool: Spool;
let admin: Admin;
let bootstrap: string;

function describeRun(run: KafkaToolRun): string {
  return `exit ${run.exitCode}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
}

/** Keyed lines `key-<n>:value-<n>` for n in [from, to). */
function keyedLines(from: number, to: number): string[] {
  return Array.from(
    { length: to - from },
    (_, index) => `key-${from + index}:value-${from + index}`,
  );
}

/** Produces keyed records [from, to) through the SDK. */
async function produce(topic: string, from: number, to: number): Promise<void> {
  const producer = spool.producer({ lingerMs: 1 });
  try {
    await producer.send({
      topic,
      messages: keyedLines(from, to).map((line) => {
        const [key, value] = line.split(':');
        return { key: key!, value: value! };
      }),
    });
  } finally {
    await producer.disconnect();
  }
}

const consumerArguments = (topic: string, group: string, fromBeginning: boolean) => [
  '--bootstrap-server',
  bootstrap,
  '--topic',
  topic,
  '--group',
  group,
  ...(fromBeginning ? ['--from-beginning'] : []),
  '--consumer-property',
  'group.protocol=consumer',
  '--consumer-property',
  'auto.commit.interval.ms=500',
  '--formatter-property',
  'print.key=true',
  '--formatter-property',
  'key.separator=:',
];

/** A KIP-848 console consumer in `group`, running until stopped. */
function startConsumer(topic: string, group: string): RunningKafkaTool {
  return startKafkaTool('consoleConsumer', [
    ...consumerArguments(topic, group, true),
    '--timeout-ms',
    String(5 * rebalanceTimeoutMs),
  ]);
}

/** The distinct key:value lines the consoles printed, sorted. */
function linesOf(...consoles: RunningKafkaTool[]): string[] {
  const lines = consoles.flatMap((console) =>
    console
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('key-')),
  );
  return [...new Set(lines)].sort();
}

/** Partitions per member of the group, as the coordinators answer the SDK. */
async function assignmentSizes(groupId: string): Promise<number[]> {
  const group = await admin.describeGroup(groupId);
  return group.members.map((member) => member.assignment.length).sort();
}

/** kafka-consumer-groups --describe: the rows of the group's partitions, split on spaces. */
async function describeGroupRows(groupId: string): Promise<string[][]> {
  const run = await runKafkaTool(
    'consumerGroups',
    ['--bootstrap-server', bootstrap, '--describe', '--group', groupId],
    { timeoutMs: toolTimeoutMs },
  );
  expect(run.exitCode, describeRun(run)).toBe(0);
  return run.stdout
    .split('\n')
    .filter((line) => line.startsWith(`${groupId} `))
    .map((line) => line.trim().split(/\s+/));
}

beforeAll(async () => {
  // Members heartbeat every 500 ms instead of Kafka's 5 s: a rebalance takes a few heartbeats.
  dev = await startSpoolDev(['--nodes', '1'], {
    env: { SPOOL_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: '500' },
  });
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  bootstrap = `127.0.0.1:${(gateway.ports as { kafka?: number }).kafka!}`;
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'kip848-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
  await admin.createTopics({
    topics: ['kip848', 'kip848-mixed'].map((topic) => ({
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

describe('KIP-848 consumers (group.protocol=consumer) on the Kafka listener', () => {
  it(
    'two consumers split the partitions, one leaves and the other takes them, and the commits resume',
    async () => {
      const groupId = 'kip848-group';
      await produce('kip848', 0, 60);
      const first = startConsumer('kip848', groupId);
      const second = startConsumer('kip848', groupId);
      try {
        await vi.waitFor(async () => expect(await assignmentSizes(groupId)).toEqual([3, 3]), {
          timeout: rebalanceTimeoutMs,
          interval: 500,
        });
        await vi.waitFor(() => expect(linesOf(first, second)).toEqual(keyedLines(0, 60).sort()), {
          timeout: rebalanceTimeoutMs,
          interval: 250,
        });

        // The first leaves (its shutdown hook closes the consumer): the second is given all six.
        // The JVM exits 143 on SIGTERM once its shutdown hooks ran.
        expect(await first.stop()).toBe(143);
        await vi.waitFor(async () => expect(await assignmentSizes(groupId)).toEqual([6]), {
          timeout: rebalanceTimeoutMs,
          interval: 500,
        });
        await produce('kip848', 60, 90);
        await vi.waitFor(
          () => expect(linesOf(second)).toEqual(expect.arrayContaining(keyedLines(60, 90))),
          {
            timeout: rebalanceTimeoutMs,
            interval: 250,
          },
        );
        expect(await second.stop()).toBe(143);

        // What they read is committed (the SDK sees it), and the next member resumes after it.
        const committed = await admin.fetchOffsets({ groupId, topics: ['kip848'] });
        expect(committed[0]!.partitions.reduce((sum, entry) => sum + Number(entry.offset), 0)).toBe(
          90,
        );
        await produce('kip848', 90, 100);
        const resumed = await runKafkaTool(
          'consoleConsumer',
          [
            ...consumerArguments('kip848', groupId, false),
            '--max-messages',
            '10',
            '--timeout-ms',
            '30000',
          ],
          { timeoutMs: toolTimeoutMs },
        );
        expect(resumed.exitCode, describeRun(resumed)).toBe(0);
        expect(
          resumed.stdout
            .split('\n')
            .filter((line) => line.startsWith('key-'))
            .sort(),
        ).toEqual(keyedLines(90, 100).sort());
      } finally {
        await Promise.all([first.stop(), second.stop()]);
      }
    },
    testTimeoutMs,
  );

  it(
    'a Java consumer and an SDK consumer share one group, which kafka-consumer-groups describes',
    async () => {
      const groupId = 'kip848-mixed-group';
      await produce('kip848-mixed', 0, 30);
      const sdk = spool.consumer({ groupId, requestTimeoutMs: 5_000 });
      let java: RunningKafkaTool | undefined;
      try {
        await sdk.subscribe({ topic: 'kip848-mixed', fromBeginning: true });
        await sdk.run({ eachMessage: async () => {} });
        java = startConsumer('kip848-mixed', groupId);
        await vi.waitFor(
          async () => {
            expect(await assignmentSizes(groupId)).toEqual([3, 3]);
            expect(sdk.assignment()).toHaveLength(3);
          },
          { timeout: rebalanceTimeoutMs, interval: 500 },
        );
        const sdkPartitions = sdk.assignment().map((entry) => entry.partition);
        const sdkMember = (await admin.describeGroup(groupId)).members.find(
          (member) =>
            member.assignment.length === 3 &&
            member.assignment.every((entry) => sdkPartitions.includes(entry.partition)),
        )!;
        await vi.waitFor(
          async () => {
            const rows = await describeGroupRows(groupId);
            expect(rows).toHaveLength(partitionCount);
            const byMember = new Map<string, number[]>();
            for (const row of rows) {
              byMember.set(row[6]!, [...(byMember.get(row[6]!) ?? []), Number(row[2])]);
            }
            expect(byMember.size).toBe(2);
            expect(byMember.get(sdkMember.memberId)!.sort()).toEqual([...sdkPartitions].sort());
            // The SDK's client id, sent with its calls, is the member's client id.
            expect(rows.filter((row) => row[8] === 'kip848-spec')).toHaveLength(3);
          },
          { timeout: rebalanceTimeoutMs, interval: 1_000 },
        );
      } finally {
        await java?.stop();
        await sdk.disconnect();
      }
    },
    testTimeoutMs,
  );
});
