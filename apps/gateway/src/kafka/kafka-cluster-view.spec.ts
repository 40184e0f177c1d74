// Proves that the Kafka listener presents the storage brokers (kafka-cluster-view.ts,
// kafka-broker-ports.ts) through Metadata, DescribeCluster and FindCoordinator, over a real
// listener on loopback and metadata applied by the test: each live broker is listed by its own id
// and rack at a port of its own, which accepts Kafka connections; a fenced broker is left out
// (DescribeCluster v2 lists it, fenced, when asked); each partition shows its real leader, and a
// leader that is fenced or absent is LEADER_NOT_AVAILABLE with leader -1; the controller is the
// lowest listed broker; a group's coordinator is a listed broker, the same at every ask; an
// advertised port base replaces the bound ports in the answers; a broker whose port cannot be
// bound is not listed, and its partitions have no leader; a bootstrap port that a broker's port
// would take is refused at start-up.
import { createLogger } from '@spool/common';
import {
  type DescribeClusterResponse,
  type FindCoordinatorResponse,
  type MetadataResponse,
  defaultDescribeClusterRequest,
  defaultFindCoordinatorRequest,
  defaultMetadataRequest,
} from '@spool/kafka-protocol';
import type { BrokerMetadata } from '@spool/protocol';
import net from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetadataLink, type MetadataLink } from '../metadata-link';
import { testBroker, testSnapshot, testTopic } from '../testing/cluster-metadata';
import { adminApis } from './kafka-admin';
import type { KafkaApi, KafkaApiContext } from './kafka-api-dispatcher';
import { KafkaBrokerPorts, checkKafkaBrokerPortBase } from './kafka-broker-ports';
import { KafkaClusterView } from './kafka-cluster-view';
import { findCoordinatorApi } from './kafka-coordinators';
import { KafkaListener } from './kafka-listener';
import { KafkaListenerMetrics } from './kafka-listener-metrics';
import { metadataApi } from './kafka-metadata';

const logger = createLogger({ service: 'test', level: 'silent' });
const leaderNotAvailable = 5;
const allTopics = { ...defaultMetadataRequest(), topics: null };

function broker(brokerId: number, rack: string, state = 'ALIVE'): BrokerMetadata {
  return { ...testBroker(brokerId, 1, 1), rack, state };
}

let link: MetadataLink;
let listener: KafkaListener;

beforeAll(async () => {
  // No controller is asked: the metadata is the test's.
  link = createMetadataLink(['127.0.0.1:1'], logger);
  link.metadata.apply(
    testSnapshot(
      2n,
      [broker(0, 'rack-a'), broker(1, 'rack-b', 'FENCED'), broker(2, '')],
      [testTopic('spread', [0, 1, 2, -1])],
    ),
  );
  listener = new KafkaListener({
    logger,
    // Every request is answered with its correlation id: the port is served, whatever it asks.
    handler: {
      serve: (request) => {
        const answer = Buffer.alloc(4);
        answer.writeInt32BE(request.correlationId, 0);
        return Promise.resolve(answer);
      },
    },
    metrics: new KafkaListenerMetrics(new Registry(), () => 0),
    requestBytesMax: 1024 * 1024,
    inFlightRequestsMax: 4,
  });
});

afterAll(async () => {
  link.stop();
  await listener.close(1_000);
});

function apisOf(view: KafkaClusterView): Map<number, KafkaApi<unknown, unknown>> {
  return new Map(
    [metadataApi(view), findCoordinatorApi(view), ...adminApis(view)].map((api) => [
      api.apiKey,
      api as unknown as KafkaApi<unknown, unknown>,
    ]),
  );
}

async function serve<Response>(
  apis: Map<number, KafkaApi<unknown, unknown>>,
  apiKey: number,
  version: number,
  request: unknown,
): Promise<Response> {
  return (await apis.get(apiKey)!.serve(request, version, {} as KafkaApiContext)) as Response;
}

/** Sends one ApiVersions-shaped frame to `port` and resolves with the correlation id answered. */
function roundTrip(port: number, correlationId: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const frame = Buffer.alloc(12);
    frame.writeInt32BE(8, 0);
    frame.writeInt16BE(18, 4);
    frame.writeInt16BE(0, 6);
    frame.writeInt32BE(correlationId, 8);
    socket.on('connect', () => socket.write(frame));
    socket.on('data', (data) => {
      socket.destroy();
      resolve(data.readInt32BE(4));
    });
    socket.on('error', reject);
  });
}

