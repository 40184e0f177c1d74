// Proves the gateway takes work off a partition leader that stops answering (SIGSTOP: a long GC
// pause, a host cut off) as soon as the metadata names its successor, not when the calls to it
// time out: a produce in flight to the paused leader (acks=all, a 30 s request timeout, no client
// retry) is acknowledged by the new leader within a few seconds of the fence (3 s session), and a
// Consume stream whose fetch was waiting on the paused leader delivers the new record within a
// second or two of its acknowledgement (the fetch would have held it for over ten seconds).
// Real processes on loopback: a controller, three storage nodes, a gateway, the SDK.
import { Spool, type Consumer, type Producer } from '@spool/client';
import { createLogger } from '@spool/common';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { startGatewayProcess } from './support/gateway-client';
import type { ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'paused-leader';
/** The controller's broker.session.timeout.ms in StorageTestCluster. */
const sessionTimeoutMs = 3_000;

let cluster: StorageTestCluster;
let gateway: ServiceProcess;
let spool: Spool;
let producer: Producer | undefined;
let consumer: Consumer | undefined;

beforeAll(async () => {
  cluster = await StorageTestCluster.start(3, { nodeArgs: ['--replica-lag-time-max-ms', '2000'] });
  gateway = await startGatewayProcess(cluster.controller.grpcPort);
  spool = new Spool({
    brokers: [`127.0.0.1:${gateway.grpcPort}`],
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
}, 60_000);

afterAll(async () => {
  for (const node of cluster?.nodes.values() ?? []) node.process.child.kill('SIGCONT');
  await consumer?.disconnect().catch(() => undefined);
  await producer?.disconnect().catch(() => undefined);
  gateway?.child.kill('SIGKILL');
  await gateway?.exited;
  await cluster?.stop();
});

it('moves a produce and a consume fetch off a paused leader once it is fenced', async () => {
  await cluster.createTopic(topic, 1, 3);
  producer = spool.producer({
    acks: 'all',
    enableIdempotence: false,
    retries: 0,
    requestTimeoutMs: 30_000,
    lingerMs: 0,
  });
  await producer.send({ topic, messages: [{ value: 'before' }] });
  const deliveredAtMs = new Map<string, number>();
  consumer = spool.consumer({ autoOffsetReset: 'earliest', requestTimeoutMs: 30_000 });
  consumer.assign([{ topic, partition: 0, offset: 0n }]);
  await consumer.run({
    eachMessage: async ({ message }) => {
      deliveredAtMs.set(message.value!.toString(), Date.now());
    },
  });
  await eventually(async () => expect(deliveredAtMs.has('before')).toBe(true), 10_000);

  const leader = await cluster.leaderOf(topic, 0);
  cluster.nodes.get(leader)!.process.child.kill('SIGSTOP');
  const pausedAtMs = Date.now();
  await producer.send({ topic, messages: [{ value: 'during' }] });
  const acknowledgedAtMs = Date.now();
  expect(await cluster.leaderOf(topic, 0)).not.toBe(leader);
  // The fence comes after the session timeout; the produce follows it, not its own 30 s.
  expect(acknowledgedAtMs - pausedAtMs).toBeLessThan(sessionTimeoutMs + 5_000);

  await eventually(async () => expect(deliveredAtMs.has('during')).toBe(true), 15_000);
  expect(deliveredAtMs.get('during')! - acknowledgedAtMs).toBeLessThan(2_500);
}, 60_000);
