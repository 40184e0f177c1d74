// Proves the reassignment throttle's token bucket: a second of the rate may be fetched at once,
// past it throttled partitions wait as long as the rate needs to pay the debt back, the bucket
// never holds more than one second, and a rate of 0 never throttles.
import { describe, expect, it } from 'vitest';
import { ReplicationThrottle } from './replication-throttle';

describe('ReplicationThrottle', () => {
  it('lets one second of the rate through, then delays by the debt', () => {
    const throttle = new ReplicationThrottle(1_000, 0);
    throttle.record(1_000, 0);
    expect(throttle.delayMs(0)).toBe(0);
    throttle.record(500, 0);
    expect(throttle.delayMs(0)).toBe(500);
    expect(throttle.delayMs(250)).toBe(250);
    expect(throttle.delayMs(500)).toBe(0);
  });

  it('holds at most one second of unused rate', () => {
    const throttle = new ReplicationThrottle(1_000, 0);
    throttle.record(3_000, 60_000);
    expect(throttle.delayMs(60_000)).toBe(2_000);
  });

  it('never throttles at rate 0', () => {
    const throttle = new ReplicationThrottle(0, 0);
    throttle.record(1e12, 0);
    expect(throttle.enabled).toBe(false);
    expect(throttle.delayMs(0)).toBe(0);
  });
});
