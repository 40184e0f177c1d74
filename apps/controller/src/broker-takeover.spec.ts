// Proves that a controller taking over fences, within its takeover grace and not a whole session
// later, the brokers that did not reach it: in-process over gRPC on the local metadata backend,
// three brokers register, the controller restarts (a new one takes over with a 60 s session
// timeout), then broker 0 heartbeats it, broker 2 only opens its metadata stream with its
// registration, and broker 1 stays silent. Their addresses accept connections and answer
// nothing (as a paused process's kernel does), so the takeover announcement concludes nothing.
// Broker 1 alone is fenced a grace after the takeover; the other two are not, also well after.
//
// And the announcement (controller-announcement.ts): a broker whose address answers
// BeginControllerEpoch with its registration is alive without a heartbeat or a stream, and one
// whose address refuses the connection is fenced at once, before the grace.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import {
  ControllerServiceClient,
  StorageServiceService,
  type BeginControllerEpochRequest,
} from '@spool/protocol';
import { afterEach, expect, it } from 'vitest';
import { brokerTakeoverGraceMs } from './broker-lifecycle';
import { startController } from './controller-service';
import { refusingPort, silentPort } from './testing/broker-ports';

const services: RunningService[] = [];
const clients: ControllerServiceClient[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const service of services.splice(0)) await service.stop();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A storage node's gRPC answering only BeginControllerEpoch, as broker `brokerId` would. */
async function announcedBroker(
  brokerId: number,
  brokerEpoch: () => bigint,
  received: BeginControllerEpochRequest[],
): Promise<number> {
  const server = new GrpcServer();
  server.addService(StorageServiceService, {
    beginControllerEpoch: (
      call: { request: BeginControllerEpochRequest },
      callback: (error: null, response: object) => void,
    ) => {
      received.push(call.request);
      callback(null, { brokerId, brokerEpoch: brokerEpoch(), followed: true });
    },
  } as never);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  cleanups.push(() => void server.forceShutdown());
  return port;
}

async function controller(metadataPath: string) {
  const service = await startController({
    argv: [
      ...['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
      ...['--metadata-path', metadataPath, '--broker-session-timeout-ms', '60000'],
    ],
    env: {},
    handleSignals: false,
  });
  services.push(service);
  const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
  clients.push(client);
  return client;
}

/** Retries NOT_CONTROLLER only, while the controller wins its election. */
async function untilActive<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if ((error as { code?: string }).code !== 'NOT_CONTROLLER' || Date.now() > deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

it('fences a broker that did not reach a new controller within the takeover grace', async () => {
  const metadataPath = path.join(
    mkdtempSync(path.join(tmpdir(), 'spool-takeover-')),
    'metadata.journal',
  );
  const first = await controller(metadataPath);
  const epochs = new Map<number, bigint>();
  const silent = await silentPort();
  cleanups.push(() => silent.close());
  for (const brokerId of [0, 1, 2]) {
    const response = await untilActive(() =>
      callOnce(first, first.registerBroker, {
        brokerId,
        rack: '',
        endpoints: [{ name: 'grpc', host: '127.0.0.1', port: silent.port }],
        incarnationId: `broker-${brokerId}`,
      }),
    );
    epochs.set(brokerId, response.brokerEpoch);
  }
  await services.pop()!.stop();
  clients.pop()!.close();

  const second = await controller(metadataPath);
  const heartbeat = (brokerId: number) =>
    untilActive(() =>
      callOnce(second, second.brokerHeartbeat, {
        brokerId,
        brokerEpoch: epochs.get(brokerId)!,
        logDirOffline: false,
        cleanerStates: [],
        replicaSizes: [],
      }),
    );
  expect(await heartbeat(0)).toMatchObject({ fenced: false });
  const takeoverAtMs = Date.now();
  const watch = second.watchMetadata({ fromVersion: 0n, brokerId: 2, brokerEpoch: epochs.get(2)! });
  watch.on('error', () => undefined);
  try {
    const heartbeats = setInterval(() => void heartbeat(0).catch(() => undefined), 200);
    try {
      // DescribeCluster shows broker 1 FENCED once the grace has passed (a heartbeat would
      // count as reaching the controller, so none is sent for it).
      const stateOf = async (brokerId: number) => {
        const cluster = await callOnce(second, second.describeCluster, {});
        return cluster.brokers.find((broker) => broker.brokerId === brokerId)?.state;
      };
      await expect.poll(() => stateOf(1), { timeout: 10_000, interval: 100 }).toBe('FENCED');
      const fencedAfterMs = Date.now() - takeoverAtMs;
      expect(fencedAfterMs).toBeGreaterThanOrEqual(brokerTakeoverGraceMs - 500);
      expect(fencedAfterMs).toBeLessThan(brokerTakeoverGraceMs + 3_000);
      expect(await heartbeat(1)).toMatchObject({ fenced: true });
      // Broker 2 never heartbeated, but its stream is open: still unfenced after the grace.
      expect(await heartbeat(2)).toMatchObject({ fenced: false });
      expect(await heartbeat(0)).toMatchObject({ fenced: false });
    } finally {
      clearInterval(heartbeats);
    }
  } finally {
    watch.cancel();
  }
}, 30_000);

it('a takeover announcement answered keeps a broker; one refused fences it at once', async () => {
  const metadataPath = path.join(
    mkdtempSync(path.join(tmpdir(), 'spool-takeover-')),
    'metadata.journal',
  );
  const first = await controller(metadataPath);
  const epochs = new Map<number, bigint>();
  const received: BeginControllerEpochRequest[] = [];
  const ports = new Map([
    [0, await announcedBroker(0, () => epochs.get(0)!, received)],
    [1, await refusingPort()],
  ]);
  for (const brokerId of [0, 1]) {
    const response = await untilActive(() =>
      callOnce(first, first.registerBroker, {
        brokerId,
        rack: '',
        endpoints: [{ name: 'grpc', host: '127.0.0.1', port: ports.get(brokerId)! }],
        incarnationId: `broker-${brokerId}`,
      }),
    );
    epochs.set(brokerId, response.brokerEpoch);
  }
  await services.pop()!.stop();
  clients.pop()!.close();
  received.length = 0;

  const second = await controller(metadataPath);
  const takeoverAtMs = Date.now();
  const stateOf = async (brokerId: number) => {
    const cluster = await untilActive(() => callOnce(second, second.describeCluster, {}));
    return cluster.brokers.find((broker) => broker.brokerId === brokerId)?.state;
  };
  // Broker 1's address refuses: fenced well before the grace would have run out.
  await expect
    .poll(() => stateOf(1), { timeout: brokerTakeoverGraceMs, interval: 25 })
    .toBe('FENCED');
  expect(Date.now() - takeoverAtMs).toBeLessThan(brokerTakeoverGraceMs);
  // Broker 0 answered with its registration: never heartbeated nor watched, and not fenced
  // well after the grace (its session is 60 s).
  expect(received).toEqual([
    {
      controllerAddress: `127.0.0.1:${services[0]!.grpcPort}`,
      controllerEpoch: expect.any(BigInt),
      brokerId: 0,
    },
  ]);
  await new Promise((resolve) => setTimeout(resolve, brokerTakeoverGraceMs + 1_500));
  expect(await stateOf(0)).not.toBe('FENCED');
}, 30_000);
