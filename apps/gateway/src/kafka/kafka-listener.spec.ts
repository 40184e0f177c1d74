// Proves the Kafka listener's connection layer over real loopback sockets, with a handler of the
// test's own (the APIs are proved elsewhere): pipelined requests are answered in request order
// whatever order they finish in; a request without a response (acks=0) keeps the order; a size
// prefix over socket.request.max.bytes (2 GiB included) or under the fixed header closes the
// connection without serving anything; a refused request is closed after the responses before
// it; at most inFlightRequestsMax requests are read from a client that never gets answers, and
// no more once the bytes held reach queuedBytesMax (requests, and responses waiting behind an
// unanswered one), though a single request over that bound is still served; a client that
// never reads its responses stops being read; every other connection goes on; close() drains.
import { createLogger } from '@spool/common';
import net from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type {
  KafkaRequestContext,
  KafkaRequestHandler,
  KafkaResponseFrame,
} from './kafka-connection';
import { KafkaListener } from './kafka-listener';
import { KafkaListenerMetrics } from './kafka-listener-metrics';
import { KafkaRequestRefused, type KafkaRequestFrame } from './kafka-request-frame';

const logger = createLogger({ service: 'test', level: 'silent' });

/** Test API keys: what the handler does with a request. */
const Echo = 0;
const Refuse = 1;
const NoResponse = 2;
const Large = 3;
const Hold = 4;

class TestHandler implements KafkaRequestHandler {
  readonly served: KafkaRequestFrame[] = [];
  readonly held: Array<() => void> = [];
  readonly aborted: number[] = [];
  readonly contexts: KafkaRequestContext[] = [];

  serve(request: KafkaRequestFrame, context: KafkaRequestContext): Promise<KafkaResponseFrame> {
    this.served.push(request);
    this.contexts.push(context);
    const answer = Buffer.alloc(8);
    answer.writeInt32BE(request.correlationId, 0);
    answer.writeInt32BE(request.bytes.length, 4);
    switch (request.apiKey) {
      case Echo: {
        // Later requests finish first: the answer waits as long as the apiVersion says.
        return new Promise((resolve) => setTimeout(() => resolve(answer), request.apiVersion));
      }
      case Refuse:
        throw new KafkaRequestRefused('the test refuses apiKey 1');
      case NoResponse:
        return Promise.resolve(undefined);
      case Large:
        return Promise.resolve([answer, Buffer.alloc(1024 * 1024)]);
      default:
        return new Promise((resolve) => {
          context.signal.addEventListener('abort', () => this.aborted.push(request.correlationId));
          this.held.push(() => resolve(answer));
        });
    }
  }
}

function request(apiKey: number, correlationId: number, apiVersion = 0, bodyBytes = 4): Buffer {
  const frame = Buffer.alloc(4 + 8 + bodyBytes);
  frame.writeInt32BE(8 + bodyBytes, 0);
  frame.writeInt16BE(apiKey, 4);
  frame.writeInt16BE(apiVersion, 6);
  frame.writeInt32BE(correlationId, 8);
  return frame;
}

interface Client {
  readonly socket: net.Socket;
  /** The correlation ids of the responses received so far, in order. */
  readonly correlationIds: number[];
  readonly ended: Promise<void>;
}

function connect(port: number, read = true): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const correlationIds: number[] = [];
    let buffered = Buffer.alloc(0);
    if (read) {
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
          correlationIds.push(buffered.readInt32BE(4));
          buffered = buffered.subarray(4 + buffered.readInt32BE(0));
        }
      });
    }
    const ended = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, correlationIds, ended }));
    socket.once('error', reject);
  });
}

const listeners: KafkaListener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.close(1_000)));
});

async function start(
  options: {
    inFlightRequestsMax?: number;
    requestBytesMax?: number;
    queuedBytesMax?: number;
    authenticationRequired?: boolean;
  } = {},
): Promise<{ listener: KafkaListener; handler: TestHandler; port: number; registry: Registry }> {
  const handler = new TestHandler();
  const registry = new Registry();
  const holder: { listener?: KafkaListener } = {};
  const listener = new KafkaListener({
    logger,
    handler,
    metrics: new KafkaListenerMetrics(registry, () => holder.listener?.connectionCount ?? 0),
    requestBytesMax: options.requestBytesMax ?? 100 * 1024 * 1024,
    inFlightRequestsMax: options.inFlightRequestsMax ?? 32,
    queuedBytesMax: options.queuedBytesMax,
    authenticationRequired: options.authenticationRequired,
  });
  holder.listener = listener;
  listeners.push(listener);
  const port = await listener.listen('127.0.0.1', 0);
  return { listener, handler, port, registry };
}

