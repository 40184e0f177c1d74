// Proves the gateway in-process against a fake controller and two fake storage nodes on loopback:
// it is not ready until the first metadata snapshot arrives, then routes one produce request's
// partitions to their leaders, follows a leader change (NOT_LEADER_OR_FOLLOWER, then a metadata
// delta) and retries there, forwards record bytes unread and answers with the leader's error for
// a bad batch (the leader alone checks batches), refuses unknown topics and partitions before any
// leader sees them, bounds produce bytes in flight per connection (on a ProduceStream too, where each
// request is answered by its correlation id as it finishes), answers a group RPC with
// COORDINATOR_NOT_AVAILABLE when no coordinator owns the group, counts all of it in its metrics,
// and stops cleanly.
import type { ServerDuplexStream, ServerWritableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  GrpcServer,
  SpoolError,
  callOnce,
  createGrpcClient,
  createLogger,
  type RunningService,
} from '@spool/common';
import {
  Acks,
  ControllerServiceService,
  GatewayServiceClient,
  StorageServiceService,
  type AppendRequest,
  type AppendResponse,
  type AppendStreamRequest,
  type AppendStreamResponse,
  type ProduceStreamResponse,
  type ProtoError,
  type WatchMetadataRequest,
  type WatchMetadataResponse,
} from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { startGateway } from './gateway-service';
import { testBroker, testSnapshot, testTopic } from './testing/cluster-metadata';

const logger = createLogger({ service: 'test', level: 'silent' });

function refuseAll(definition: object): Record<string, () => Promise<never>> {
  return Object.fromEntries(
    Object.keys(definition).map((name) => [
      name,
      () => Promise.reject(new SpoolError('UNSUPPORTED_VERSION', `${name} is not faked`)),
    ]),
  );
}

/** A controller that serves WatchMetadata from a list the test appends to. */
class FakeController {
  readonly server = new GrpcServer(logger, { maxMessageBytes: 1 << 20, descriptorSetPaths: [] });
  private readonly watchers = new Set<ServerWritableStream<unknown, WatchMetadataResponse>>();
  snapshot: WatchMetadataResponse | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server.addService(ControllerServiceService, {
      ...refuseAll(ControllerServiceService),
      watchMetadata: async (
        _request: WatchMetadataRequest,
        call: ServerWritableStream<unknown, WatchMetadataResponse>,
      ) => {
        if (this.snapshot !== undefined) call.write(this.snapshot);
        this.watchers.add(call);
        await new Promise<void>((resolve) => call.once('cancelled', () => resolve()));
        this.watchers.delete(call);
      },
    });
    this.port = await this.server.listen('127.0.0.1', 0);
  }

  publish(message: WatchMetadataResponse): void {
    if (message.snapshot) this.snapshot = message;
    for (const watcher of this.watchers) watcher.write(message);
  }

  async stop(): Promise<void> {
    await this.server.shutdown(100);
  }
}

/**
 * A storage node that leads what `leads` says and records every append it takes. It checks no
 * batch: a partition in `refusals` is answered with that error, as a leader answers a bad batch.
 */
class FakeStorageNode {
  readonly server = new GrpcServer(logger, { maxMessageBytes: 1 << 22, descriptorSetPaths: [] });
  readonly appended: string[] = [];
  readonly leads = new Set<string>();
  readonly refusals = new Map<string, ProtoError>();
  /** The record bytes of each partition's latest append, as they arrived. */
  readonly receivedRecords = new Map<string, Buffer>();
  /** While set, appends wait for it: a leader that is slow to answer. */
  stall: Promise<void> | undefined;
  private nextOffset = 0n;
  port = 0;

  constructor(readonly brokerId: number) {}

  async start(): Promise<void> {
    this.server.addService(StorageServiceService, {
      ...refuseAll(StorageServiceService),
      append: (request: AppendRequest) => this.append(request),
      // As the storage node's AppendStreams: each request answered with its id when done.
      appendStream: (call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>) =>
        new Promise<void>((resolve) => {
          call.on('data', (request: AppendStreamRequest) => {
            void this.append(request).then((response) => {
              if (!call.cancelled)
                call.write({ correlationId: request.correlationId, ...response });
            });
          });
          call.on('end', () => resolve());
          call.on('cancelled', () => resolve());
          call.on('error', () => resolve());
        }),
    });
    this.port = await this.server.listen('127.0.0.1', 0);
  }

