// Proves the controller's coordinator registry end to end over gRPC, in-process on the local
// metadata backend: coordinators register by heartbeating and share the 50 shards; a second
// coordinator takes half and only half; one shutting down hands its shards off at once with
// bumped shard epochs; a silent one is removed after its session, one whose own watch closes at
// once (and registers again if it still runs); WatchMetadata publishes
// coordinators and shards; epochs survive a controller restart; "__" topic names are refused.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import {
  ControllerServiceClient,
  type CoordinatorShard,
  type WatchMetadataResponse,
} from '@spool/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startController } from './controller-service';

const journal = (): string =>
  path.join(mkdtempSync(path.join(tmpdir(), 'spool-coordinators-')), 'metadata.journal');

async function start(metadataPath: string, extraArgs: string[] = []): Promise<RunningService> {
  return startController({
    argv: [
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--log-level',
      'silent',
      '--metadata-path',
      metadataPath,
      '--coordinator-session-timeout-ms',
      '600',
      // Last, so a test may set the session timeout too.
      ...extraArgs,
    ],
    env: {},
    handleSignals: false,
  });
}

/** `probe`'s first value other than undefined, polled with vi.waitFor within `timeoutMs`. */
function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (value === undefined) throw new Error('condition not met in time');
      return value;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

describe('coordinator registry', () => {
  const services: RunningService[] = [];
  const clients: ControllerServiceClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const service of services.splice(0)) await service.stop();
  });

  async function controller(metadataPath: string, extraArgs: string[] = []) {
    const service = await start(metadataPath, extraArgs);
    services.push(service);
    const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
    clients.push(client);
    const heartbeat = (coordinatorId: string, incarnationId: string, shuttingDown = false) =>
      until(() =>
        callOnce(client, client.coordinatorHeartbeat, {
          coordinatorId,
          endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1000 + coordinatorId.length }],
          incarnationId,
          shuttingDown,
        }),
      );
    return { service, client, heartbeat };
  }

  it('shares shards, hands them off on shutdown and session expiry, and publishes them', async () => {
    const metadataPath = journal();
    const { client, heartbeat } = await controller(metadataPath);
    const first = await heartbeat('a', 'a-1');
    expect(first.shards).toHaveLength(50);
    expect(first.shards.every((shard) => shard.shardEpoch === 1)).toBe(true);
    expect(first.heartbeatIntervalMs).toBe(150);

    const second = await heartbeat('bb', 'bb-1');
    expect(second.shards).toHaveLength(25);
    expect(second.shards.every((shard) => shard.shardEpoch === 2)).toBe(true);
    const firstAgain = await heartbeat('a', 'a-1');
    expect(firstAgain.shards).toHaveLength(25);

    const messages: WatchMetadataResponse[] = [];
    const stream = client.watchMetadata({ fromVersion: 0n });
    stream.on('data', (message: WatchMetadataResponse) => messages.push(message));
    stream.on('error', () => {});
    const snapshot = await until(async () => messages[0]);
    expect(snapshot.coordinators.map((coordinator) => coordinator.coordinatorId)).toEqual([
      'a',
      'bb',
    ]);
    expect(snapshot.coordinatorShards).toHaveLength(50);

    // Shutting down: b's shards go to a at once, at the next epoch.
    expect((await heartbeat('bb', 'bb-1', true)).shards).toEqual([]);
    const delta = await until(async () =>
      messages.find((message) => message.deletedCoordinators.includes('bb')),
    );
    expect(delta.coordinatorShards).toHaveLength(25);
    expect(
      delta.coordinatorShards.every(
        (shard: CoordinatorShard) => shard.coordinatorId === 'a' && shard.shardEpoch === 3,
      ),
    ).toBe(true);
    stream.cancel();
    const epochsBefore = new Map(
      [...snapshot.coordinatorShards, ...delta.coordinatorShards].map((shard) => [
        shard.partition,
        shard.shardEpoch,
      ]),
    );

    // Silence: a's session (600 ms) ends and every shard is left unowned, epochs bumped.
    const orphaned = await until(async () => {
      const described = await callOnce(client, client.coordinatorHeartbeat, {
        coordinatorId: 'c',
        endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1003 }],
        incarnationId: 'c-1',
        shuttingDown: false,
      });
      return described.shards.length === 50 ? described : undefined;
    });
    // Every shard changed owner since (a to c, or a gone), so every epoch grew.
    for (const shard of orphaned.shards)
      expect(shard.shardEpoch).toBeGreaterThan(epochsBefore.get(shard.partition)!);
  });

  it('keeps shard epochs across a controller restart and refuses "__" topic names', async () => {
    const metadataPath = journal();
    const before = await controller(metadataPath);
    await before.heartbeat('a', 'a-1');
    await before.heartbeat('bb', 'bb-1');
    await before.heartbeat('bb', 'bb-2'); // a restart: b's shards get new epochs
    const epochs = new Map(
      (await before.heartbeat('bb', 'bb-2')).shards.map((shard) => [
        shard.partition,
        shard.shardEpoch,
      ]),
    );
    expect([...epochs.values()].every((epoch) => epoch === 3)).toBe(true);
    const refused = await callOnce(before.client, before.client.createTopics, {
      topics: [{ name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1, configs: [] }],
      validateOnly: false,
    });
    expect(refused.results[0]!.error?.code).toBe('INVALID_TOPIC_EXCEPTION');
    await services.pop()!.stop();

    const after = await controller(metadataPath);
    const again = await after.heartbeat('bb', 'bb-3');
    for (const shard of again.shards)
      expect(shard.shardEpoch).toBeGreaterThan(epochs.get(shard.partition) ?? 0);
  });

  it('removes a coordinator when its own watch closes, not a session later, and takes it back', async () => {
    const { client, heartbeat } = await controller(journal(), [
      '--coordinator-session-timeout-ms',
      '60000',
    ]);
    await heartbeat('a', 'a-1');
    expect((await heartbeat('bb', 'bb-1')).shards).toHaveLength(25);
    const watch = (incarnationId: string) => {
      const messages: WatchMetadataResponse[] = [];
      const stream = client.watchMetadata({
        fromVersion: 0n,
        coordinatorId: 'a',
        coordinatorIncarnationId: incarnationId,
      });
      stream.on('data', (message: WatchMetadataResponse) => messages.push(message));
      stream.on('error', () => {});
      return { stream, messages };
    };
    const own = watch('a-1');
    await until(async () => own.messages[0]);
    const startedAt = Date.now();
    // The process dies: its stream closes. bb gets every shard in about the reconnect grace.
    own.stream.cancel();
    await until(async () =>
      (await heartbeat('bb', 'bb-1')).shards.length === 50 ? true : undefined,
    );
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    // Removed by mistake (it still runs): its next heartbeat registers it again.
    expect((await heartbeat('a', 'a-1')).shards).toHaveLength(25);
  });

  it('moves 1,000 shards, more than one transaction holds, between coordinators', async () => {
    const { heartbeat } = await controller(journal(), ['--offsets-topic-num-partitions', '1000']);
    const first = await heartbeat('a', 'a-1');
    expect(first.shards).toHaveLength(1000);
    const second = await heartbeat('bb', 'bb-1');
    expect(second.shards).toHaveLength(500);
    expect(second.shards.every((shard) => shard.shardEpoch === 2)).toBe(true);
    expect((await heartbeat('a', 'a-1')).shards).toHaveLength(500);
    // Shutting down: all 500 of b's go back to a, each at the next epoch.
    expect((await heartbeat('bb', 'bb-1', true)).shards).toEqual([]);
    const back = await heartbeat('a', 'a-1');
    expect(back.shards).toHaveLength(1000);
    const moved = back.shards.filter((shard) => shard.shardEpoch === 3);
    expect(moved).toHaveLength(500);
  });
});
