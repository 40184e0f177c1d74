// Proves the dynamic broker configs in-process over gRPC on the local metadata backend with two
// registered brokers: the cluster default and a broker's own value are described and reach the
// broker in its heartbeat answers (its own over the default), a broker keeps its values when it
// registers again, deleting gives the default back, and a bad name, value or resource is refused
// on its own resource with an error naming it while the others apply (a storage node's static
// setting as Kafka refuses a config it cannot update dynamically). DescribeLogDirs gives each
// broker's last reported replica sizes, its data directory's state, not reported before its first
// report, and BROKER_ID_NOT_REGISTERED for an unknown broker.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController } from './controller-service';

let service: RunningService;
let client: ControllerServiceClient;
const epochs = new Map<number, bigint>();

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

async function register(brokerId: number, incarnationId: string): Promise<void> {
  const response = await untilActive(() =>
    callOnce(client, client.registerBroker, {
      brokerId,
      rack: '',
      endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1000 + brokerId }],
      incarnationId,
    }),
  );
  epochs.set(brokerId, response.brokerEpoch);
}

async function heartbeatConfigs(brokerId: number): Promise<Record<string, string>> {
  const response = await callOnce(client, client.brokerHeartbeat, {
    brokerId,
    brokerEpoch: epochs.get(brokerId)!,
    logDirOffline: false,
    cleanerStates: [],
    replicaSizes: [],
  });
  expect(response.fenced).toBe(false);
  return Object.fromEntries(response.dynamicConfigs.map((entry) => [entry.name, entry.value]));
}

function entry(name: string, value: string) {
  return { name, value, isDefault: false };
}

