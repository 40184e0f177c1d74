// Proves when a broker id is free for a new process (a new incarnation), in-process over gRPC on
// the local metadata backend: while the old incarnation's session is live it is refused with
// DUPLICATE_BROKER_REGISTRATION, also after a controller restart (the new controller gives the
// old session its full timeout); once the old incarnation did its controlled shutdown, the new
// one registers at once, before and after a controller restart, because the record says so. A
// decommissioned broker stays so when it registers again, takes no new topic's replicas, and an
// unknown id is refused with BROKER_ID_NOT_REGISTERED.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startController } from './controller-service';
import { silentPort } from './testing/broker-ports';

const journal = (): string =>
  path.join(mkdtempSync(path.join(tmpdir(), 'spool-brokers-')), 'metadata.journal');

describe('broker registration', () => {
  const services: RunningService[] = [];
  const clients: ControllerServiceClient[] = [];
  // The broker's address: accepting and silent, so a new controller's takeover announcement
  // neither reaches it nor finds it gone (a refused address would be fenced at once).
  let brokerPort: Awaited<ReturnType<typeof silentPort>>;
  beforeAll(async () => {
    brokerPort = await silentPort();
  });
  afterAll(() => brokerPort.close());
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const service of services.splice(0)) await service.stop();
  });

  /** A controller on the journal, with a session timeout far longer than any test step. */
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
    const register = (incarnationId: string) =>
      untilActive(() =>
        callOnce(client, client.registerBroker, {
          brokerId: 0,
          rack: '',
          endpoints: [{ name: 'grpc', host: '127.0.0.1', port: brokerPort.port }],
          incarnationId,
        }),
      );
    return { service, client, register };
  }

  /** Retries NOT_CONTROLLER only, while the new controller wins its election. */
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

  async function restart(metadataPath: string) {
    await services.pop()!.stop();
    clients.pop()!.close();
    return controller(metadataPath);
  }

  it('refuses a second incarnation while the first one is live, across a controller restart', async () => {
    const metadataPath = journal();
    const first = await controller(metadataPath);
    await first.register('incarnation-1');
    await expect(first.register('incarnation-2')).rejects.toMatchObject({
      code: 'DUPLICATE_BROKER_REGISTRATION',
    });

    const second = await restart(metadataPath);
    const refusal = second.register('incarnation-2');
    await expect(refusal).rejects.toMatchObject({ code: 'DUPLICATE_BROKER_REGISTRATION' });
    await expect(refusal).rejects.toThrow(
      /registered by incarnation incarnation-1, whose session has not expired \(silent for \d+ ms of 60000 ms\)/,
    );
  });

  it('frees the id at once after a controlled shutdown, across a controller restart', async () => {
    const metadataPath = journal();
    const first = await controller(metadataPath);
    const { brokerEpoch } = await first.register('incarnation-1');
    await callOnce(first.client, first.client.controlledShutdown, { brokerId: 0, brokerEpoch });

    const second = await restart(metadataPath);
    const registered = await second.register('incarnation-2');
    expect(registered.brokerEpoch).toBeGreaterThan(brokerEpoch);
    // The new incarnation is a live broker again: the next one is refused.
    await expect(second.register('incarnation-3')).rejects.toMatchObject({
      code: 'DUPLICATE_BROKER_REGISTRATION',
    });
  });

  it('keeps a decommissioned broker out of new placements, across its re-registration', async () => {
    const metadataPath = journal();
    const first = await controller(metadataPath);
    const { brokerEpoch } = await first.register('incarnation-1');
    const decommission = (brokerId: number, cancel = false) =>
      callOnce(first.client, first.client.decommissionBroker, { brokerId, cancel });
    expect((await decommission(7)).error?.code).toBe('BROKER_ID_NOT_REGISTERED');
    expect((await decommission(0)).error).toBeUndefined();
    await callOnce(first.client, first.client.controlledShutdown, { brokerId: 0, brokerEpoch });
    await first.register('incarnation-2');
    const cluster = await callOnce(first.client, first.client.describeCluster, {});
    expect(cluster.brokers.map((broker) => [broker.brokerId, broker.decommissioned])).toEqual([
      [0, true],
    ]);
    const created = await callOnce(first.client, first.client.createTopics, {
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 1, configs: [] }],
      validateOnly: false,
    });
    expect(created.results[0]!.error?.code).toBe('INVALID_REPLICATION_FACTOR');
    await decommission(0, true);
    const again = await callOnce(first.client, first.client.createTopics, {
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 1, configs: [] }],
      validateOnly: false,
    });
    expect(again.results[0]!.error).toBeUndefined();
  });
});
