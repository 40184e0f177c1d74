// A producer rides out its leader's death: real processes (a controller, three storage nodes, a
// coordinator handing out producer ids, a gateway), a topic with replication factor 3, and an
// idempotent acks=all producer (the SDK's defaults) sending numbered records while the leader of
// partition 0 is killed with SIGKILL. Its requests time out after 1 s, sooner than the election
// (the controller's 3 s broker session timeout), so the gateway gives up on the dead leader and
// the SDK itself must retry. Every send must resolve once a new leader is elected, the SDK's log
// must show retries and one producer id (no epoch bump, no expired batch), and a consumer must
// read every record back exactly once, in the order sent, per partition.
import { Spool, type ConsumedMessage, type RecordMetadata } from '@spool/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { startGatewayProcess } from './support/gateway-client';
import { startServiceProcess, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'failover';
const partitionCount = 3;
/** Records in all, sent in sends of recordsPerSend, at most sendsInFlightMax unsettled at once. */
const recordCount = 6_000;
const recordsPerSend = 20;
const sendsInFlightMax = 8;
/** The leader dies once this many records were acknowledged. */
const recordsBeforeKill = 1_500;

let cluster: StorageTestCluster;
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
  const logger = pino({ level: 'debug' }, { write: (line: string) => void sdkLog.push(line) });
  spool = new Spool({
    brokers: [`127.0.0.1:${gateway.grpcPort}`],
    clientId: 'failover-spec',
    logger,
  });
}, 60_000);

afterAll(async () => {
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
    await consumer.disconnect();
  }
  return messages;
}

describe('a producer while the leader of its partition is killed', () => {
  it('acknowledges every record once a new leader is elected; each is read back once, in order', async () => {
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
    await producer.disconnect();
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
    await admin.disconnect();
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