  private async append(request: AppendRequest): Promise<AppendResponse> {
    await this.stall;
    return {
      results: request.partitions.map((partition) => {
        const name = `${partition.topic}-${partition.partition}`;
        const base = {
          topic: partition.topic,
          partition: partition.partition,
          baseOffset: -1n,
          lastOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: -1n,
        };
        if (!this.leads.has(name)) {
          return {
            ...base,
            error: {
              code: 'NOT_LEADER_OR_FOLLOWER',
              message: `broker ${this.brokerId} does not lead ${name}`,
              retriable: true,
            },
          };
        }
        this.receivedRecords.set(name, Buffer.from(partition.records));
        const refusal = this.refusals.get(name);
        if (refusal !== undefined) return { ...base, error: refusal };
        this.appended.push(name);
        const baseOffset = this.nextOffset++;
        return { ...base, error: undefined, baseOffset, lastOffset: baseOffset };
      }),
    };
  }

  async stop(): Promise<void> {
    await this.server.shutdown(100);
  }
}

function batch(valueBytes = 10): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.alloc(valueBytes, 7), timestampMs: 1n }],
  });
}

/** The value of the sample of `name` whose labels include `labels`, from a /metrics page. */
function sample(metrics: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of metrics.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = new Map(
      [...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1], label[2]]),
    );
    if (Object.entries(labels).every(([label, value]) => found.get(label) === value)) {
      return Number(match[3]);
    }
  }
  return undefined;
}

const controller = new FakeController();
const nodes = [new FakeStorageNode(0), new FakeStorageNode(1)];
let gateway: RunningService;
let client: GatewayServiceClient;

function metadataVersion(version: bigint, leaderOfPartition0: number): WatchMetadataResponse {
  return testSnapshot(
    version,
    nodes.map((node) => testBroker(node.brokerId, node.port, 1)),
    [testTopic('orders', [leaderOfPartition0, 1], { 'max.message.bytes': '2000' })],
  );
}

function produce(partitions: Array<{ topic: string; partition: number; records: Buffer }>) {
  return callOnce(client, client.produce, { partitions, acks: Acks.ACKS_ALL, timeoutMs: 5_000 });
}

beforeAll(async () => {
  await controller.start();
  for (const node of nodes) await node.start();
  nodes[0]!.leads.add('orders-0');
  nodes[1]!.leads.add('orders-1');
  gateway = await startGateway({
    argv: [
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--log-level',
      'silent',
      '--controller-addresses',
      `127.0.0.1:${controller.port}`,
      '--produce-in-flight-bytes-max',
      '4096',
    ],
    env: {},
    handleSignals: false,
  });
  client = createGrpcClient(GatewayServiceClient, `127.0.0.1:${gateway.grpcPort}`);
});

afterAll(async () => {
  client?.close();
  await gateway?.stop();
  await Promise.all([controller.stop(), ...nodes.map((node) => node.stop())]);
});

