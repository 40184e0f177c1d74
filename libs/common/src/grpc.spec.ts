// Proves the gRPC helpers against a real server on loopback: typed errors cross the wire with
// their code, retriable failures are retried with backoff, health follows readiness, the server
// drains in-flight calls on shutdown and refuses new ones, and every call is counted, timed and its
// errors (whole-call and per-partition) counted by Kafka code under the RPC's name.
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SpoolError } from './errors';
import { callOnce, callWithRetry, createGrpcClient, backoffMs } from './grpc-client';
import { GrpcServer } from './grpc-server';
import { createLogger } from './logger';
import { RequestMetrics } from './request-metrics';

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as unknown,
};
const echoDefinition: grpc.ServiceDefinition = {
  echo: {
    path: '/test.v1.EchoService/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};
const EchoClient = grpc.makeGenericClientConstructor(echoDefinition, 'EchoService');
type EchoMethod = (
  request: { text: string; failTimes?: number; delayMs?: number },
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: { text: string }) => void,
) => grpc.ClientUnaryCall;

const logger = createLogger({ service: 'test', level: 'silent' });
let server: GrpcServer | undefined;
let calls = 0;

async function startEcho(
  requestMetrics?: RequestMetrics,
  port = 0,
): Promise<{ server: GrpcServer; client: grpc.Client; echo: EchoMethod }> {
  calls = 0;
  server = new GrpcServer(logger, {
    maxMessageBytes: 1024 * 1024,
    descriptorSetPaths: [],
    requestMetrics,
  });
  server.addService(echoDefinition, {
    echo: async (request: { text: string; failTimes?: number; delayMs?: number }) => {
      calls++;
      if (request.delayMs) await new Promise((resolve) => setTimeout(resolve, request.delayMs));
      if (request.text === 'bad')
        throw new SpoolError('INVALID_TOPIC_EXCEPTION', 'topic name "bad" is invalid');
      if (request.text === 'moved') {
        throw new SpoolError('NOT_CONTROLLER', 'standby', {
          retriable: true,
          details: { activeController: 'h:1' },
        });
      }
      if (request.text === 'crash') throw new TypeError('oops');
      if (request.text === 'partial') {
        return { text: 'partial', results: [{ error: { code: 'CORRUPT_MESSAGE' } }, {}] };
      }
      if (calls <= (request.failTimes ?? 0)) {
        throw new SpoolError('NOT_LEADER_OR_FOLLOWER', 'leader moved', { retriable: true });
      }
      return { text: request.text };
    },
  });
  const listening = await server.listen('127.0.0.1', port);
  const client = createGrpcClient(EchoClient, `127.0.0.1:${listening}`);
  const echo = (client as unknown as { echo: EchoMethod }).echo;
  return { server, client, echo };
}

afterEach(async () => {
  await server?.shutdown(100);
  server = undefined;
});

describe('gRPC helpers', () => {
  it('counts, times and classifies every call under its RPC name', async () => {
    const registry = new Registry();
    const { client, echo } = await startEcho(new RequestMetrics(registry));
    await callOnce(client, echo, { text: 'hi' });
    await callOnce(client, echo, { text: 'partial' });
    await callOnce(client, echo, { text: 'bad' }).catch(() => undefined);
    await callOnce(client, echo, { text: 'crash' }).catch(() => undefined);
    const text = await registry.metrics();
    expect(text).toContain('spool_requests_total{api="Echo"} 4');
    expect(text).toContain('spool_request_duration_seconds_count{api="Echo"} 4');
    expect(text).toContain('spool_request_errors_total{api="Echo",code="CORRUPT_MESSAGE"} 1');
    expect(text).toContain(
      'spool_request_errors_total{api="Echo",code="INVALID_TOPIC_EXCEPTION"} 1',
    );
    expect(text).toContain('spool_request_errors_total{api="Echo",code="UNKNOWN_SERVER_ERROR"} 1');
  });

  it('answers and maps typed errors to status and back', async () => {
    const { client, echo } = await startEcho();
    await expect(callOnce(client, echo, { text: 'hi' })).resolves.toEqual({ text: 'hi' });
    const error = await callOnce(client, echo, { text: 'bad' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe('INVALID_TOPIC_EXCEPTION');
    expect((error as SpoolError).message).toBe('topic name "bad" is invalid');
    expect((error as SpoolError).retriable).toBe(false);
    const moved = (await callOnce(client, echo, { text: 'moved' }).catch(
      (e: unknown) => e,
    )) as SpoolError;
    expect(moved.details).toEqual({ activeController: 'h:1' });
    const crash = (await callOnce(client, echo, { text: 'crash' }).catch(
      (e: unknown) => e,
    )) as SpoolError;
    expect(crash.code).toBe('UNKNOWN_SERVER_ERROR');
    client.close();
  });

  it('retries retriable errors and gives up after the attempts', async () => {
    const { client, echo } = await startEcho();
    const retries: number[] = [];
    const options = {
      backoffInitialMs: 1,
      onRetry: (_: SpoolError, attempt: number) => retries.push(attempt),
    };
    await expect(
      callWithRetry(client, echo, { text: 'x', failTimes: 2 }, options),
    ).resolves.toEqual({ text: 'x' });
    expect(retries).toEqual([1, 2]);
    calls = 0;
    const failed = await callWithRetry(
      client,
      echo,
      { text: 'y', failTimes: 10 },
      { ...options, attempts: 3 },
    ).catch((e: unknown) => e);
    expect((failed as SpoolError).code).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(calls).toBe(3);
    client.close();
  });

  it('times out a call that passes its deadline', async () => {
    const { client, echo } = await startEcho();
    const error = (await callOnce(
      client,
      echo,
      { text: 'slow', delayMs: 500 },
      { deadlineMs: 50 },
    ).catch((e: unknown) => e)) as SpoolError;
    expect(error.code).toBe('REQUEST_TIMED_OUT');
    expect(error.retriable).toBe(true);
    client.close();
  });

  it('drains in-flight calls on shutdown and refuses new ones', async () => {
    const { server: running, client, echo } = await startEcho();
    const slow = callOnce(client, echo, { text: 'slow', delayMs: 200 });
    // The slow call is in its handler (in flight) before the shutdown starts.
    await vi.waitFor(() => expect(calls).toBe(1), { interval: 5 });
    const shutdown = running.shutdown(2_000);
    const refused = (await callOnce(client, echo, { text: 'late' }).catch(
      (e: unknown) => e,
    )) as SpoolError;
    expect(refused.retriable).toBe(true);
    await expect(slow).resolves.toEqual({ text: 'slow' });
    await expect(shutdown).resolves.toEqual({ drained: true });
    server = undefined;
    client.close();
  });

  it('reaches a server back after seconds down within a second, as Kafka reconnects', async () => {
    const port = await freePort();
    const client = createGrpcClient(EchoClient, `127.0.0.1:${port}`);
    const echo = (client as unknown as { echo: EchoMethod }).echo;
    // 6.5 s of refused connections: grpc's own backoff (1 s growing 1.6x) would next try about
    // 9.3 s in, 2 to 3.6 s after the server is back; ours tries at least once a second.
    const downUntilMs = Date.now() + 6_500;
    while (Date.now() < downUntilMs) {
      const refused = (await callOnce(client, echo, { text: 'x' }, { deadlineMs: 500 }).catch(
        (e: unknown) => e,
      )) as SpoolError;
      expect(refused.code).toBe('UNAVAILABLE');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await startEcho(undefined, port);
    const backMs = Date.now();
    await vi.waitFor(() => callOnce(client, echo, { text: 'back' }, { deadlineMs: 200 }), {
      timeout: 5_000,
      interval: 20,
    });
    expect(Date.now() - backMs).toBeLessThan(1_800);
    client.close();
  }, 15_000);

  it('backs off exponentially with jitter, capped', () => {
    for (let attempt = 1; attempt < 20; attempt++) {
      const delay = backoffMs(attempt, { backoffInitialMs: 10, backoffMaxMs: 1000 });
      const ceiling = Math.min(1000, 10 * 2 ** (attempt - 1));
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
    }
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
