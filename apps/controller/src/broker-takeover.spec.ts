// Proves that a controller taking over fences, within its takeover grace and not a whole session
// later, the brokers that did not reach it: in-process over gRPC on the local metadata backend,
// three brokers register, the controller restarts (a new one takes over with a 60 s session
// timeout), then broker 0 heartbeats it, broker 2 only opens its metadata stream with its
// registration, and broker 1 stays silent. Broker 1 alone is fenced a few seconds after the
// takeover; the other two are not, also well after the grace.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';
import { afterEach, expect, it } from 'vitest';
import { brokerTakeoverGraceMs } from './broker-lifecycle';
import { startController } from './controller-service';

const services: RunningService[] = [];
const clients: ControllerServiceClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const service of services.splice(0)) await service.stop();
});

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
  for (const brokerId of [0, 1, 2]) {
    const response = await untilActive(() =>
      callOnce(first, first.registerBroker, {
        brokerId,
        rack: '',
        endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1000 + brokerId }],
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
