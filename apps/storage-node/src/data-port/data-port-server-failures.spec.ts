// Proves how the data port fails, over real loopback sockets: a malformed frame (bad body, random
// bytes, an oversized or undersized sizeBytes, an unknown apiKey or version) is answered after
// the requests before it, with an ERROR frame, and only that connection closes while another
// keeps fetching; a client timeout fails the request and closes the connection, which aborts
// the handler; server close aborts in-flight handlers, finishes a response on the wire, destroys
// a stuck one after the drain timeout, and refuses new connections; idle connections close; a
// file truncated under a response closes the connection. Every FetchResult handed out is
// released exactly once in every path (counted after each test).
import {
  DataPortApiKey,
  DataPortClient,
  dataPortErrorApiKey,
  dataPortRequestBytesMax,
  encodeApiVersionsRequest,
  encodeFetchRequest,
  type DataPortResponse,
  ProtocolError,
  unknownCorrelationId,
} from '@spool/protocol';
import type { SegmentFileHandle } from '@spool/segment-store';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DataPortHandlers } from './data-port-handlers';
import type { DataPortServer } from './data-port-server';
import {
  createSegmentFixture,
  eventually,
  fetchRequestFor,
  partitionResult,
  rawConnection,
  ReleaseTracker,
  responsesIn,
  type SegmentFixture,
  slicesOf,
  startServer,
} from '../testing/data-port';

const topic = 'orders';
const mebibyte = 1024 * 1024;

let fixture: SegmentFixture;
let tracker: ReleaseTracker;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(() => {
  fixture = createSegmentFixture(5);
});

afterAll(() => fixture.remove());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  expect(tracker.releasedTwice).toBe(0);
  expect(tracker.released).toBe(tracker.issued);
});

/** Serves every requested partition the fixture's batches [0, 5). */
function servingHandlers(overrides: Partial<DataPortHandlers> = {}): DataPortHandlers {
  return {
    fetch: async (request) =>
      tracker.result(
        request.partitions.map((partition) =>
          partitionResult(partition.topic, partition.partition, slicesOf(fixture, 0, 5)),
        ),
      ),
    offsetForLeaderEpoch: async () => ({ partitions: [] }),
    ...overrides,
  };
}

/** A handler that waits until its signal fires, then resolves with slices (released unsent). */
function abortWaitingFetch(aborted: AbortSignal[]): DataPortHandlers['fetch'] {
  return async (request, signal) => {
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    aborted.push(signal);
    return tracker.result(
      request.partitions.map((partition) =>
        partitionResult(partition.topic, partition.partition, slicesOf(fixture, 0, 5)),
      ),
    );
  };
}

async function serverFor(
  handlers: DataPortHandlers,
  options: { connectionsMaxIdleMs?: number } = {},
): Promise<{ server: DataPortServer; port: number }> {
  const started = await startServer({ handlers, ...options });
  cleanups.push(() => started.server.close(1_000));
  return started;
}

async function clientFor(port: number): Promise<DataPortClient> {
  const client = await DataPortClient.connect('127.0.0.1', port);
  cleanups.push(() => client.close());
  return client;
}

async function errorCodeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return (error as ProtocolError).code;
  }
  throw new Error('the promise resolved, but it should have rejected');
}

const validFetch = fetchRequestFor([{ topic, partition: 0, fetchOffset: 0n }]);

/** A FETCH v0 header and a body whose maxWaitMs is -1. */
function fetchWithNegativeWait(correlationId: number): Buffer {
  const frame = Buffer.alloc(4 + 8 + 52, 0xff);
  frame.writeUInt32BE(frame.length - 4, 0);
  frame.writeUInt16BE(DataPortApiKey.Fetch, 4);
  frame.writeUInt16BE(0, 6);
  frame.writeUInt32BE(correlationId, 8);
  return frame;
}

function headerOnly(apiKey: number, apiVersion: number, correlationId: number): Buffer {
  const frame = Buffer.alloc(12);
  frame.writeUInt32BE(8, 0);
  frame.writeUInt16BE(apiKey, 4);
  frame.writeUInt16BE(apiVersion, 6);
  frame.writeUInt32BE(correlationId, 8);
  return frame;
}

