// Proves how a ConsumeStream ends when the consumer closes it (a seek, pause or resume), against
// a fake gateway (a real grpc-js server on loopback): it half-closes the stream and the gateway
// ends it, with no RST_STREAM; a gateway that keeps the stream open past the grace period gets it
// cancelled.
import { createLogger } from '@spool/common';
import { afterEach, expect, it, vi } from 'vitest';
import { ConsumeStream, type ConsumeStreamEvent } from './consume-stream';
import { GatewayConnection } from './gateway-connection';
import { FakeGateway } from './testing';

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openStream(closeGraceMs: number): Promise<{
  gateway: FakeGateway;
  stream: ConsumeStream;
  events: ConsumeStreamEvent[];
}> {
  const gateway = await FakeGateway.start({ events: 1 });
  cleanups.push(() => gateway.stop());
  gateway.appendBatch('events', 0, [{ key: null, value: Buffer.from('v0'), timestampMs: 1n }]);
  const connection = new GatewayConnection(
    [gateway.address],
    'test',
    createLogger({ service: 'test', level: 'silent' }),
  );
  cleanups.push(() => connection.close());
  const events: ConsumeStreamEvent[] = [];
  const stream = new ConsumeStream(
    connection,
    1,
    [{ topic: 'events', partition: 0, fetchOffset: 0n, partitionMaxBytes: 65_536 }],
    65_536,
    (event) => events.push(event),
    closeGraceMs,
  );
  await vi.waitFor(() => expect(events.map((event) => event.kind)).toEqual(['response']));
  return { gateway, stream, events };
}

it('half-closes on close, and the gateway ends the stream', async () => {
  const { gateway, stream, events } = await openStream(60_000);
  stream.close();
  await vi.waitFor(() => expect(gateway.consumeStreams[0]?.endedBy).toBe('client-end'));
  // What the stream does after its close is no longer the consumer's business.
  expect(events.map((event) => event.kind)).toEqual(['response']);
});

it('cancels a closed stream that the gateway keeps open past the grace period', async () => {
  const { gateway, stream } = await openStream(300);
  gateway.ignoreConsumeEnd = true;
  const closedAtMs = performance.now();
  stream.close();
  await vi.waitFor(() => expect(gateway.consumeStreams[0]?.endedBy).toBe('cancelled'), {
    timeout: 5_000,
  });
  expect(performance.now() - closedAtMs).toBeGreaterThanOrEqual(250);
});
