// Proves which replicas the reassignment throttles hold: a reassignment's adding replica always
// (Spool's rule, no list needed), and, as Kafka, a replica out of the ISR whose partition the
// topic's list names on this broker ("*" or partition:broker; the leader side with the leader's
// id, the follower side with the follower's); an in-sync replica, a partition listed on another
// broker, an unlisted partition and an unknown partition are not held.
import { describe, expect, it } from 'vitest';
import {
  followerThrottlesReplica,
  leaderThrottlesReplica,
  listsReplica,
} from './throttled-replicas';

/** Topic "t": partition 0 replicas 1, 2, 3 with ISR 1, 2 (3 catching up), none being added. */
function metadataWith(configs: Record<string, string>, addingReplicas: number[] = []) {
  return {
    partition: (topic: string, partition: number) =>
      topic === 't' && partition === 0 ? ({ isr: [1, 2], addingReplicas } as never) : undefined,
    topicConfig: (topic: string, name: string) =>
      topic === 't' ? (configs[name] ?? '') : undefined,
  };
}

describe('listsReplica', () => {
  it('reads "*", the empty list and partition:broker pairs', () => {
    expect(listsReplica('*', 4, 9)).toBe(true);
    expect(listsReplica('', 0, 1)).toBe(false);
    expect(listsReplica(undefined, 0, 1)).toBe(false);
    expect(listsReplica('0:1,1:2', 1, 2)).toBe(true);
    expect(listsReplica('0:1,1:2', 1, 1)).toBe(false);
    expect(listsReplica('10:1', 0, 1)).toBe(false);
  });
});

describe('leader side', () => {
  it('holds an out-of-sync follower of a partition listed on this leader', () => {
    const metadata = metadataWith({ 'leader.replication.throttled.replicas': '0:1' });
    expect(leaderThrottlesReplica(metadata, 't', 0, 1, 3)).toBe(true);
    expect(leaderThrottlesReplica(metadata, 't', 0, 1, 2)).toBe(false); // in sync
    expect(leaderThrottlesReplica(metadata, 't', 0, 2, 3)).toBe(false); // listed on broker 1
    expect(leaderThrottlesReplica(metadata, 't', 1, 1, 3)).toBe(false); // unknown partition
    const all = metadataWith({ 'leader.replication.throttled.replicas': '*' });
    expect(leaderThrottlesReplica(all, 't', 0, 2, 3)).toBe(true);
  });

  it("holds a reassignment's adding replica without any list, and nothing else", () => {
    expect(leaderThrottlesReplica(metadataWith({}, [3]), 't', 0, 1, 3)).toBe(true);
    expect(leaderThrottlesReplica(metadataWith({}), 't', 0, 1, 3)).toBe(false);
  });
});

describe('follower side', () => {
  it('holds this out-of-sync follower of a partition listed on it', () => {
    const metadata = metadataWith({ 'follower.replication.throttled.replicas': '0:3' });
    expect(followerThrottlesReplica(metadata, 't', 0, 3)).toBe(true);
    expect(followerThrottlesReplica(metadata, 't', 0, 2)).toBe(false); // in sync
    const onTwo = metadataWith({ 'follower.replication.throttled.replicas': '0:2' });
    expect(followerThrottlesReplica(onTwo, 't', 0, 3)).toBe(false); // listed on broker 2
    // The leader side's list does not throttle the follower side.
    const leaderListed = metadataWith({ 'leader.replication.throttled.replicas': '*' });
    expect(followerThrottlesReplica(leaderListed, 't', 0, 3)).toBe(false);
  });

  it("holds a reassignment's adding replica without any list", () => {
    expect(followerThrottlesReplica(metadataWith({}, [3]), 't', 0, 3)).toBe(true);
    expect(followerThrottlesReplica(metadataWith({}), 't', 0, 3)).toBe(false);
  });
});
