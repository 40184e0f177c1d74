// Proves PublishStream's flow control: at publishStreamInFlightMax unanswered requests the
// gateway stops reading the stream (pause) and reads again once one is answered (resume),
// answers in completion order with each request's sequence, answers a request without a body
// with its error and goes on, and ends only once every request is answered.
import { EventEmitter } from 'node:events';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type {
  PublishRequest,
  PublishResponse,
  PublishStreamRequest,
  PublishStreamResponse,
} from '@spool/protocol';
import { describe, expect, it } from 'vitest';
import type { RecordPublisher } from './record-publisher';
import { recordHandlers } from './record-service';
import type { RecordSubscriptions } from './record-subscriptions';

/** A server stream that records what the handler does to it. */
class FakeStream extends EventEmitter {
  paused = false;
  pauses = 0;
  cancelled = false;
  readonly written: PublishStreamResponse[] = [];
  pause(): this {
    this.paused = true;
    this.pauses += 1;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  write(answer: PublishStreamResponse): boolean {
    this.written.push(answer);
    return true;
  }
  /** A client message, as grpc-js delivers it: only while the stream is not paused. */
  send(sequence: number, request: PublishRequest | undefined): void {
    expect(this.paused, `request ${sequence} read while paused`).toBe(false);
    this.emit('data', { sequence: BigInt(sequence), request } as PublishStreamRequest);
  }
}

/** A publisher whose calls stay unanswered until the test answers them. */
class HeldPublisher {
  readonly pending = new Map<string, (response: PublishResponse) => void>();
  publish(request: PublishRequest): Promise<PublishResponse> {
    return new Promise((resolve) => this.pending.set(request.topic, resolve));
  }
  answer(topic: string): void {
    this.pending.get(topic)!({ results: [] } as unknown as PublishResponse);
    this.pending.delete(topic);
  }
}

const request = (topic: string) => ({ topic, records: [], acks: 0 }) as unknown as PublishRequest;

describe('PublishStream', () => {
  it('stops reading at its in-flight bound and reads again once a request is answered', async () => {
    const publisher = new HeldPublisher();
    const handlers = recordHandlers({
      publisher: publisher as unknown as RecordPublisher,
      subscriptions: {} as RecordSubscriptions,
      publishStreamInFlightMax: 3,
    });
    const stream = new FakeStream();
    let done = false;
    void (
      handlers['publishStream'] as (
        call: ServerDuplexStream<PublishStreamRequest, PublishStreamResponse>,
      ) => Promise<void>
    )(stream as unknown as ServerDuplexStream<PublishStreamRequest, PublishStreamResponse>).then(
      () => (done = true),
    );

    stream.send(1, request('t1'));
    stream.send(2, request('t2'));
    expect(stream.paused).toBe(false);
    stream.send(3, request('t3'));
    expect(stream.paused).toBe(true);

    publisher.answer('t2');
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.written.map((answer) => answer.sequence)).toEqual([2n]);
    expect(stream.paused).toBe(false);
    // A request without a body is answered with its error; the stream goes on.
    stream.send(4, undefined);
    // t1, t3 and 4 in flight: the bound again, until 4 is answered.
    expect(stream.paused).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.paused).toBe(false);
    expect(stream.written.at(-1)).toMatchObject({
      sequence: 4n,
      error: { code: 'INVALID_REQUEST', message: 'PublishStreamRequest 4 has no request' },
    });

    stream.emit('end');
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    publisher.answer('t3');
    publisher.answer('t1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.written.map((answer) => answer.sequence)).toEqual([2n, 4n, 3n, 1n]);
    expect(done).toBe(true);
    expect(stream.pauses).toBe(2);
  });
});
