// Proves the lease's suspension (etcd-lease.ts, step 5) on a simulated clock: a lease whose
// renewals go unanswered past its TTL is suspended, not lost; a renewal answered with TTL > 0
// (what a new etcd leader gives every lease it takes over) resumes it, with how long it was
// suspended; an answer of TTL 0 loses it at once, and so does staying suspended for
// suspendedTtlsMax TTLs; an answer on a stream dropped since proves nothing. etcd's LeaseKeepAlive stream is stood in for by an event emitter that
// records each keepalive and answers only when the test says so.
import { EventEmitter } from 'node:events';
import type { LeaseClient } from 'etcd3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EtcdLease, suspendedTtlsMax } from './etcd-lease';

class KeepAliveStream extends EventEmitter {
  readonly written: string[] = [];
  cancelled = false;

  write(request: { ID: string }): void {
    this.written.push(request.ID);
  }

  cancel(): void {
    this.cancelled = true;
  }

  /** etcd's answer to the last keepalive. */
  answer(ttlSeconds: number): void {
    this.emit('data', { TTL: String(ttlSeconds), header: { member_id: '7' } });
  }
}

const ttlSeconds = 2;
let streams: KeepAliveStream[];
let lease: EtcdLease;
let events: string[];

function latestStream(): KeepAliveStream {
  return streams.at(-1)!;
}

beforeEach(async () => {
  vi.useFakeTimers();
  streams = [];
  events = [];
  const leaseClient = {
    leaseKeepAlive: () => {
      const stream = new KeepAliveStream();
      streams.push(stream);
      return Promise.resolve(stream);
    },
  } as unknown as LeaseClient;
  lease = new EtcdLease(
    leaseClient,
    42n,
    ttlSeconds,
    Date.now(),
    () => Promise.resolve(),
    () => events.push('ended'),
  );
  lease.onLost(() => events.push('lost'));
  lease.onSuspended(() => events.push('suspended'));
  lease.onResumed((suspendedMs) => events.push(`resumed after ${suspendedMs} ms`));
  await vi.advanceTimersByTimeAsync(0);
  expect(latestStream().written).toEqual(['42']);
});

afterEach(() => {
  lease.end();
  vi.useRealTimers();
});

describe('EtcdLease', () => {
  it('is suspended, not lost, when renewals go unanswered past its TTL, and resumes on a renewal', async () => {
    latestStream().answer(ttlSeconds);
    // Nothing answers from now on: the local expiry is the last renewal's send time + TTL.
    await vi.advanceTimersByTimeAsync(ttlSeconds * 1000 - 1);
    expect(events).toEqual([]);
    expect(lease.suspended).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(events).toEqual(['suspended']);
    expect(lease).toMatchObject({ suspended: true, alive: true });
    // Keepalives go on, on reopened streams; a new etcd leader renews the lease.
    await vi.advanceTimersByTimeAsync(1_500);
    expect(streams.length).toBeGreaterThan(1);
    latestStream().answer(ttlSeconds);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(['suspended', expect.stringMatching(/^resumed after 1[45]\d\d ms$/)]);
    expect(lease).toMatchObject({ suspended: false, alive: true });
    // Renewed as before: answered keepalives keep it out of suspension.
    for (let tick = 0; tick < 30; tick++) {
      await vi.advanceTimersByTimeAsync(333);
      latestStream().answer(ttlSeconds);
    }
    expect(events).toHaveLength(2);
  });

  it('is lost at once when etcd answers a suspended lease with TTL 0', async () => {
    await vi.advanceTimersByTimeAsync(ttlSeconds * 1000);
    expect(events).toEqual(['suspended']);
    await vi.advanceTimersByTimeAsync(500);
    latestStream().answer(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(['suspended', 'ended', 'lost']);
    expect(lease.alive).toBe(false);
  });

  it(`is lost after ${suspendedTtlsMax} TTLs suspended`, async () => {
    await vi.advanceTimersByTimeAsync(ttlSeconds * 1000);
    expect(events).toEqual(['suspended']);
    await vi.advanceTimersByTimeAsync(suspendedTtlsMax * ttlSeconds * 1000 - 1);
    expect(lease.alive).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(events).toEqual(['suspended', 'ended', 'lost']);
    expect(lease.alive).toBe(false);
  });

  it('takes no answer from a stream it dropped for the current keepalive', async () => {
    await vi.advanceTimersByTimeAsync(ttlSeconds * 1000);
    expect(events).toEqual(['suspended']);
    // The first stream was dropped (its keepalive unanswered for two intervals) and another
    // opened; an answer the first one still delivers is not the new stream's keepalive's.
    expect(streams.length).toBeGreaterThan(1);
    streams[0]!.answer(ttlSeconds);
    await vi.advanceTimersByTimeAsync(0);
    expect(lease.suspended).toBe(true);
    latestStream().answer(ttlSeconds);
    await vi.advanceTimersByTimeAsync(0);
    expect(lease.suspended).toBe(false);
  });
});
