// Proves the reassignment throttle's token bucket: a second of the rate may be fetched at once,
// past it throttled partitions wait as long as the rate needs to pay the debt back, the bucket
// never holds more than one second, a rate of 0 never throttles, and a rate changed at run time
// (a dynamic broker config) keeps the debt, caps the bucket at the new rate, and can turn it off.
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

  it('changes its rate at run time, keeping the debt', () => {
    const throttle = new ReplicationThrottle(1_000, 0);
    throttle.record(1_500, 0);
    throttle.setRate(2_000, 0);
    expect(throttle.delayMs(0)).toBe(250);
    throttle.setRate(0, 0);
    expect(throttle.enabled).toBe(false);
    expect(throttle.delayMs(0)).toBe(0);
    throttle.setRate(100, 1_000);
    throttle.record(300, 1_000);
    expect(throttle.delayMs(1_000)).toBe(2_000);
  });
});
