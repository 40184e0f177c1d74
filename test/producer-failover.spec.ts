// A producer rides out its leader's death: real processes (a controller, three storage nodes, a
// coordinator handing out producer ids, a gateway), a topic with replication factor 3, and an
// idempotent acks=all producer (the SDK's defaults) sending numbered records while the leader of
// partition 0 is killed with SIGKILL. Its requests time out after 1 s, sooner than the election
// (the controller's 3 s broker session timeout), so the gateway gives up on the dead leader and
// the SDK itself must retry. Every send must resolve once a new leader is elected, the SDK's log
// must show retries and one producer id (no epoch bump, no expired batch), and a consumer must
// read every record back exactly once, in the order sent, per partition.
//
// Before that kill, on the same cluster, consuming from an offset out of range behaves as in
// Kafka: past the end or before the log start (after DeleteRecords) the SDK consumer resets by
// autoOffsetReset and says where (offsetReset), or with `none` fails OFFSET_OUT_OF_RANGE naming
// the partition, the offset and the valid range; `spool consume --offset` past the end says so
// on stderr and resumes per --reset, or exits 1 with the error under --reset none.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import {
  Spool,
  SpoolError,
  type ConsumedMessage,
  type OffsetReset,
  type RecordMetadata,
} from '@spool/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { startGatewayProcess } from './support/gateway-client';
import { startServiceProcess, workspaceRoot, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'failover';
const partitionCount = 3;
/** Records in all, sent in sends of recordsPerSend, at most sendsInFlightMax unsettled at once. */
const recordCount = 6_000;
const recordsPerSend = 20;
const sendsInFlightMax = 8;
/** The leader dies once this many records were acknowledged. */
const recordsBeforeKill = 1_500;

/** A one-partition topic for the out-of-range cases, holding rangeRecordCount records. */
const rangeTopic = 'ranges';
const rangeRecordCount = 6;
const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');

let cluster: StorageTestCluster;
let gatewayAddress: string;
const processes: ServiceProcess[] = [];
let spool: Spool;
/** The SDK's own log records, as JSON lines. */
const sdkLog: string[] = [];
const sdkLogCount = (message: string): number =>
  sdkLog.filter((line) => line.includes(`"msg":"${message}"`)).length;

beforeAll(async () => {
  // A follower that stops fetching leaves the ISR after 2 s, so acks=all is not held for 30 s.
  cluster = await StorageTestCluster.start(3, { nodeArgs: ['--replica-lag-time-max-ms', '2000'] });
  const controllerAddress = `127.0.0.1:${cluster.controller.grpcPort}`;
  processes.push(
    await startServiceProcess('coordinator', ['--controller-addresses', controllerAddress]),
  );
  const gateway = await startGatewayProcess(cluster.controller.grpcPort);
  processes.push(gateway);
  await cluster.createTopic(topic, partitionCount, 3);
  await cluster.createTopic(rangeTopic, 1, 3);
  gatewayAddress = `127.0.0.1:${gateway.grpcPort}`;
  const logger = pino({ level: 'debug' }, { write: (line: string) => void sdkLog.push(line) });
  spool = new Spool({
    brokers: [gatewayAddress],
    clientId: 'failover-spec',
    logger,
  });
}, 60_000);

afterAll(async () => {
  await spool?.close();
  for (const service of processes) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await cluster?.stop();
});

/** Reads `count` records of one partition from offset 0, values only. */
async function readPartition(partition: number, count: number): Promise<ConsumedMessage[]> {
  const consumer = spool.consumer({ autoOffsetReset: 'none' });
  consumer.assign([{ topic, partition, offset: 0n }]);
  const messages: ConsumedMessage[] = [];
  try {
    for await (const message of consumer) {
      messages.push({ ...message, value: Buffer.from(message.value!) });
      if (messages.length >= count) break;
    }
  } finally {
    await consumer.close();
  }
  return messages;
}

/** Runs `spool consume` against the gateway; resolves with its exit code and output. */
async function spoolConsume(
  argv: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [cliEntryPoint, 'consume', ...argv, '--gateway', gatewayAddress],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Bounded: a command that hangs is killed and fails the test with what it printed.
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe('consuming from an offset out of range', () => {
  beforeAll(async () => {
    const producer = spool.producer();
    await producer.send({
      topic: rangeTopic,
      messages: Array.from({ length: rangeRecordCount }, (_, index) => ({ value: `v${index}` })),
    });
    await producer.close();
  });

  it('resets past the end to latest, and fails naming the range under none', async () => {
    const latest = spool.consumer({ autoOffsetReset: 'latest' });
    const reset = new Promise<OffsetReset>((resolve) => latest.on('offsetReset', resolve));
    latest.assign([{ topic: rangeTopic, partition: 0, offset: 1_000_000_000n }]);
    const next = latest.messages().next();
    expect(await reset).toEqual({
      topic: rangeTopic,
      partition: 0,
      offset: 1_000_000_000n,
      logStartOffset: 0n,
      highWatermark: BigInt(rangeRecordCount),
      policy: 'latest',
      resetTo: BigInt(rangeRecordCount),
    });
    const producer = spool.producer();
    await producer.send({ topic: rangeTopic, messages: [{ value: 'after the reset' }] });
    await producer.close();
    const { value: message } = await next;
    expect(message?.value?.toString()).toBe('after the reset');
    await latest.close();

    const strict = spool.consumer({ autoOffsetReset: 'none' });
    strict.assign([{ topic: rangeTopic, partition: 0, offset: 1_000_000_000n }]);
    const error = await strict
      .messages()
      .next()
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    await strict.close();
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe('OFFSET_OUT_OF_RANGE');
    expect((error as SpoolError).message).toBe(
      `${rangeTopic}[0]: offset 1000000000 is out of range: valid offsets are 0 to ` +
        `${rangeRecordCount + 1} (the log start offset to the high watermark), and ` +
        'autoOffsetReset is none',
    );
  });

  it('resets before the log start to earliest after DeleteRecords', async () => {
    const admin = spool.admin();
    await admin.deleteTopicRecords({
      topic: rangeTopic,
      partitions: [{ partition: 0, offset: 2n }],
    });
    await admin.close();
    const earliest = spool.consumer({ autoOffsetReset: 'earliest' });
    const resets: OffsetReset[] = [];
    earliest.on('offsetReset', (reset) => resets.push(reset));
    earliest.assign([{ topic: rangeTopic, partition: 0, offset: 0n }]);
    const { value: message } = await earliest.messages().next();
    await earliest.close();
    expect([message?.offset, message?.value?.toString()]).toEqual([2n, 'v2']);
    expect(resets).toMatchObject([{ offset: 0n, logStartOffset: 2n, resetTo: 2n }]);
  });

  it('spool consume --offset past the end says so and resumes per --reset, or exits 1', async () => {
    const reset = await spoolConsume([
      rangeTopic,
      ...['--partition', '0', '--offset', '1000000000', '--reset', 'earliest'],
      ...['--max-messages', '1'],
    ]);
    expect(reset.stderr).toContain(
      `offset 1000000000 of ${rangeTopic}[0] is out of range (valid: 2 to ` +
        `${rangeRecordCount + 1}); resuming at 2 (earliest)`,
    );
    expect(reset.stdout).toBe('v2\n');
    expect(reset.code).toBe(0);

    const strict = await spoolConsume([
      rangeTopic,
      ...['--partition', '0', '--offset', '1000000000', '--reset', 'none'],
    ]);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toBe('');
    expect(strict.stderr).toContain('OFFSET_OUT_OF_RANGE');
    expect(strict.stderr).toContain(
      `${rangeTopic}[0]: offset 1000000000 is out of range: valid offsets are 2 to ` +
        `${rangeRecordCount + 1}`,
    );
  }, 60_000);
});

describe('a producer while the leader of its partition is killed', () => {
  it('acknowledges every record once a new leader is elected; each is read back once, in order', async () => {
    // The SDK's log of this producer alone.
    sdkLog.length = 0;
    const producer = spool.producer({ acks: 'all', lingerMs: 5, requestTimeoutMs: 1_000 });
    const victim = await cluster.leaderOf(topic, 0);
    const sent: string[][] = Array.from({ length: partitionCount }, () => []);
    const landed: RecordMetadata[] = [];
    const inFlight = new Set<Promise<void>>();
    let acknowledged = 0;
    let killedAtMs: number | undefined;
    let longestSendMs = 0;
    for (let first = 0; first < recordCount; first += recordsPerSend) {
      if (killedAtMs === undefined && acknowledged >= recordsBeforeKill) {
        killedAtMs = Date.now();
        expect(await cluster.stopNode(victim, 'SIGKILL')).toBe('SIGKILL');
      }
      const partition = (first / recordsPerSend) % partitionCount;
      const values = Array.from({ length: recordsPerSend }, (_, index) => `r-${first + index}`);
      sent[partition]!.push(...values);
      const startedAtMs = Date.now();
      const send: Promise<void> = producer
        .send({ topic, messages: values.map((value) => ({ value, partition })) })
        .then((records) => {
          landed.push(...records);
          acknowledged += records.length;
          longestSendMs = Math.max(longestSendMs, Date.now() - startedAtMs);
        })
        .finally(() => inFlight.delete(send));
      inFlight.add(send);
      if (inFlight.size >= sendsInFlightMax) await Promise.race(inFlight);
    }
    // Every send resolves: Promise.all rejects on the first that does not.
    await Promise.all(inFlight);
    await producer.close();
    expect(killedAtMs, 'the leader was killed mid-run').toBeDefined();
    expect(acknowledged).toBe(recordCount);
    const retries = sdkLogCount('retrying a produce batch');
    console.log(
      `broker ${victim} killed after ${recordsBeforeKill} records; the longest send took ` +
        `${longestSendMs} ms; all ${recordCount} acknowledged ${Date.now() - killedAtMs!} ms ` +
        `after the kill; the SDK retried ${retries} times`,
    );
    expect(retries, 'the SDK retried what the gateway gave up on').toBeGreaterThan(0);
    expect(sdkLogCount('producer id assigned'), 'idempotent by default').toBe(1);
    expect(sdkLogCount('producer epoch bumped')).toBe(0);
    expect(sdkLogCount('a produce batch expired')).toBe(0);
    await eventually(async () => {
      const leader = await cluster.leaderOf(topic, 0);
      if (leader === victim || leader < 0) throw new Error(`partition 0 is led by ${leader}`);
    }, 10_000);

    const admin = spool.admin();
    const ends = await admin.fetchTopicOffsets(topic);
    await admin.close();
    // Each log holds as many records as were sent to it: none written twice.
    expect(ends.map((end) => end.high)).toEqual(sent.map((values) => BigInt(values.length)));
    for (let partition = 0; partition < partitionCount; partition++) {
      const offsets = landed
        .filter((record) => record.partition === partition)
        .map((record) => record.offset)
        .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
      // Acknowledged offsets are distinct and contiguous from 0.
      expect(offsets, `partition ${partition} offsets`).toEqual(
        sent[partition]!.map((_, index) => BigInt(index)),
      );
      const read = await readPartition(partition, sent[partition]!.length);
      expect(
        read.map((message) => message.value!.toString()),
        `partition ${partition} values`,
      ).toEqual(sent[partition]);
    }
  }, 150_000);
});
