// Proves the data port end to end over real loopback sockets, with DataPortClient against
// DataPortServer and a fake handler that serves slices of a real temp file of RecordBatch v2
// bytes: fetched records are byte-exact (sendfile path, split across slices); several
// partitions share one response in order; API_VERSIONS and OFFSET_FOR_LEADER_EPOCH answer;
// pipelined requests are answered in order; a connection at its in-flight bound is not read
// (backpressure); a long poll resolves late with data or empty at maxWait; handler failures
// become per-partition error codes; metrics and onBytesSent count. Every FetchResult handed out
// is released exactly once (counted after each test).
import {
  DataPortApiKey,
  DataPortClient,
  dataPortSupportedApiVersions,
  encodeFetchRequest,
  ProtocolError,
} from '@spool/protocol';
import { decodeRecordBatches } from '@spool/record-batch';
import { activeTransferPath } from '@spool/segment-store';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DataPortHandlers } from './data-port-handlers';
import { DataPortServer, type DataPortServerOptions } from './data-port-server';
import {
  createSegmentFixture,
  eventually,
  fetchRequestFor,
  partitionResult,
  rawConnection,
  ReleaseTracker,
  responsesIn,
  type SegmentFixture,
  silentLogger,
  slicesOf,
  startServer,
} from '../testing/data-port';

const topic = 'orders';
/** Partition p holds fixture batches [5p, 5p + 5), at offsets 0 to 4. */
const batchesPerPartition = 5;

let fixture: SegmentFixture;
let tracker: ReleaseTracker;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(() => {
  fixture = createSegmentFixture(10);
});

afterAll(() => fixture.remove());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  expect(tracker.releasedTwice).toBe(0);
  expect(tracker.released).toBe(tracker.issued);
});

function newTracker(): ReleaseTracker {
  tracker = new ReleaseTracker();
  return tracker;
}

/** Records of partition `partition` from `fetchOffset` to its end, as the handler serves them. */
function expectedRecords(partition: number, fetchOffset: number): Buffer {
  const first = partition * batchesPerPartition + fetchOffset;
  const end = (partition + 1) * batchesPerPartition;
  return fixture.content.subarray(fixture.positions[first], fixture.positions[end]);
}

function servingHandlers(overrides: Partial<DataPortHandlers> = {}): DataPortHandlers {
  return {
    fetch: async (request) =>
      tracker.result(
        request.partitions.map((requested) => {
          if (requested.partition > 1) {
            return partitionResult(requested.topic, requested.partition, [], {
              errorCode: 'UNKNOWN_TOPIC_OR_PARTITION',
              errorMessage: `no partition ${requested.partition}`,
              highWatermark: -1n,
              logStartOffset: -1n,
              logEndOffset: -1n,
            });
          }
          const base = requested.partition * batchesPerPartition;
          const first = base + Number(requested.fetchOffset);
          return partitionResult(
            requested.topic,
            requested.partition,
            slicesOf(fixture, first, base + batchesPerPartition),
            { highWatermark: 5n, logEndOffset: 5n },
          );
        }),
      ),
    offsetForLeaderEpoch: async (request) => ({
      partitions: request.partitions.map((partition) => ({
        topic: partition.topic,
        partition: partition.partition,
        errorCode: '',
        errorMessage: '',
        leaderEpoch: partition.leaderEpoch,
        endOffset: BigInt(partition.leaderEpoch) * 100n,
      })),
    }),
    ...overrides,
  };
}

async function serve(
  handlers: DataPortHandlers,
  options: Partial<Omit<DataPortServerOptions, 'handlers' | 'logger'>> = {},
): Promise<{ server: DataPortServer; port: number; client: DataPortClient }> {
  const { server, port } = await startServer({ handlers, ...options });
  const client = await DataPortClient.connect('127.0.0.1', port);
  cleanups.push(async () => {
    await client.close();
    await server.close(1_000);
  });
  return { server, port, client };
}