describe('gateway service', () => {
  it('is ready only once the first metadata snapshot has arrived', async () => {
    const readiness = await fetch(`http://127.0.0.1:${gateway.metricsPort}/readyz`);
    expect(readiness.status).toBe(503);
    expect(await readiness.text()).toContain('waiting for metadata');
    controller.publish(metadataVersion(1n, 0));
    await vi.waitFor(
      async () => {
        expect((await fetch(`http://127.0.0.1:${gateway.metricsPort}/readyz`)).status).toBe(200);
      },
      { timeout: 5_000, interval: 20 },
    );
  });

  it('routes each partition to its leader and follows a leader change', async () => {
    const response = await produce([
      { topic: 'orders', partition: 0, records: batch() },
      { topic: 'orders', partition: 1, records: batch() },
    ]);
    expect(response.results.map((result) => result.error)).toEqual([undefined, undefined]);
    expect(nodes[0]!.appended).toEqual(['orders-0']);
    expect(nodes[1]!.appended).toEqual(['orders-1']);

    // Leadership of orders-0 moves to broker 1 before the gateway hears of it.
    nodes[0]!.leads.delete('orders-0');
    nodes[1]!.leads.add('orders-0');
    setTimeout(() => controller.publish({ ...metadataVersion(2n, 1), snapshot: false }), 200);
    const moved = await produce([{ topic: 'orders', partition: 0, records: batch() }]);
    expect(moved.results[0]!.error).toBeUndefined();
    expect(nodes[1]!.appended).toEqual(['orders-1', 'orders-0']);
    expect(nodes[0]!.appended).toEqual(['orders-0']);
  });

  it("forwards record bytes unread with the leader's answer; refuses unknown topics and partitions before any leader sees them", async () => {
    const corrupted = batch();
    corrupted[corrupted.length - 1]! ^= 0xff;
    // The leader of orders-0 (broker 1, since the leader change) answers as the real one does.
    const leaderError = {
      code: 'CORRUPT_MESSAGE',
      message: 'orders-0: record batch at position 0: field crc at byte 17 is 0x1 but ...',
      retriable: true,
    };
    nodes[1]!.refusals.set('orders-0', leaderError);
    const response = await produce([
      { topic: 'orders', partition: 0, records: corrupted },
      { topic: 'payments', partition: 0, records: batch() },
      { topic: 'orders', partition: 9, records: batch() },
      { topic: 'orders', partition: 0, records: Buffer.alloc(0) },
      { topic: 'orders', partition: 1, records: Buffer.alloc(0) },
    ]);
    nodes[1]!.refusals.clear();
    const errors = response.results.map((result) => result.error);
    expect(errors[0]).toEqual(leaderError);
    expect(nodes[1]!.receivedRecords.get('orders-0')).toEqual(corrupted);
    expect(errors[1]).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(errors[1]!.message).toContain('topic "payments" does not exist');
    expect(errors[2]).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(errors[2]!.message).toContain('partition 9 of topic "orders" does not exist');
    expect(errors[3]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(errors[3]!.message).toContain('appears more than once');
    expect(errors[4]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(errors[4]!.message).toContain('are empty');
    expect(nodes[0]!.appended).toHaveLength(1);
    expect(nodes[1]!.appended).toHaveLength(2);
  });

  it('bounds produce bytes in flight per client connection', async () => {
    let unstall: () => void = () => {};
    nodes[1]!.stall = new Promise((resolve) => (unstall = resolve));
    const slow = produce([{ topic: 'orders', partition: 1, records: batch(1_500) }]);
    await vi.waitFor(
      async () => {
        const metrics = await (
          await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)
        ).text();
        expect(sample(metrics, 'spool_gateway_produce_in_flight_bytes', {})).toBeGreaterThan(0);
      },
      { timeout: 5_000, interval: 20 },
    );
    await expect(
      produce([{ topic: 'orders', partition: 1, records: batch(2_500) }]),
    ).rejects.toMatchObject({ code: 'THROTTLING_QUOTA_EXCEEDED', retriable: true });
    await expect(
      produce([
        {
          topic: 'orders',
          partition: 1,
          records: Buffer.concat([batch(1_900), batch(1_900), batch(1_900)]),
        },
      ]),
    ).rejects.toMatchObject({ code: 'RECORD_LIST_TOO_LARGE', retriable: false });
    nodes[1]!.stall = undefined;
    unstall();
    expect((await slow).results[0]!.error).toBeUndefined();
  });

  it('pipelines produces on a ProduceStream, answering each by its correlation id as it finishes', async () => {
    let unstall: () => void = () => {};
    nodes[1]!.stall = new Promise((resolve) => (unstall = resolve));
    const stream = client.produceStream();
    const answers: ProduceStreamResponse[] = [];
    stream.on('data', (answer: ProduceStreamResponse) => answers.push(answer));
    const request = (correlationId: number, sizeBytes: number) => ({
      correlationId,
      partitions: [{ topic: 'orders', partition: 1, records: batch(sizeBytes) }],
      acks: Acks.ACKS_ALL,
      timeoutMs: 5_000,
    });
    stream.write(request(7, 1_500));
    await vi.waitFor(
      async () => {
        const metrics = await (
          await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)
        ).text();
        expect(sample(metrics, 'spool_gateway_produce_in_flight_bytes', {})).toBeGreaterThan(0);
      },
      { timeout: 5_000, interval: 20 },
    );
    // Over the connection's in-flight bytes: refused as a whole, every partition answered with
    // the error, before the stalled request that came first.
    stream.write(request(8, 2_500));
    await vi.waitFor(async () => expect(answers).toHaveLength(1), { timeout: 5_000, interval: 20 });
    expect(answers[0]!.correlationId).toBe(8);
    expect(answers[0]!.results[0]).toMatchObject({
      topic: 'orders',
      partition: 1,
      error: { code: 'THROTTLING_QUOTA_EXCEEDED', retriable: true },
    });
    nodes[1]!.stall = undefined;
    unstall();
    await vi.waitFor(async () => expect(answers).toHaveLength(2), { timeout: 5_000, interval: 20 });
    expect(answers[1]!.correlationId).toBe(7);
    expect(answers[1]!.results[0]!.error).toBeUndefined();
    stream.end();
  });

  it('answers a group RPC with COORDINATOR_NOT_AVAILABLE when no coordinator owns the group', async () => {
    const startedMs = Date.now();
    const response = await callOnce(
      client,
      client.offsetFetch,
      { groupId: 'billing', partitions: [] },
      { deadlineMs: 1_500 },
    );
    expect(response.error).toMatchObject({
      code: 'COORDINATOR_NOT_AVAILABLE',
      retriable: true,
      message: expect.stringContaining('no coordinator has registered'),
    });
    // It kept trying until just before the client's deadline, not longer.
    expect(Date.now() - startedMs).toBeGreaterThan(1_000);
    expect(Date.now() - startedMs).toBeLessThan(1_500);
  });

  it('reports requests, errors by code and connected clients', async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)).text();
    // Six unary Produce calls and two produces on one ProduceStream, counted alike; the stream
    // itself counts once under its own name.
    expect(sample(metrics, 'spool_requests_total', { api: 'Produce' })).toBe(8);
    expect(sample(metrics, 'spool_requests_total', { api: 'ProduceStream' })).toBe(1);
    expect(
      sample(metrics, 'spool_request_errors_total', {
        api: 'Produce',
        code: 'CORRUPT_MESSAGE',
      }),
    ).toBe(1);
    expect(
      sample(metrics, 'spool_request_errors_total', {
        api: 'OffsetFetch',
        code: 'COORDINATOR_NOT_AVAILABLE',
      }),
    ).toBe(1);
    expect(sample(metrics, 'spool_request_duration_seconds_count', { api: 'Produce' })).toBe(8);
    expect(sample(metrics, 'spool_gateway_connected_clients', {})).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'spool_gateway_produce_in_flight_bytes', {})).toBe(0);
    expect(metrics).toContain('process_resident_memory_bytes{service="gateway"}');
  });

  it('refuses to start with grpc.authentication=required on a plaintext gRPC port', async () => {
    const started = startGateway({
      argv: [
        ...['--grpc-port', '0', '--metrics-port', '0', '--kafka-port', '0'],
        ...['--log-level', 'silent', '--grpc-authentication', 'required'],
        ...['--controller-addresses', `127.0.0.1:${controller.port}`],
      ],
      env: {},
      handleSignals: false,
    });
    await expect(started).rejects.toThrow(
      /grpc\.authentication: required needs TLS on the gRPC port, but security\.protocol is PLAINTEXT/,
    );
  });

  it('refuses to start with kafka.ssl.client.auth on a listener without TLS', async () => {
    const started = startGateway({
      argv: [
        ...['--grpc-port', '0', '--metrics-port', '0', '--kafka-port', '0'],
        ...['--log-level', 'silent', '--kafka-ssl-client-auth', 'required'],
        ...['--controller-addresses', `127.0.0.1:${controller.port}`],
      ],
      env: {},
      handleSignals: false,
    });
    await expect(started).rejects.toThrow(
      /kafka\.ssl\.client\.auth: required needs a TLS Kafka listener, but kafka\.security\.protocol is PLAINTEXT/,
    );
  });

  it('stops cleanly', async () => {
    await gateway.stop();
    await expect(fetch(`http://127.0.0.1:${gateway.metricsPort}/healthz`)).rejects.toThrow();
  });
});