describe('Kafka listener connections', () => {
  it('answers pipelined requests in request order, skipping those without a response', async () => {
    const { port } = await start();
    const client = await connect(port);
    client.socket.write(
      Buffer.concat([
        request(Echo, 1, 60),
        request(NoResponse, 2),
        request(Echo, 3, 30),
        request(Echo, 4, 0),
      ]),
    );
    await vi.waitFor(() => expect(client.correlationIds).toEqual([1, 3, 4]), { timeout: 5_000 });
    client.socket.destroy();
  });

  it.each([
    ['a 2 GiB size prefix', Buffer.from([0x80, 0, 0, 0, 1, 2, 3])],
    ['a size over socket.request.max.bytes', Buffer.from([0, 0x10, 0, 1, 0, 0])],
    ['a size under the fixed header', Buffer.from([0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0])],
  ])('closes the connection on %s without serving it; others go on', async (_, bytes) => {
    const { port, handler, registry } = await start({ requestBytesMax: 1024 * 1024 });
    const other = await connect(port);
    const client = await connect(port);
    client.socket.write(bytes);
    await client.ended;
    expect(handler.served).toEqual([]);
    other.socket.write(request(Echo, 7));
    await vi.waitFor(() => expect(other.correlationIds).toEqual([7]), { timeout: 5_000 });
    const refused = await registry.getSingleMetric('spool_kafka_connections_refused_total')?.get();
    expect(refused?.values[0]?.value).toBe(1);
    other.socket.destroy();
  });

  it('answers the requests before a refused one, then ends the connection', async () => {
    const { port, handler } = await start();
    const client = await connect(port);
    client.socket.write(
      Buffer.concat([request(Echo, 1, 20), request(Echo, 2), request(Refuse, 3), request(Echo, 4)]),
    );
    await client.ended;
    expect(client.correlationIds).toEqual([1, 2]);
    expect(handler.served.map((served) => served.correlationId)).toEqual([1, 2, 3]);
  });

  it('hands every request the connection principal User:ANONYMOUS and the client host', async () => {
    const { handler, port } = await start();
    const client = await connect(port);
    client.socket.write(Buffer.concat([request(Echo, 1), request(Echo, 2)]));
    await vi.waitFor(() => expect(client.correlationIds).toEqual([1, 2]), { timeout: 5_000 });
    expect(handler.contexts.map(({ principal, clientHost }) => [principal, clientHost])).toEqual([
      ['User:ANONYMOUS', '127.0.0.1'],
      ['User:ANONYMOUS', '127.0.0.1'],
    ]);
    expect(handler.contexts[0]!.session.authenticated).toBe(true);
  });

  it('reads one request at a time until a SASL session is authenticated', async () => {
    const { handler, port } = await start({ authenticationRequired: true });
    const client = await connect(port);
    client.socket.write(Buffer.concat([request(Hold, 1), request(Hold, 2), request(Hold, 3)]));
    await vi.waitFor(() => expect(handler.held).toHaveLength(1), { timeout: 5_000 });
    expect(handler.contexts[0]!.session.authenticated).toBe(false);
    handler.contexts[0]!.session.authenticate('User:alice');
    handler.held[0]!();
    // Authenticated: the two pipelined requests behind it are read together.
    await vi.waitFor(() => expect(handler.held).toHaveLength(3), { timeout: 5_000 });
    expect(handler.contexts.map(({ principal }) => principal)).toEqual([
      'User:ANONYMOUS',
      'User:alice',
      'User:alice',
    ]);
    handler.held[1]!();
    handler.held[2]!();
    await vi.waitFor(() => expect(client.correlationIds).toEqual([1, 2, 3]), { timeout: 5_000 });
  });

  it('reads at most inFlightRequestsMax requests while none is answered', async () => {
    const { port, handler } = await start({ inFlightRequestsMax: 4 });
    const client = await connect(port);
    const pipelined = Array.from({ length: 50 }, (_, index) => request(Hold, index, 0, 1000));
    client.socket.write(Buffer.concat(pipelined));
    await vi.waitFor(() => expect(handler.served).toHaveLength(4), { timeout: 5_000 });
    // Answering two lets exactly two more in.
    handler.held.shift()!();
    handler.held.shift()!();
    await vi.waitFor(() => expect(client.correlationIds).toEqual([0, 1]), { timeout: 5_000 });
    await vi.waitFor(() => expect(handler.served).toHaveLength(6), { timeout: 5_000 });
    expect(handler.held).toHaveLength(4);
    client.socket.destroy();
    await vi.waitFor(() => expect(handler.aborted.length).toBeGreaterThanOrEqual(4));
  });

  it('reads no more requests once the request bytes held reach queuedBytesMax', async () => {
    const mebibyte = 1024 * 1024;
    const { port, handler, listener } = await start({ queuedBytesMax: 4 * mebibyte });
    const client = await connect(port);
    // 1 MiB requests never answered: 32 of them (32 MiB) without the byte bound.
    const pipelined = Array.from({ length: 12 }, (_, index) => request(Hold, index, 0, mebibyte));
    client.socket.write(Buffer.concat(pipelined));
    await vi.waitFor(() => expect(handler.served).toHaveLength(4), { timeout: 5_000 });
    // Answering two (8-byte answers, written at once) frees room for exactly two more.
    handler.held.shift()!();
    handler.held.shift()!();
    await vi.waitFor(() => expect(client.correlationIds).toEqual([0, 1]), { timeout: 5_000 });
    await vi.waitFor(() => expect(handler.served).toHaveLength(6), { timeout: 5_000 });
    expect(handler.held).toHaveLength(4);
    expect(listener.connectionCount).toBe(1);
    client.socket.destroy();
  });

  it('counts the responses done behind an unanswered request in queuedBytesMax', async () => {
    const mebibyte = 1024 * 1024;
    const { port, handler } = await start({ queuedBytesMax: 4 * mebibyte });
    const client = await connect(port);
    // The first is held; each later one is answered with 1 MiB at once, which must wait behind
    // it. Sent one at a time, so each answer is done before the next request arrives.
    client.socket.write(request(Hold, 0));
    for (let index = 1; index <= 4; index++) {
      client.socket.write(request(Large, index));
      await vi.waitFor(() => expect(handler.served).toHaveLength(index + 1), { timeout: 5_000 });
    }
    // 4 MiB of responses wait: the next requests stay unread.
    client.socket.write(Buffer.concat([request(Large, 5), request(Large, 6)]));
    let previous = -1;
    await vi.waitFor(
      () => {
        const settled = handler.served.length === previous;
        previous = handler.served.length;
        expect(settled).toBe(true);
      },
      { timeout: 5_000, interval: 100 },
    );
    expect(handler.served).toHaveLength(5);
    // Once the first is answered, everything flows to the reading client.
    handler.held.shift()!();
    await vi.waitFor(() => expect(client.correlationIds).toHaveLength(7), { timeout: 5_000 });
    expect(client.correlationIds).toEqual([0, 1, 2, 3, 4, 5, 6]);
    client.socket.destroy();
  });

  it('serves a single request larger than queuedBytesMax when nothing else is in flight', async () => {
    const { port, handler } = await start({ queuedBytesMax: 1024 });
    const client = await connect(port);
    client.socket.write(
      Buffer.concat([request(Echo, 1, 0, 64 * 1024), request(Echo, 2, 0, 64 * 1024)]),
    );
    await vi.waitFor(() => expect(client.correlationIds).toEqual([1, 2]), { timeout: 5_000 });
    expect(handler.served.map((served) => served.bytes.length)).toEqual([8 + 65536, 8 + 65536]);
    client.socket.destroy();
  });

  it('stops reading a client that never reads its responses', async () => {
    const { port, handler, listener } = await start({ inFlightRequestsMax: 8 });
    const client = await connect(port, false);
    // 400 requests whose answers are 1 MiB each: 400 MiB if the listener kept reading.
    const writeAll = (): void => {
      for (let index = 0; index < 400; index++) client.socket.write(request(Large, index));
    };
    writeAll();
    await vi.waitFor(() => expect(handler.served.length).toBeGreaterThan(0), { timeout: 5_000 });
    // The served count settles well below 400: the listener stopped reading once the socket's
    // write buffer filled, and TCP holds the rest back.
    let previous = -1;
    await vi.waitFor(
      () => {
        const now = handler.served.length;
        const settled = now === previous;
        previous = now;
        expect(settled).toBe(true);
      },
      { timeout: 10_000, interval: 200 },
    );
    expect(handler.served.length).toBeLessThan(100);
    expect(listener.connectionCount).toBe(1);
    client.socket.destroy();
  });

  it('drains at close: answers what is done, aborts what waits, then ends', async () => {
    const { port, handler, listener } = await start();
    const client = await connect(port);
    client.socket.write(Buffer.concat([request(Echo, 1), request(Hold, 2)]));
    await vi.waitFor(() => expect(handler.held).toHaveLength(1), { timeout: 5_000 });
    const closed = listener.close(2_000);
    await vi.waitFor(() => expect(handler.aborted).toEqual([2]), { timeout: 5_000 });
    handler.held.shift()!();
    await client.ended;
    await closed;
    expect(client.correlationIds).toEqual([1, 2]);
  });
});