describe('malformed frames', () => {
  const cases: Array<{
    name: string;
    frame: () => Buffer;
    errorCode: string;
    correlationId: number;
    message: RegExp;
  }> = [
    {
      name: 'a body that breaks the layout',
      frame: () => fetchWithNegativeWait(77),
      errorCode: 'INVALID_REQUEST',
      correlationId: 77,
      message: /field maxWaitMs at byte 24 is -1, below its minimum 0/,
    },
    {
      name: 'random bytes with a huge sizeBytes',
      frame: () => Buffer.concat([Buffer.from([0x7f]), randomBytes(99)]),
      errorCode: 'INVALID_REQUEST',
      correlationId: unknownCorrelationId,
      message: /over the bound of 1048576 bytes/,
    },
    {
      name: 'a sizeBytes one over the bound',
      frame: () => {
        const frame = Buffer.alloc(12);
        frame.writeUInt32BE(dataPortRequestBytesMax - 3, 0);
        return frame;
      },
      errorCode: 'INVALID_REQUEST',
      correlationId: unknownCorrelationId,
      message: /request frame of 1048577 bytes/,
    },
    {
      name: 'a sizeBytes under the header',
      frame: () => Buffer.from([0, 0, 0, 2, 0, 1]),
      errorCode: 'INVALID_REQUEST',
      correlationId: unknownCorrelationId,
      message: /sizeBytes at byte 0 is 2, shorter than its 8-byte header/,
    },
    {
      name: 'an unknown apiKey',
      frame: () => headerOnly(42, 0, 78),
      errorCode: 'UNSUPPORTED_VERSION',
      correlationId: 78,
      message: /apiKey 42 at byte 4 .* is not an API of the data port/,
    },
    {
      name: 'an unknown version',
      frame: () => headerOnly(DataPortApiKey.Fetch, 9, 79),
      errorCode: 'UNSUPPORTED_VERSION',
      correlationId: 79,
      message: /Fetch version 9 at byte 6/,
    },
  ];

  for (const testCase of cases) {
    it(`answers ${testCase.name} with ERROR after earlier requests, and closes only that connection`, async () => {
      tracker = new ReleaseTracker();
      const { server, port } = await serverFor(servingHandlers());
      const bystander = await clientFor(port);
      const { socket, received } = await rawConnection(port);
      socket.write(
        Buffer.concat([
          encodeFetchRequest(1, validFetch),
          encodeApiVersionsRequest(2),
          testCase.frame(),
          encodeApiVersionsRequest(3),
        ]),
      );
      // The server closes the raw connection; nothing here ends it.
      const responses: DataPortResponse[] = responsesIn(await received);
      expect(responses.map((response) => [response.correlationId, response.apiKey])).toEqual([
        [1, DataPortApiKey.Fetch],
        [2, DataPortApiKey.ApiVersions],
        [testCase.correlationId, dataPortErrorApiKey],
      ]);
      const refusal = responses[2]!;
      expect(refusal.apiKey).toBe(dataPortErrorApiKey);
      if (refusal.apiKey !== dataPortErrorApiKey) return;
      expect(refusal.body.errorCode).toBe(testCase.errorCode);
      expect(refusal.body.errorMessage).toMatch(testCase.message);
      const fetched = await bystander.fetch(validFetch, { timeoutMs: 5_000 });
      expect(fetched.partitions[0]!.records.equals(fixture.content)).toBe(true);
      expect(server.counters().requestsByApi).toMatchObject({ Invalid: 1, Fetch: 2 });
    });
  }

  it('fails the client request the server refused with the server code', async () => {
    tracker = new ReleaseTracker();
    const { port } = await serverFor(servingHandlers());
    const client = await clientFor(port);
    // A partition number the server refuses (it must not be negative).
    const request = fetchRequestFor([{ topic, partition: -5, fetchOffset: 0n }]);
    const code = await errorCodeOf(client.fetch(request, { timeoutMs: 5_000 }));
    expect(code).toBe('INVALID_REQUEST');
    expect(client.isClosed).toBe(true);
    expect(await errorCodeOf(client.apiVersions({ timeoutMs: 5_000 }))).toBe('NETWORK_EXCEPTION');
  });
});

