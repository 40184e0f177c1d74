// Proves DataPortClient's own rules against a scripted loopback server that answers with frames
// chosen by each test: responses are matched to requests in order by correlationId; the
// in-flight bound fails fast with a retriable error; a response out of order, unasked for,
// malformed or over its bound closes the client with a typed error for every pending request;
// an ERROR frame fails the refused request with the server's code; a timeout fails with
// REQUEST_TIMED_OUT and closes; close() and a refused connect fail with NETWORK_EXCEPTION.
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ProtocolError } from '../errors';
import { encodeApiVersionsResponse } from './api-versions-codec';
import { DataPortClient } from './data-port-client';
import { DataPortApiKey, dataPortSupportedApiVersions } from './data-port-layout';
import { decodeDataPortRequest } from './data-port-request';
import { encodeErrorResponse } from './error-response-codec';
import { encodeFetchResponse } from './fetch-codec';
import { FrameSplitter } from './frame-splitter';
import { FrameWriter } from './frame-writer';

interface ScriptedServer {
  readonly port: number;
  /** Correlation ids of the requests received so far, in order. */
  readonly received: number[];
  /** Writes raw bytes to the (single) connection. */
  send(bytes: Buffer): void;
  close(): Promise<void>;
}

const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A server that records requests and answers each with `answer` (nothing when undefined). */
async function scriptedServer(
  answer: (apiKey: number, correlationId: number) => Buffer | undefined = () => undefined,
): Promise<ScriptedServer> {
  const received: number[] = [];
  let connection: net.Socket | undefined;
  const server = net.createServer((socket) => {
    connection = socket;
    socket.on('error', () => undefined);
    const splitter = new FrameSplitter({
      direction: 'request',
      frameBytesMax: () => 1024 * 1024,
      headerBytesMin: 8,
    });
    socket.on('data', (chunk: Buffer) => {
      splitter.push(chunk);
      for (let frame = splitter.next(); frame !== undefined; frame = splitter.next()) {
        const request = decodeDataPortRequest(frame);
        received.push(request.correlationId);
        const response = answer(request.apiKey, request.correlationId);
        if (response !== undefined) socket.write(response);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const scripted: ScriptedServer = {
    port: (server.address() as net.AddressInfo).port,
    received,
    send: (bytes) => connection?.write(bytes),
    close: async () => {
      connection?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  closers.push(scripted.close);
  return scripted;
}

async function connect(port: number, inFlightRequestsMax?: number): Promise<DataPortClient> {
  const client = await DataPortClient.connect('127.0.0.1', port, { inFlightRequestsMax });
  closers.push(() => client.close());
  return client;
}

async function rejectionOf(promise: Promise<unknown>): Promise<ProtocolError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error('the promise resolved, but it should have rejected');
}

const versionsOf = (correlationId: number): Buffer =>
  encodeApiVersionsResponse(correlationId, { apis: dataPortSupportedApiVersions });

const emptyFetch = {
  replicaId: -1,
  brokerEpoch: -1n,
  maxWaitMs: 0,
  minBytes: 0,
  maxBytes: 100,
  partitions: [],
};

describe('DataPortClient', () => {
  it('pipelines requests with increasing correlation ids and matches responses in order', async () => {
    const server = await scriptedServer((_apiKey, id) => versionsOf(id));
    const client = await connect(server.port);
    const answers = await Promise.all(
      [1, 2, 3].map(() => client.apiVersions({ timeoutMs: 2_000 })),
    );
    expect(server.received).toEqual([0, 1, 2]);
    expect(answers).toEqual([1, 2, 3].map(() => ({ apis: dataPortSupportedApiVersions })));
    expect(client.inFlightRequestCount).toBe(0);
  });

  it('fails fast beyond its in-flight bound, with a retriable error', async () => {
    const server = await scriptedServer();
    const client = await connect(server.port, 2);
    const pending = [
      client.apiVersions({ timeoutMs: 2_000 }),
      client.apiVersions({ timeoutMs: 2_000 }),
    ];
    const full = await rejectionOf(client.apiVersions({ timeoutMs: 2_000 }));
    expect(full.code).toBe('IN_FLIGHT_REQUESTS_FULL');
    expect(full.retriable).toBe(true);
    await eventuallyReceived(server, 2);
    server.send(Buffer.concat([versionsOf(0), versionsOf(1)]));
    await Promise.all(pending);
    expect(client.isClosed).toBe(false);
  });

  it('closes on a response out of order, failing every pending request', async () => {
    const server = await scriptedServer();
    const client = await connect(server.port);
    const first = rejectionOf(client.apiVersions({ timeoutMs: 2_000 }));
    const second = rejectionOf(client.apiVersions({ timeoutMs: 2_000 }));
    await eventuallyReceived(server, 2);
    server.send(versionsOf(1));
    const error = await first;
    expect(error.code).toBe('CORRUPT_MESSAGE');
    expect(error.message).toMatch(/answered apiKey 0 correlationId 1, but the oldest pending/);
    expect((await second).code).toBe('NETWORK_EXCEPTION');
    expect(client.isClosed).toBe(true);
    expect((await rejectionOf(client.apiVersions({ timeoutMs: 100 }))).code).toBe(
      'NETWORK_EXCEPTION',
    );
  });

  it('closes on a response nobody asked for, or a malformed one', async () => {
    const server = await scriptedServer();
    const unasked = await connect(server.port);
    server.send(versionsOf(0));
    await expect.poll(() => unasked.isClosed, { timeout: 2_000 }).toBe(true);

    const malformedServer = await scriptedServer((_apiKey, id) =>
      new FrameWriter().u32(id).u16(DataPortApiKey.ApiVersions).u32(5).finish(),
    );
    const client = await connect(malformedServer.port);
    const error = await rejectionOf(client.apiVersions({ timeoutMs: 2_000 }));
    expect(error.code).toBe('CORRUPT_MESSAGE');
    expect(error.message).toMatch(/field apis at byte 10 has 5 entries of at least 6 bytes/);
  });

  it('refuses a response frame over the bound of its request before buffering it', async () => {
    const server = await scriptedServer((_apiKey, id) =>
      encodeFetchResponse(id, {
        partitions: [
          {
            topic: 't',
            partition: 0,
            errorCode: '',
            errorMessage: '',
            highWatermark: 0n,
            logStartOffset: 0n,
            logEndOffset: 0n,
            records: Buffer.alloc(500),
          },
        ],
      }),
    );
    const client = await connect(server.port);
    const error = await rejectionOf(
      client.fetch(emptyFetch, { timeoutMs: 2_000, responseBytesMax: 200 }),
    );
    expect(error.code).toBe('MESSAGE_TOO_LARGE');
    expect(error.message).toMatch(/response frame of 5\d\d bytes .* over the bound of 200 bytes/);
  });

  it('fails the refused request with the code of an ERROR frame', async () => {
    const server = await scriptedServer((_apiKey, id) =>
      encodeErrorResponse(id, { errorCode: 'UNSUPPORTED_VERSION', errorMessage: 'too new' }),
    );
    const client = await connect(server.port);
    const error = await rejectionOf(client.fetch(emptyFetch, { timeoutMs: 2_000 }));
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.message).toMatch(/refused the request with UNSUPPORTED_VERSION: too new/);
    expect(client.isClosed).toBe(true);
  });

  it('times a request out and closes the connection', async () => {
    const server = await scriptedServer();
    const client = await connect(server.port);
    const error = await rejectionOf(client.apiVersions({ timeoutMs: 50 }));
    expect(error.code).toBe('REQUEST_TIMED_OUT');
    expect(error.retriable).toBe(true);
    expect(client.isClosed).toBe(true);
  });

  it('fails pending requests on close() and on a refused connect', async () => {
    const server = await scriptedServer();
    const client = await connect(server.port);
    const pending = rejectionOf(client.apiVersions({ timeoutMs: 2_000 }));
    await client.close();
    expect((await pending).code).toBe('NETWORK_EXCEPTION');
    const port = server.port;
    await server.close();
    const refused = await rejectionOf(DataPortClient.connect('127.0.0.1', port));
    expect(refused.code).toBe('NETWORK_EXCEPTION');
    expect(refused.retriable).toBe(true);
  });
});

function eventuallyReceived(server: ScriptedServer, count: number): Promise<void> {
  return expect.poll(() => server.received.length >= count, { timeout: 2_000 }).toBe(true);
}
