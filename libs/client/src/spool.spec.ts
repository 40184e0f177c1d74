// Proves the one lifecycle verb, against the fake gateway: `close` on a producer flushes what it
// holds (a send made just before close included), on a consumer ends its Consume stream, on an
// admin closes it, and each has `disconnect` as an alias that waits for the same close;
// `spool.close()` closes every client the Spool made that is still open (none twice: one closed
// by hand has left the Spool's registry), and makes later calls, and new clients, fail
// CLIENT_CLOSED.
import { SpoolError } from '@spool/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Spool } from './spool';
import { FakeGateway, rejection } from './testing';

let gateway: FakeGateway | undefined;

afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

function failure(call: () => unknown): SpoolError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return error as SpoolError;
  }
  throw new Error('expected the call to throw');
}

describe('Spool.close', () => {
  it('closes every producer, consumer and admin it made, each once', async () => {
    gateway = await FakeGateway.start({ orders: 1 });
    const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
    // A record that lingers a minute: only the producer's close sends it now.
    const producer = spool.producer({ lingerMs: 60_000 });
    const sent = producer.send({ topic: 'orders', messages: [{ value: 'lingering' }] });
    const consumer = spool.consumer();
    consumer.assign([{ topic: 'orders', partition: 0, offset: 0n }]);
    const iterating = consumer.messages().next();
    await vi.waitFor(() => expect(gateway!.consumeStreams).toHaveLength(1));
    const admin = spool.admin();
    expect(await admin.listTopics()).toEqual(['orders']);
    const closedByHand = spool.producer();
    const closeByHand = vi.spyOn(closedByHand, 'close');
    await closedByHand.close();

    await spool.close();

    expect(await sent).toEqual([{ topic: 'orders', partition: 0, offset: 0n }]);
    // The consumer's iterator got the message the producer's close flushed, or ended.
    const next = await iterating;
    expect(next.done || next.value?.value?.toString() === 'lingering').toBe(true);
    await vi.waitFor(() => expect(gateway!.consumeStreams[0]!.ended).toBe(true));
    expect(closeByHand).toHaveBeenCalledTimes(1);
    expect(
      (await rejection(producer.send({ topic: 'orders', messages: [{ value: 'x' }] }))).code,
    ).toBe('CLIENT_CLOSED');
    expect((await rejection(admin.listTopics())).code).toBe('CLIENT_CLOSED');
    expect(failure(() => consumer.assign([])).code).toBe('CLIENT_CLOSED');
    expect(failure(() => spool.producer()).message).toBe(
      'cannot make a producer: this Spool was closed',
    );
  });

  it('keeps disconnect as an alias that waits for the same close', async () => {
    gateway = await FakeGateway.start({ orders: 1 });
    const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
    const producer = spool.producer({ lingerMs: 60_000 });
    // Sent and closed at once, the topic not yet described: close still delivers it, as Kafka's.
    const sent = producer.send({ topic: 'orders', messages: [{ value: 'a' }] });
    const closing = producer.close();
    expect(producer.close()).toBe(closing);
    expect(producer.disconnect()).toBe(closing);
    await producer.disconnect();
    // Both verbs returned only after the flush.
    expect(gateway.produceRequests).toHaveLength(1);
    expect((await sent)[0]!.offset).toBe(0n);

    const consumer = spool.consumer();
    const consumerClosing = consumer.disconnect();
    expect(consumer.close()).toBe(consumerClosing);
    await consumerClosing;
    const admin = spool.admin();
    await admin.disconnect();
    expect((await rejection(admin.listTopics())).code).toBe('CLIENT_CLOSED');
    await spool.disconnect();
    expect(failure(() => spool.admin()).code).toBe('CLIENT_CLOSED');
  });
});