describe('timeouts, aborts and shutdown', () => {
  it('times a request out, closes the client, and the server aborts and releases', async () => {
    tracker = new ReleaseTracker();
    const aborted: AbortSignal[] = [];
    const { server, port } = await serverFor(
      servingHandlers({ fetch: abortWaitingFetch(aborted) }),
    );
    const client = await clientFor(port);
    const timingOut = errorCodeOf(client.fetch(validFetch, { timeoutMs: 100 }));
    const behind = errorCodeOf(client.fetch(validFetch, { timeoutMs: 5_000 }));
    const started = Date.now();
    expect(await timingOut).toBe('REQUEST_TIMED_OUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(await behind).toBe('NETWORK_EXCEPTION');
    expect(client.isClosed).toBe(true);
    await eventually(() => aborted.length === 1 && tracker.released === 1);
    expect(aborted[0]!.aborted).toBe(true);
    await eventually(() => server.counters().connectionsOpen === 0);
  });

  it('aborts in-flight handlers on close, closes connections and refuses new ones', async () => {
    tracker = new ReleaseTracker();
    const aborted: AbortSignal[] = [];
    const { server, port } = await startServer({
      handlers: servingHandlers({ fetch: abortWaitingFetch(aborted) }),
    });
    const first = await clientFor(port);
    const second = await clientFor(port);
    const polls = [first, second].map((client) =>
      errorCodeOf(client.fetch(validFetch, { timeoutMs: 10_000 })),
    );
    await eventually(() => server.counters().requestsByApi.Fetch === 2);
    await server.close(2_000);
    expect(aborted).toHaveLength(2);
    expect(aborted.every((signal) => signal.aborted)).toBe(true);
    expect(tracker.released).toBe(2);
    expect(await Promise.all(polls)).toEqual(['NETWORK_EXCEPTION', 'NETWORK_EXCEPTION']);
    expect(await errorCodeOf(DataPortClient.connect('127.0.0.1', port))).toBe('NETWORK_EXCEPTION');
    expect(server.counters().connectionsOpen).toBe(0);
  });

  it('closes idle connections after connectionsMaxIdleMs, but not one waiting on a handler', async () => {
    tracker = new ReleaseTracker();
    const handlers = servingHandlers();
    const { port } = await serverFor(
      {
        ...handlers,
        fetch: async (request, signal) => {
          await new Promise((resolve) => setTimeout(resolve, request.maxWaitMs));
          return handlers.fetch(request, signal);
        },
      },
      { connectionsMaxIdleMs: 100 },
    );
    const idle = await clientFor(port);
    const polling = await clientFor(port);
    const poll = polling.fetch(
      fetchRequestFor([{ topic, partition: 0, fetchOffset: 0n }], { maxWaitMs: 300 }),
      {
        timeoutMs: 5_000,
      },
    );
    await eventually(() => idle.isClosed, 2_000);
    expect((await poll).partitions[0]!.records.equals(fixture.content)).toBe(true);
    expect(polling.isClosed).toBe(false);
    await eventually(() => polling.isClosed, 2_000);
  });
});

describe('responses on the wire', () => {
  let bigFile: SegmentFileHandle;
  let bigDirectory: string;
  const bigFileBytes = 48 * mebibyte;

  beforeAll(() => {
    bigDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-data-port-big-'));
    const filePath = path.join(bigDirectory, '00000000000000000000.log');
    fs.writeFileSync(filePath, randomBytes(bigFileBytes));
    bigFile = { fd: fs.openSync(filePath, 'r'), path: filePath };
  });

  afterAll(() => {
    fs.closeSync(bigFile.fd);
    fs.rmSync(bigDirectory, { recursive: true, force: true });
  });

  function bigHandlers(): DataPortHandlers {
    return servingHandlers({
      fetch: async (request) =>
        tracker.result([
          partitionResult(request.partitions[0]!.topic, 0, [
            { file: bigFile, position: 0, sizeBytes: bigFileBytes },
          ]),
        ]),
    });
  }

  /** A raw connection that sends one fetch and does not read until told to. */
  async function stalledFetch(
    port: number,
  ): Promise<{ socket: net.Socket; received: Promise<Buffer> }> {
    const connection = await rawConnection(port);
    connection.socket.pause();
    connection.socket.write(encodeFetchRequest(5, validFetch));
    return connection;
  }

  it('finishes a response already on the wire when the server closes', async () => {
    tracker = new ReleaseTracker();
    const { server, port } = await startServer({ handlers: bigHandlers() });
    const { socket, received } = await stalledFetch(port);
    await eventually(() => tracker.issued === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closing = server.close(10_000);
    setTimeout(() => socket.resume(), 100);
    const responses = responsesIn(await received);
    await closing;
    expect(responses).toHaveLength(1);
    const response = responses[0]!;
    if (response.apiKey !== DataPortApiKey.Fetch) throw new Error('expected a FETCH response');
    const records = response.body.partitions[0]!.records;
    expect(records.length).toBe(bigFileBytes);
    const head = Buffer.alloc(4096);
    fs.readSync(bigFile.fd, head, 0, head.length, 0);
    expect(records.subarray(0, head.length).equals(head)).toBe(true);
    expect(tracker.released).toBe(1);
  });

  it('destroys a connection stuck mid-response after the drain timeout, releasing once', async () => {
    tracker = new ReleaseTracker();
    const { server, port } = await startServer({ handlers: bigHandlers() });
    const { socket, received } = await stalledFetch(port);
    await eventually(() => tracker.issued === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await server.close(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(tracker.released).toBe(1);
    // Read what arrived, to see the end of the stream: a cut-off response, then the close.
    socket.resume();
    const bytes = await received;
    expect(bytes.length).toBeLessThan(bigFileBytes);
    expect(() => responsesIn(bytes)).toThrow(/bytes left over/);
  });

  it('closes the connection when the file shrank under a response, releasing once', async () => {
    tracker = new ReleaseTracker();
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-data-port-truncated-'));
    const filePath = path.join(directory, '00000000000000000000.log');
    fs.writeFileSync(filePath, fixture.content);
    const file = { fd: fs.openSync(filePath, 'r'), path: filePath };
    cleanups.push(() => {
      fs.closeSync(file.fd);
      fs.rmSync(directory, { recursive: true, force: true });
    });
    const { port } = await serverFor(
      servingHandlers({
        fetch: async (request) => {
          const result = tracker.result(
            request.partitions.map((partition) =>
              partitionResult(partition.topic, partition.partition, [
                { file, position: 0, sizeBytes: fixture.content.length },
              ]),
            ),
          );
          // The log is truncated between the read and the transfer (a follower's truncateTo).
          fs.truncateSync(filePath, 10);
          return result;
        },
      }),
    );
    const client = await clientFor(port);
    expect(await errorCodeOf(client.fetch(validFetch, { timeoutMs: 5_000 }))).toBe(
      'NETWORK_EXCEPTION',
    );
    await eventually(() => tracker.released === 1);
  });
});