describe('DataPortServer with DataPortClient', () => {
  it('moves records byte-exact with sendfile, across several slices', async () => {
    newTracker();
    expect(activeTransferPath(), 'the segment-store addon must be built for sendfile').toBe(
      'sendfile',
    );
    const { client } = await serve(servingHandlers());
    const response = await client.fetch(
      fetchRequestFor([{ topic, partition: 0, fetchOffset: 1n }]),
      {
        timeoutMs: 5_000,
      },
    );
    expect(response.partitions).toHaveLength(1);
    const [fetched] = response.partitions;
    expect(fetched!.records.equals(expectedRecords(0, 1))).toBe(true);
    expect(fetched).toMatchObject({ topic, partition: 0, errorCode: '', highWatermark: 5n });
    const offsets = decodeRecordBatches(fetched!.records).map((batch) => batch.header.baseOffset);
    expect(offsets).toEqual([1n, 2n, 3n, 4n]);
  });

  it('answers several partitions in one response, headers first, records in order', async () => {
    newTracker();
    const { client } = await serve(servingHandlers());
    const response = await client.fetch(
      fetchRequestFor([
        { topic, partition: 1, fetchOffset: 2n },
        { topic, partition: 7, fetchOffset: 0n },
        { topic, partition: 0, fetchOffset: 0n },
        { topic, partition: 1, fetchOffset: 4n },
      ]),
      { timeoutMs: 5_000 },
    );
    expect(
      response.partitions.map((partition) => [partition.partition, partition.errorCode]),
    ).toEqual([
      [1, ''],
      [7, 'UNKNOWN_TOPIC_OR_PARTITION'],
      [0, ''],
      [1, ''],
    ]);
    expect(response.partitions[0]!.records.equals(expectedRecords(1, 2))).toBe(true);
    expect(response.partitions[1]!.records.length).toBe(0);
    expect(response.partitions[1]!.errorMessage).toBe('no partition 7');
    expect(response.partitions[1]!.highWatermark).toBe(-1n);
    expect(response.partitions[2]!.records.equals(expectedRecords(0, 0))).toBe(true);
    expect(response.partitions[3]!.records.equals(expectedRecords(1, 4))).toBe(true);
  });

  it('answers API_VERSIONS and OFFSET_FOR_LEADER_EPOCH', async () => {
    newTracker();
    const { client } = await serve(servingHandlers());
    expect(await client.apiVersions({ timeoutMs: 5_000 })).toEqual({
      apis: dataPortSupportedApiVersions,
    });
    const epochs = await client.offsetForLeaderEpoch(
      {
        replicaId: 2,
        partitions: [
          { topic, partition: 0, currentLeaderEpoch: 4, leaderEpoch: 3 },
          { topic, partition: 1, currentLeaderEpoch: -1, leaderEpoch: 1 },
        ],
      },
      { timeoutMs: 5_000 },
    );
    expect(
      epochs.partitions.map((partition) => [partition.leaderEpoch, partition.endOffset]),
    ).toEqual([
      [3, 300n],
      [1, 100n],
    ]);
  });

  it('answers pipelined requests in order, whatever each handler takes', async () => {
    newTracker();
    const handlers = servingHandlers();
    const { client } = await serve({
      ...handlers,
      fetch: async (request, signal) => {
        // Later requests are quicker: out-of-order completion would show if the server allowed it.
        const delayMs = 40 - Number(request.partitions[0]!.fetchOffset) * 8;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return handlers.fetch(request, signal);
      },
    });
    const fetches = [0, 1, 2, 3, 4].map((fetchOffset) =>
      client.fetch(fetchRequestFor([{ topic, partition: 0, fetchOffset: BigInt(fetchOffset) }]), {
        timeoutMs: 5_000,
      }),
    );
    const versions = client.apiVersions({ timeoutMs: 5_000 });
    expect(client.inFlightRequestCount).toBe(6);
    const order: number[] = [];
    const responses = await Promise.all(
      fetches.map((fetch, index) =>
        fetch.then((response) => {
          order.push(index);
          return response;
        }),
      ),
    );
    await versions;
    expect(order).toEqual([0, 1, 2, 3, 4]);
    responses.forEach((response, fetchOffset) => {
      expect(response.partitions[0]!.records.equals(expectedRecords(0, fetchOffset))).toBe(true);
    });
  });

  it('stops reading a connection at its in-flight bound (backpressure), then catches up', async () => {
    newTracker();
    const handlers = servingHandlers();
    let unblock: () => void = () => undefined;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    let handlerCalls = 0;
    const { server, port } = await startServer({
      inFlightRequestsPerConnectionMax: 2,
      handlers: {
        ...handlers,
        fetch: async (request, signal) => {
          handlerCalls += 1;
          await blocked;
          return handlers.fetch(request, signal);
        },
      },
    });
    cleanups.push(() => server.close(1_000));
    const { socket, received } = await rawConnection(port);
    const request = fetchRequestFor([{ topic, partition: 0, fetchOffset: 4n }]);
    const requestCount = 40;
    socket.write(
      Buffer.concat(
        Array.from({ length: requestCount }, (_, id) => encodeFetchRequest(id, request)),
      ),
    );
    await eventually(() => handlerCalls === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // One served and one queued: the other 38 frames were not taken from the connection.
    expect(server.counters().requestsByApi.Fetch).toBe(2);
    expect(handlerCalls).toBe(1);
    unblock();
    await eventually(() => server.counters().requestsByApi.Fetch === requestCount);
    await eventually(() => tracker.released === requestCount);
    socket.end();
    const responses = responsesIn(await received);
    expect(responses.map((response) => response.correlationId)).toEqual(
      Array.from({ length: requestCount }, (_, id) => id),
    );
    for (const response of responses) {
      expect(response.apiKey).toBe(DataPortApiKey.Fetch);
    }
  });

  it('lets a long poll wait for data, or answer empty at maxWaitMs', async () => {
    newTracker();
    const handlers = servingHandlers();
    let appended = false;
    const { client } = await serve({
      ...handlers,
      fetch: async (request, signal) => {
        const deadline = Date.now() + request.maxWaitMs;
        while (!appended && Date.now() < deadline && !signal.aborted) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        if (appended) return handlers.fetch(request, signal);
        return tracker.result(
          request.partitions.map((partition) =>
            partitionResult(partition.topic, partition.partition, []),
          ),
        );
      },
    });
    const started = Date.now();
    const empty = await client.fetch(
      fetchRequestFor([{ topic, partition: 0, fetchOffset: 3n }], { maxWaitMs: 150 }),
      { timeoutMs: 5_000 },
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(empty.partitions[0]!.records.length).toBe(0);
    const waiting = client.fetch(
      fetchRequestFor([{ topic, partition: 0, fetchOffset: 3n }], { maxWaitMs: 10_000 }),
      { timeoutMs: 15_000 },
    );
    setTimeout(() => {
      appended = true;
    }, 100);
    const full = await waiting;
    expect(full.partitions[0]!.records.equals(expectedRecords(0, 3))).toBe(true);
  });

  it('answers a failed handler with its code in every partition and keeps the connection', async () => {
    newTracker();
    const handlers = servingHandlers();
    let failNext = true;
    const { client } = await serve({
      ...handlers,
      fetch: async (request, signal) => {
        if (failNext) {
          failNext = false;
          throw Object.assign(new Error('the leader moved'), {
            code: 'NOT_LEADER_OR_FOLLOWER',
            retriable: true,
          });
        }
        return handlers.fetch(request, signal);
      },
      offsetForLeaderEpoch: async () => {
        throw new TypeError('a bug in the handler');
      },
    });
    const request = fetchRequestFor([
      { topic, partition: 0, fetchOffset: 0n },
      { topic, partition: 1, fetchOffset: 0n },
    ]);
    const failed = await client.fetch(request, { timeoutMs: 5_000 });
    expect(failed.partitions.map((partition) => partition.errorCode)).toEqual([
      'NOT_LEADER_OR_FOLLOWER',
      'NOT_LEADER_OR_FOLLOWER',
    ]);
    expect(failed.partitions[0]!.errorMessage).toBe('the leader moved');
    const epochs = await client.offsetForLeaderEpoch(
      {
        replicaId: 1,
        partitions: [{ topic, partition: 0, currentLeaderEpoch: 1, leaderEpoch: 1 }],
      },
      { timeoutMs: 5_000 },
    );
    expect(epochs.partitions[0]).toMatchObject({
      errorCode: 'UNKNOWN_SERVER_ERROR',
      errorMessage: 'a bug in the handler',
      endOffset: -1n,
    });
    const succeeded = await client.fetch(request, { timeoutMs: 5_000 });
    expect(succeeded.partitions[1]!.records.equals(expectedRecords(1, 0))).toBe(true);
  });

  it('counts connections, requests by api and bytes sent per topic', async () => {
    newTracker();
    const registry = new Registry();
    const sent: Array<[string, number]> = [];
    const { server, client } = await serve(servingHandlers(), {
      registry,
      onBytesSent: (sentTopic, sizeBytes) => sent.push([sentTopic, sizeBytes]),
    });
    await client.fetch(
      fetchRequestFor([
        { topic, partition: 0, fetchOffset: 0n },
        { topic: 'payments', partition: 1, fetchOffset: 3n },
      ]),
      { timeoutMs: 5_000 },
    );
    await client.apiVersions({ timeoutMs: 5_000 });
    expect(sent).toEqual([
      [topic, expectedRecords(0, 0).length],
      ['payments', expectedRecords(1, 3).length],
    ]);
    expect(server.counters()).toEqual({
      connectionsOpen: 1,
      connectionsAccepted: 1,
      connectionsRefused: 0,
      requestsByApi: { Fetch: 1, ApiVersions: 1 },
      recordBytesSent: expectedRecords(0, 0).length + expectedRecords(1, 3).length,
    });
    const metrics = await registry.metrics();
    expect(metrics).toContain('spool_data_port_connections 1');
    expect(metrics).toContain('spool_data_port_requests_total{api="Fetch"} 1');
    expect(metrics).toContain('spool_data_port_requests_total{api="ApiVersions"} 1');
    await client.close();
    await eventually(() => server.counters().connectionsOpen === 0);
    expect(await registry.metrics()).toContain('spool_data_port_connections 0');
  });

  it('refuses to start with a bad setting, naming it', () => {
    newTracker();
    expect(
      () =>
        new DataPortServer({
          logger: silentLogger,
          handlers: servingHandlers(),
          connectionsMaxIdleMs: 0,
        }),
    ).toThrow(/Data port setting connectionsMaxIdleMs must be a positive integer, got 0/);
  });

  it('refuses to fetch more than the client bounds a response to', async () => {
    newTracker();
    const { client } = await serve(servingHandlers());
    const fetching = client.fetch(fetchRequestFor([{ topic, partition: 0, fetchOffset: 0n }]), {
      timeoutMs: 5_000,
      responseBytesMax: 100,
    });
    await expect(fetching).rejects.toThrow(ProtocolError);
    await expect(fetching).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    expect(client.isClosed).toBe(true);
  });
});
