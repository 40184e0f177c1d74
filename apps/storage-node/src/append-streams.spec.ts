// Proves the storage node's append streams: requests start in arrival order and are answered
// with their correlation ids as each finishes; a stream stops reading at appendStreamInFlightMax
// running requests and reads again once half are done; stop() lets started requests finish and
// be answered, runs nothing that arrives after it, and ends the stream; every request counts as
// an Append in the request metrics.
import { EventEmitter } from 'node:events';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { RequestMetrics, createLogger, createMetricsRegistry } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
} from '@spool/protocol';
import { describe, expect, it } from 'vitest';
import { appendStreamInFlightMax, appendStreams } from './append-streams';

class FakeCall extends EventEmitter {
  readonly written: AppendStreamResponse[] = [];
  paused = false;
  cancelled = false;
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  write(response: AppendStreamResponse): boolean {
    this.written.push(response);
    return true;
  }
  asCall(): ServerDuplexStream<AppendStreamRequest, AppendStreamResponse> {
    return this as unknown as ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>;
  }
}

function streamRequest(correlationId: number): AppendStreamRequest {
  return {
    partitions: [{ topic: 't', partition: 0, records: Buffer.alloc(0) }],
    acks: 1,
    timeoutMs: 1_000,
    correlationId,
  };
}

/** An append that finishes when the test says so, recording the order appends started in. */
function controlledAppend() {
  const started: number[] = [];
  const finishers = new Map<number, () => void>();
  const append = (request: AppendRequest): Promise<AppendResponse> => {
    const id = (request as AppendStreamRequest).correlationId;
    started.push(id);
    return new Promise((resolve) => finishers.set(id, () => resolve({ results: [] })));
  };
  return { append, started, finish: (id: number) => finishers.get(id)!() };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('AppendStreams', () => {
  it('answers by correlation id as requests finish, bounded, and stops cleanly', async () => {
    const registry = createMetricsRegistry('storage-node');
    const metrics = new RequestMetrics(registry);
    const { append, started, finish } = controlledAppend();
    const streams = appendStreams(append, metrics, createLogger({ service: 't', level: 'silent' }));
    const call = new FakeCall();
    let done = false;
    void streams.serve(call.asCall()).then(() => (done = true));
    expect(streams.openCount).toBe(1);

    for (let id = 1; id <= appendStreamInFlightMax; id++) call.emit('data', streamRequest(id));
    expect(started).toHaveLength(appendStreamInFlightMax);
    expect(started.slice(0, 3)).toEqual([1, 2, 3]);
    expect(call.paused).toBe(true);

    finish(2);
    finish(1);
    await flush();
    expect(call.written.map((response) => response.correlationId)).toEqual([2, 1]);
    expect(call.paused).toBe(true);
    for (let id = 3; id <= appendStreamInFlightMax / 2 + 1; id++) finish(id);
    await flush();
    expect(call.paused).toBe(false);

    // stop(): started requests finish and are answered; later ones never run.
    streams.stop();
    call.emit('data', streamRequest(999_999));
    expect(started).not.toContain(999_999);
    expect(done).toBe(false);
    for (let id = appendStreamInFlightMax / 2 + 2; id <= appendStreamInFlightMax; id++) finish(id);
    await flush();
    expect(done).toBe(true);
    expect(call.written).toHaveLength(appendStreamInFlightMax);
    expect(streams.openCount).toBe(0);
    const text = await registry.metrics();
    expect(text).toMatch(
      new RegExp(`spool_requests_total\\{[^}]*api="Append"[^}]*\\} ${appendStreamInFlightMax}`),
    );
  });

  it('ends a stream the gateway ended once its requests are answered', async () => {
    const { append, finish } = controlledAppend();
    const streams = appendStreams(
      append,
      new RequestMetrics(createMetricsRegistry('storage-node')),
      createLogger({ service: 't', level: 'silent' }),
    );
    const call = new FakeCall();
    let done = false;
    void streams.serve(call.asCall()).then(() => (done = true));
    call.emit('data', streamRequest(5));
    call.emit('end');
    await flush();
    expect(done).toBe(false);
    finish(5);
    await flush();
    expect(done).toBe(true);
    expect(call.written.map((response) => response.correlationId)).toEqual([5]);
  });
});
