// Proves the stream follower keeps a leader-only stream alive with fake clients: it hands every
// message on, follows a NOT_CONTROLLER hint to the named address, moves to the next address when
// a stream ends without one, reopens after each failure, and stops with no stream left open; and
// that an announced leader (a new controller's BeginControllerEpoch) takes the stream off a
// silent old leader at once, with no backoff, even one that failed from this channel before.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SpoolError } from './errors';
import { LeaderChannel } from './leader-channel';
import { createLogger } from './logger';
import { StreamFollower, type FollowedStream } from './stream-follower';

class FakeStream extends EventEmitter implements FollowedStream<string> {
  cancelled = false;
  cancel(): void {
    this.cancelled = true;
    this.emit('error', new SpoolError('CANCELLED', 'cancelled by the client'));
  }
}

class FakeClient {
  readonly streams: FakeStream[] = [];
  constructor(readonly address: string) {}
  watch(): FakeStream {
    const stream = new FakeStream();
    this.streams.push(stream);
    return stream;
  }
  close(): void {}
}

/** A channel over a:1 and b:1 whose clients are kept by address. */
function fakeChannel() {
  const clients = new Map<string, FakeClient>();
  const channel = new LeaderChannel(
    ['a:1', 'b:1'],
    (address) => {
      const client = new FakeClient(address);
      clients.set(address, client);
      return client;
    },
    { notLeaderCode: 'NOT_CONTROLLER', leaderDetail: 'activeController' },
  );
  return { clients, channel };
}

describe('StreamFollower', () => {
  it('follows the leader hint, reconnects after failures and stops cleanly', async () => {
    const { clients, channel } = fakeChannel();
    const received: string[] = [];
    const follower = new StreamFollower({
      channel,
      open: (client) => client.watch(),
      onMessage: (message: string) => received.push(message),
      logger: createLogger({ service: 'test', level: 'silent' }),
      backoffMaxMs: 20,
    });
    const running = follower.start();

    // 1. The first address is a standby that names the active one, c:1.
    await expect.poll(() => clients.get('a:1')?.streams.length === 1).toBe(true);
    clients.get('a:1')!.streams[0]!.emit(
      'error',
      new SpoolError('NOT_CONTROLLER', 'standby', {
        retriable: true,
        details: { activeController: 'c:1' },
      }),
    );
    await expect.poll(() => clients.get('c:1')?.streams.length === 1).toBe(true);
    const active = clients.get('c:1')!;
    active.streams[0]!.emit('data', 'snapshot');
    active.streams[0]!.emit('data', 'delta');
    expect(received).toEqual(['snapshot', 'delta']);

    // 2. A stream that ends without a hint moves on to the next address and is reopened there.
    active.streams[0]!.emit('end');
    await expect.poll(() => clients.get('a:1')!.streams.length === 2).toBe(true);
    clients.get('a:1')!.streams[1]!.emit('data', 'resumed');
    expect(received).toEqual(['snapshot', 'delta', 'resumed']);

    // 3. stop() cancels the open stream and the loop ends without reopening it.
    follower.stop();
    await running;
    expect(clients.get('a:1')!.streams[1]!.cancelled).toBe(true);
    expect(clients.get('a:1')!.streams).toHaveLength(2);
    channel.close();
  });

  it('moves the stream to an announced leader at once, off a silent one', async () => {
    const { clients, channel } = fakeChannel();
    const follower = new StreamFollower({
      channel,
      open: (client) => client.watch(),
      onMessage: () => undefined,
      logger: createLogger({ service: 'test', level: 'silent' }),
      // Long: a reconnect through the backoff would not come within the poll below.
      backoffMaxMs: 60_000,
    });
    const running = follower.start();
    await expect.poll(() => clients.get('a:1')?.streams.length === 1).toBe(true);
    clients.get('a:1')!.streams[0]!.emit('data', 'snapshot');
    // A call found a:1 unreachable: a hint naming it is not followed for a while (the channel
    // moved on to b:1), but an announcement from a:1 is.
    channel.follow(
      new SpoolError('UNAVAILABLE', 'refused', {
        retriable: true,
        cause: Object.assign(new Error('14 UNAVAILABLE'), { code: 14 }),
      }),
    );
    expect(channel.leaderAddress).toBe('b:1');
    const hintToA = new SpoolError('NOT_CONTROLLER', 'a standby', {
      retriable: true,
      details: { activeController: 'a:1' },
    });
    expect(channel.follow(hintToA)).toBe(false);
    const failedClient = clients.get('a:1');
    expect(channel.leaderAnnounced('a:1')).toBe(true);
    expect(channel.leaderAddress).toBe('a:1');
    // Its client, which failed to connect (grpc would wait out a reconnect backoff), is new.
    channel.client();
    expect(clients.get('a:1')).not.toBe(failedClient);
    // Then b:1 announces itself: the stream on a:1 is silent, not failed, and only the
    // announcement moves it.
    expect(channel.leaderAnnounced('b:1')).toBe(true);
    follower.moveToLeader();
    await expect
      .poll(() => clients.get('b:1')?.streams.length === 1, { timeout: 1_000 })
      .toBe(true);
    expect(failedClient!.streams[0]!.cancelled).toBe(true);
    // Announced again where it already is: nothing moves.
    expect(channel.leaderAnnounced('b:1')).toBe(false);
    follower.moveToLeader();
    expect(clients.get('b:1')!.streams).toHaveLength(1);
    expect(clients.get('b:1')!.streams[0]!.cancelled).toBe(false);
    follower.stop();
    await running;
    channel.close();
  });
});