describe('the storage brokers as the Kafka listener presents them', () => {
  it('lists each live broker at a port of its own, with real leaders, racks and controller', async () => {
    const ports = new KafkaBrokerPorts(
      listener,
      { host: '127.0.0.1', kafkaBrokerPortBase: 0, kafkaAdvertisedBrokerPortBase: 0 },
      () => 'kafka.example',
      logger,
    );
    const apis = apisOf(new KafkaClusterView(link, ports));
    const metadata = await serve<MetadataResponse>(apis, 3, 12, allTopics);
    expect(metadata.brokers.map(({ nodeId, host, rack }) => ({ nodeId, host, rack }))).toEqual([
      { nodeId: 0, host: 'kafka.example', rack: 'rack-a' },
      { nodeId: 2, host: 'kafka.example', rack: null },
    ]);
    const [first, second] = metadata.brokers;
    expect(first!.port).not.toBe(second!.port);
    expect(await roundTrip(first!.port, 41)).toBe(41);
    expect(await roundTrip(second!.port, 42)).toBe(42);
    expect(metadata.controllerId).toBe(0);
    const partitions = metadata.topics[0]!.partitions;
    expect(partitions.map(({ leaderId, errorCode }) => [leaderId, errorCode])).toEqual([
      [0, 0],
      [-1, leaderNotAvailable],
      [2, 0],
      [-1, leaderNotAvailable],
    ]);
    expect(partitions[1]!.replicaNodes).toEqual([1]);
    expect(partitions[1]!.offlineReplicas).toEqual([1]);

    // A second ask keeps the ports: they are opened once per broker.
    const again = await serve<MetadataResponse>(apis, 3, 12, allTopics);
    expect(again.brokers).toEqual(metadata.brokers);

    const cluster = await serve<DescribeClusterResponse>(apis, 60, 2, {
      ...defaultDescribeClusterRequest(),
      includeFencedBrokers: true,
    });
    expect(cluster.controllerId).toBe(0);
    expect(cluster.brokers.map(({ brokerId, isFenced }) => [brokerId, isFenced])).toEqual([
      [0, false],
      [1, true],
      [2, false],
    ]);
    const unfenced = await serve<DescribeClusterResponse>(
      apis,
      60,
      1,
      defaultDescribeClusterRequest(),
    );
    expect(unfenced.brokers.map(({ brokerId, port }) => [brokerId, port])).toEqual([
      [0, first!.port],
      [2, second!.port],
    ]);
  });

  it('names a listed broker as coordinator, the same one at every ask', async () => {
    const ports = new KafkaBrokerPorts(
      listener,
      { host: '127.0.0.1', kafkaBrokerPortBase: 0, kafkaAdvertisedBrokerPortBase: 0 },
      () => '127.0.0.1',
      logger,
    );
    const apis = apisOf(new KafkaClusterView(link, ports));
    // FindCoordinator answers COORDINATOR_NOT_AVAILABLE while no coordinator is registered.
    link.metadata.apply({
      ...testSnapshot(
        3n,
        [broker(0, 'rack-a'), broker(1, 'rack-b', 'FENCED'), broker(2, '')],
        [testTopic('spread', [0, 1, 2, -1])],
      ),
      coordinators: [{ coordinatorId: 'coordinator-0', endpoints: [] }],
    });
    const metadata = await serve<MetadataResponse>(apis, 3, 12, allTopics);
    const portsById = new Map(metadata.brokers.map((entry) => [entry.nodeId, entry.port]));
    const groups = Array.from({ length: 8 }, (_, index) => `group-${index}`);
    const answer = await serve<FindCoordinatorResponse>(apis, 10, 4, {
      ...defaultFindCoordinatorRequest(),
      coordinatorKeys: groups,
    });
    const chosen = new Set<number>();
    for (const coordinator of answer.coordinators) {
      expect(coordinator.errorCode, coordinator.errorMessage ?? '').toBe(0);
      expect(portsById.get(coordinator.nodeId)).toBe(coordinator.port);
      chosen.add(coordinator.nodeId);
    }
    expect([...chosen].every((nodeId) => nodeId === 0 || nodeId === 2)).toBe(true);
    const single = await serve<FindCoordinatorResponse>(apis, 10, 3, {
      ...defaultFindCoordinatorRequest(),
      key: groups[5]!,
    });
    expect(single.nodeId).toBe(answer.coordinators[5]!.nodeId);
  });

  it('tells clients the advertised port base, and leaves out a broker whose port cannot be bound', async () => {
    const advertised = new KafkaBrokerPorts(
      listener,
      { host: '127.0.0.1', kafkaBrokerPortBase: 0, kafkaAdvertisedBrokerPortBase: 31_000 },
      () => 'lb.example',
      logger,
    );
    const shown = await serve<MetadataResponse>(
      apisOf(new KafkaClusterView(link, advertised)),
      3,
      12,
      allTopics,
    );
    expect(shown.brokers.map(({ nodeId, port }) => [nodeId, port])).toEqual([
      [0, 31_000],
      [2, 31_002],
    ]);

    // Broker 2's port would be 65,537 and broker 0's (65,535) is held by the test first (or by
    // someone else): neither can be bound, so neither is listed and their partitions have no
    // leader.
    const holder = net.createServer();
    const held = await new Promise<boolean>((resolve) => {
      holder.once('error', () => resolve(false));
      holder.listen(65_535, '127.0.0.1', () => resolve(true));
    });
    const unbindable = new KafkaBrokerPorts(
      listener,
      { host: '127.0.0.1', kafkaBrokerPortBase: 65_535, kafkaAdvertisedBrokerPortBase: 0 },
      () => '127.0.0.1',
      logger,
    );
    const answer = await serve<MetadataResponse>(
      apisOf(new KafkaClusterView(link, unbindable)),
      3,
      12,
      allTopics,
    );
    if (held) holder.close();
    expect(answer.brokers).toEqual([]);
    expect(answer.controllerId).toBe(-1);
    expect(
      answer.topics[0]!.partitions.map(({ leaderId, errorCode }) => [leaderId, errorCode]),
    ).toEqual(Array.from({ length: 4 }, () => [-1, leaderNotAvailable]));
  });

  it('refuses at start-up a bootstrap port that a broker would listen on', () => {
    expect(() => checkKafkaBrokerPortBase({ kafkaPort: 9092, kafkaBrokerPortBase: 9090 })).toThrow(
      /kafka.port 9092 is broker 2's port under kafka.broker.port.base 9090/,
    );
    expect(() =>
      checkKafkaBrokerPortBase({ kafkaPort: 9092, kafkaBrokerPortBase: 9400 }),
    ).not.toThrow();
    expect(() =>
      checkKafkaBrokerPortBase({ kafkaPort: 9092, kafkaBrokerPortBase: 0 }),
    ).not.toThrow();
  });
});
