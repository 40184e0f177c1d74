// Proves how the connection fails over and how its ProduceStreams follow, against fake gateways
// (real grpc-js servers on loopback): the stream to the gateway left behind answers what already
// waits on it and then closes, and new produces open a stream on the next gateway; a gateway that
// lets a produce go unanswered past its deadline is left for the next one (listeners are told),
// unless it is the only one; one whose keepalive pings go unanswered (frozen behind a relay, as
// a paused process) is left in seconds, long before a far deadline.
import { SpoolError, createLogger } from '@spool/common';
import { startFreezingRelay } from '@spool/common/testing';
import { Acks, type ProduceRequest } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { afterEach, expect, it, vi } from 'vitest';
import { GatewayConnection } from './gateway-connection';
import { FakeGateway } from './testing';

const gateways: FakeGateway[] = [];
const connections: GatewayConnection[] = [];
const relays: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const connection of connections.splice(0)) connection.close();
  await Promise.all(relays.splice(0).map((relay) => relay.close()));
  for (const gateway of gateways) gateway.releaseProduce();
  await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));
});

function produceRequest(): ProduceRequest {
  const records = encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.from('v'), timestampMs: 1n }],
  });
  return {
    partitions: [{ topic: 't', partition: 0, records }],
    acks: Acks.ACKS_ALL,
    timeoutMs: 5_000,
  };
}

it('closes the ProduceStream to a gateway it failed over from once its produces are answered', async () => {
  const left = await FakeGateway.start({ t: 1 });
  const next = await FakeGateway.start({ t: 1 });
  gateways.push(left, next);
  const connection = new GatewayConnection(
    [left.address, next.address],
    'test',
    createLogger({ service: 'test', level: 'silent' }),
  );
  connections.push(connection);

  left.holdProduce();
  const waiting = connection.produce(produceRequest(), 5_000);
  await vi.waitFor(() => expect(left.produceRequests).toHaveLength(1));
  connection.failOver(new SpoolError('UNAVAILABLE', 'test', { retriable: true }), 0);

  // The produce that waits on the old stream still gets its answer; the stream stays open for it.
  expect(left.produceStreamsClosed).toBe(0);
  const moved = await connection.produce(produceRequest(), 5_000);
  expect(moved.results[0]?.error).toBeUndefined();
  expect(next.produceStreamsOpened).toBe(1);
  left.releaseProduce();
  const answered = await waiting;
  expect(answered.results[0]?.baseOffset).toBe(0n);
  await vi.waitFor(() => expect(left.produceStreamsClosed).toBe(1));
  expect(left.produceStreamsOpened).toBe(1);
});

it('moves to the next gateway when one lets a produce go unanswered past its deadline', async () => {
  const paused = await FakeGateway.start({ t: 1 });
  const next = await FakeGateway.start({ t: 1 });
  gateways.push(paused, next);
  const connection = new GatewayConnection(
    [paused.address, next.address],
    'test',
    createLogger({ service: 'test', level: 'silent' }),
  );
  connections.push(connection);
  const failOvers: string[] = [];
  connection.onFailOver(() => failOvers.push(connection.address));

  paused.holdProduce();
  await expect(connection.produce(produceRequest(), 300)).rejects.toMatchObject({
    code: 'REQUEST_TIMED_OUT',
  });
  expect(failOvers).toEqual([next.address]);
  const moved = await connection.produce(produceRequest(), 5_000);
  expect(moved.results[0]?.error).toBeUndefined();
  expect(next.produceRequests).toHaveLength(1);
});

it('stays on the only gateway it has when a produce goes unanswered', async () => {
  const only = await FakeGateway.start({ t: 1 });
  gateways.push(only);
  const connection = new GatewayConnection(
    [only.address],
    'test',
    createLogger({ service: 'test', level: 'silent' }),
  );
  connections.push(connection);
  const failOvers: string[] = [];
  connection.onFailOver(() => failOvers.push(connection.address));
  only.holdProduce();
  await expect(connection.produce(produceRequest(), 300)).rejects.toMatchObject({
    code: 'REQUEST_TIMED_OUT',
  });
  expect(failOvers).toEqual([]);
  expect(connection.address).toBe(only.address);
});

/**
 * Two gateways, the first behind a relay that can freeze (a paused process): the connection to
 * them, and the addresses it failed over to, in order.
 */
async function silentAndNext() {
  const paused = await FakeGateway.start({ t: 1 });
  const next = await FakeGateway.start({ t: 1 });
  gateways.push(paused, next);
  const relay = await startFreezingRelay(paused.address);
  relays.push(relay);
  const connection = new GatewayConnection(
    [relay.address, next.address],
    'test',
    createLogger({ service: 'test', level: 'silent' }),
  );
  connections.push(connection);
  const failOvers: string[] = [];
  connection.onFailOver(() => failOvers.push(connection.address));
  return { paused, next, relay, connection, failOvers };
}

it('leaves a gateway whose keepalive pings go unanswered before the call deadline passes', async () => {
  const { next, relay, connection, failOvers } = await silentAndNext();
  expect((await connection.produce(produceRequest(), 5_000)).results[0]?.error).toBeUndefined();

  relay.freeze();
  const startedAt = Date.now();
  // A deadline far away: only the unanswered pings can end this call early. The stream broke
  // under it: a retriable NETWORK_EXCEPTION, as a cut connection is in Kafka's clients.
  await expect(connection.produce(produceRequest(), 30_000)).rejects.toMatchObject({
    code: 'NETWORK_EXCEPTION',
    retriable: true,
  });
  expect(Date.now() - startedAt).toBeLessThan(5_000);
  expect(failOvers).toEqual([next.address]);
  const moved = await connection.produce(produceRequest(), 5_000);
  expect(moved.results[0]?.error).toBeUndefined();
  expect(next.produceRequests).toHaveLength(1);
});

it('moves on once when every call on a silent gateway fails at once, not back to it', async () => {
  const { paused, next, relay, connection, failOvers } = await silentAndNext();
  paused.holdProduce();
  // Three unary calls in flight on the gateway when it falls silent (a heartbeat, a commit and
  // a fetch, say): the unanswered pings fail them all at the same moment.
  const inFlight = [1, 2, 3].map(() =>
    connection.callOnce((client) => client.produce, produceRequest(), 30_000),
  );
  await vi.waitFor(() => expect(paused.produceRequests).toHaveLength(3));
  relay.freeze();
  const results = await Promise.allSettled(inFlight);
  expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
  // One step on: with two gateways, each failure moving a step would end on the silent one.
  expect(failOvers).toEqual([next.address]);
  expect(connection.address).toBe(next.address);
});