beforeAll(async () => {
  const journal = path.join(mkdtempSync(path.join(tmpdir(), 'spool-broker-configs-')), 'journal');
  service = await startController({
    argv: [
      ...['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
      ...['--metadata-path', journal, '--broker-session-timeout-ms', '60000'],
    ],
    env: {},
    handleSignals: false,
  });
  client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
  await register(0, 'incarnation-0');
  await register(1, 'incarnation-1');
});

afterAll(async () => {
  client?.close();
  await service?.stop();
});

describe('dynamic broker configs', () => {
  it('applies the default and a broker override, through heartbeats and re-registration', async () => {
    const altered = await callOnce(client, client.alterBrokerConfigs, {
      brokers: [
        { broker: '', set: [entry('follower.replication.throttled.rate', '1000')], delete: [] },
        { broker: '1', set: [entry('follower.replication.throttled.rate', '2000')], delete: [] },
        { broker: '1', set: [entry('leader.replication.throttled.rate', '3000')], delete: [] },
      ],
      validateOnly: false,
    });
    expect(altered.results.map((result) => result.error)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(await heartbeatConfigs(0)).toEqual({ 'follower.replication.throttled.rate': '1000' });
    expect(await heartbeatConfigs(1)).toEqual({
      'follower.replication.throttled.rate': '2000',
      'leader.replication.throttled.rate': '3000',
    });
    const described = await callOnce(client, client.describeBrokerConfigs, { brokers: ['1'] });
    expect(described.results[0]!.configs).toEqual([
      { name: 'follower.replication.throttled.rate', value: '2000', isDefault: false },
      { name: 'leader.replication.throttled.rate', value: '3000', isDefault: false },
    ]);

    // A restart: controlled shutdown frees the id, and the next incarnation registers.
    await callOnce(client, client.controlledShutdown, { brokerId: 1, brokerEpoch: epochs.get(1)! });
    await register(1, 'incarnation-1b');
    expect((await heartbeatConfigs(1))['leader.replication.throttled.rate']).toBe('3000');

    await callOnce(client, client.alterBrokerConfigs, {
      brokers: [{ broker: '1', set: [], delete: ['follower.replication.throttled.rate'] }],
      validateOnly: false,
    });
    const after = await callOnce(client, client.describeBrokerConfigs, { brokers: [] });
    expect(after.results.map((result) => result.broker)).toEqual(['', '0', '1']);
    expect(after.results[2]!.configs).toContainEqual({
      name: 'follower.replication.throttled.rate',
      value: '1000',
      isDefault: true,
    });
  });

  it('refuses a bad name, value or resource on its own resource', async () => {
    const altered = await callOnce(client, client.alterBrokerConfigs, {
      brokers: [
        { broker: '0', set: [entry('log.retention.ms', '1')], delete: [] },
        { broker: '0', set: [entry('leader.replication.throttled.rate', '-5')], delete: [] },
        { broker: '7', set: [entry('leader.replication.throttled.rate', '5')], delete: [] },
        { broker: 'x', set: [], delete: ['leader.replication.throttled.rate'] },
        { broker: '0', set: [entry('leader.replication.throttled.rate', '500')], delete: [] },
        { broker: '0', set: [entry('log.dirs', '/elsewhere')], delete: [] },
      ],
      validateOnly: false,
    });
    const errors = altered.results.map((result) => result.error);
    expect(errors[0]).toMatchObject({ code: 'INVALID_CONFIG' });
    expect(errors[0]!.message).toMatch(/"log.retention.ms" is not a dynamic broker config/);
    expect(errors[1]).toMatchObject({ code: 'INVALID_CONFIG' });
    expect(errors[1]!.message).toMatch(/leader.replication.throttled.rate="-5"/);
    expect(errors[2]).toMatchObject({ code: 'BROKER_ID_NOT_REGISTERED' });
    expect(errors[3]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(errors[4]).toBeUndefined();
    // A static setting of the storage node is refused as Kafka refuses a read-only config.
    expect(errors[5]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(errors[5]!.message).toMatch(/Cannot update these configs dynamically: log\.dirs/);
    expect((await heartbeatConfigs(0))['leader.replication.throttled.rate']).toBe('500');
  });

  it('keeps replica.alter.log.dirs.io.max.bytes.per.second, as kafka-reassign-partitions sets and deletes it', async () => {
    const name = 'replica.alter.log.dirs.io.max.bytes.per.second';
    const set = await callOnce(client, client.alterBrokerConfigs, {
      brokers: [
        { broker: '1', set: [entry(name, '5000')], delete: [] },
        { broker: '0', set: [entry(name, 'fast')], delete: [] },
      ],
      validateOnly: false,
    });
    expect(set.results[0]!.error).toBeUndefined();
    expect(set.results[1]!.error).toMatchObject({ code: 'INVALID_CONFIG' });
    expect(set.results[1]!.error!.message).toContain(`${name}="fast"`);
    expect((await heartbeatConfigs(1))[name]).toBe('5000');
    // The tool's --verify deletes it on every broker, set or not.
    const deleted = await callOnce(client, client.alterBrokerConfigs, {
      brokers: ['0', '1'].map((broker) => ({ broker, set: [], delete: [name] })),
      validateOnly: false,
    });
    expect(deleted.results.map((result) => result.error)).toEqual([undefined, undefined]);
    expect((await heartbeatConfigs(1))[name]).toBeUndefined();
  });
});

describe("each broker's log directory (DescribeLogDirs)", () => {
  it('gives the replica sizes and directory state of the last heartbeat, per broker', async () => {
    const described = async () =>
      (await callOnce(client, client.describeLogDirs, { brokerIds: [0, 1, 9] })).results;
    const heartbeat = (brokerId: number, logDirOffline: boolean, sizes: Array<[string, number]>) =>
      callOnce(client, client.brokerHeartbeat, {
        brokerId,
        brokerEpoch: epochs.get(brokerId)!,
        logDirOffline,
        cleanerStates: [],
        replicaSizes: sizes.map(([topic, bytes], partition) => ({
          topic,
          partition,
          sizeBytes: BigInt(bytes),
        })),
      });

    // A broker that has not reported since it registered: its replicas are unknown.
    await register(2, 'incarnation-2');
    const [unreported] = (await callOnce(client, client.describeLogDirs, { brokerIds: [2] }))
      .results;
    expect(unreported).toMatchObject({ brokerId: 2, reported: false, replicaSizes: [] });

    await heartbeat(0, false, [
      ['orders', 2_048],
      ['audit', 10],
    ]);
    await heartbeat(1, false, []);
    const first = await described();
    expect(first.map(({ brokerId, error, reported }) => [brokerId, error?.code, reported])).toEqual(
      [
        [0, undefined, true],
        [1, undefined, true],
        [9, 'BROKER_ID_NOT_REGISTERED', false],
      ],
    );
    expect(first[0]!.replicaSizes).toEqual([
      { topic: 'audit', partition: 1, sizeBytes: 10n },
      { topic: 'orders', partition: 0, sizeBytes: 2_048n },
    ]);
    expect(first[1]!.replicaSizes).toEqual([]);

    // A report replaces the previous one whole; an offline directory is said so.
    await heartbeat(0, true, [['orders', 4_096]]);
    const second = await described();
    expect(second[0]).toMatchObject({
      logDirOffline: true,
      replicaSizes: [{ topic: 'orders', partition: 0, sizeBytes: 4_096n }],
    });
    await heartbeat(0, false, [['orders', 4_096]]);
    expect((await described())[0]!.logDirOffline).toBe(false);
  });
});
