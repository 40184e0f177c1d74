// Proves the gateway's append stream against a real gRPC server on loopback: answers find their
// requests by correlation id in whatever order the leader finishes them, all on one stream; a
// request past its deadline fails REQUEST_TIMED_OUT and its late answer is dropped; a leader
// that ends the stream fails what waits as SHUTTING_DOWN, and one whose stream breaks as
// NETWORK_EXCEPTION, both retriable, and the next append opens a new stream.
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { GrpcServer, SpoolError, createGrpcClient, createLogger } from '@spool/common';
import {
  StorageServiceClient,
  StorageServiceService,
  type AppendRequest,
  type AppendStreamRequest,
  type AppendStreamResponse,
} from '@spool/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { AppendPipeline } from './append-pipeline';

const logger = createLogger({ service: 'test', level: 'silent' });

/** What the fake leader does with each request, by its topic. */
type Behaviour = (
  request: AppendStreamRequest,
  call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>,
) => void;

const servers: GrpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.shutdown(50);
});

async function leader(behaviour: Behaviour): Promise<{ port: number; streams: () => number }> {
  const server = new GrpcServer(logger, { maxMessageBytes: 1 << 22, descriptorSetPaths: [] });
  let streams = 0;
  server.addService(StorageServiceService, {
    append: async () => ({ results: [] }),
    listOffsets: async () => ({ results: [] }),
    deleteRecords: async () => ({ results: [] }),
    beginControllerEpoch: async () => ({ brokerId: 0, brokerEpoch: -1n, followed: false }),
    appendStream: (call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>) =>
      new Promise<void>((resolve) => {
        streams += 1;
        call.on('data', (request: AppendStreamRequest) => behaviour(request, call));
        call.on('end', () => resolve());
        call.on('cancelled', () => resolve());
      }),
  });
  servers.push(server);
  return { port: await server.listen('127.0.0.1', 0), streams: () => streams };
}

function request(topic: string): AppendRequest {
  return {
    partitions: [{ topic, partition: 0, records: Buffer.from(topic) }],
    acks: 1,
    timeoutMs: 1,
  };
}

function answer(
  call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>,
  request: AppendStreamRequest,
  baseOffset: bigint,
): void {
  call.write({
    correlationId: request.correlationId,
    results: [
      {
        topic: request.partitions[0]!.topic,
        partition: 0,
        error: undefined,
        baseOffset,
        lastOffset: baseOffset,
        logAppendTimeMs: -1n,
        logStartOffset: 0n,
      },
    ],
  });
}

describe('AppendPipeline', () => {
  it('matches answers to requests by correlation id, all on one stream', async () => {
    // "slow" is answered after "fast", which was sent after it.
    let held: (() => void) | undefined;
    const { port, streams } = await leader((received, call) => {
      if (received.partitions[0]!.topic === 'slow') held = () => answer(call, received, 1n);
      else {
        answer(call, received, 2n);
        held?.();
      }
    });
    const client = createGrpcClient(StorageServiceClient, `127.0.0.1:${port}`);
    const pipeline = new AppendPipeline(client, 'leader under test');
    const slow = pipeline.append(request('slow'), 5_000);
    const fast = pipeline.append(request('fast'), 5_000);
    expect((await fast).results[0]!.baseOffset).toBe(2n);
    expect((await slow).results[0]!.baseOffset).toBe(1n);
    for (let index = 0; index < 20; index++) {
      expect((await pipeline.append(request(`t${index}`), 5_000)).results[0]!.topic).toBe(
        `t${index}`,
      );
    }
    expect(streams()).toBe(1);
    expect(pipeline.waitingCount).toBe(0);
    pipeline.close();
    client.close();
  });

  it('times a request out alone and drops its late answer', async () => {
    let lateAnswerSent!: () => void;
    const lateAnswered = new Promise<void>((resolve) => (lateAnswerSent = resolve));
    const { port } = await leader((received, call) => {
      const late = received.partitions[0]!.topic === 'late';
      setTimeout(
        () => {
          // A late answer that reached the next request would show as its offset, 99.
          answer(call, received, late ? 99n : 7n);
          if (late) lateAnswerSent();
        },
        late ? 300 : 0,
      );
    });
    const client = createGrpcClient(StorageServiceClient, `127.0.0.1:${port}`);
    const pipeline = new AppendPipeline(client, 'leader under test');
    const late = pipeline.append(request('late'), 100);
    await expect(late).rejects.toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
    // The late answer is on the stream ahead of the next one: the pipeline must drop it.
    await lateAnswered;
    expect((await pipeline.append(request('on-time'), 1_000)).results[0]!.baseOffset).toBe(7n);
    pipeline.close();
    client.close();
  });

  it('fails what waits when the leader ends or breaks the stream, then opens a new one', async () => {
    const { port, streams } = await leader((received, call) => {
      const topic = received.partitions[0]!.topic;
      if (topic === 'end') call.end();
      else if (topic === 'break') call.emit('error', { code: 13, details: 'broken on purpose' });
      else answer(call, received, 3n);
    });
    const client = createGrpcClient(StorageServiceClient, `127.0.0.1:${port}`);
    const pipeline = new AppendPipeline(client, 'leader under test');
    const ended = await pipeline.append(request('end'), 5_000).catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(SpoolError);
    expect(ended).toMatchObject({ code: 'SHUTTING_DOWN', retriable: true });
    expect((await pipeline.append(request('ok'), 5_000)).results[0]!.baseOffset).toBe(3n);
    const broken = await pipeline.append(request('break'), 5_000).catch((error: unknown) => error);
    expect(broken).toMatchObject({ code: 'NETWORK_EXCEPTION', retriable: true });
    expect((await pipeline.append(request('ok'), 5_000)).results[0]!.baseOffset).toBe(3n);
    expect(streams()).toBe(3);
    pipeline.close();
    await expect(pipeline.append(request('ok'), 5_000)).rejects.toMatchObject({
      code: 'SHUTTING_DOWN',
    });
    client.close();
  });
});
