// Proves the election rules on partition records: clean elections pick the first live ISR
// member in replica order, the last ISR member stays in the ISR when it leaves, a partition
// with no eligible replica goes offline unless unclean election is allowed, it comes back with
// the returning ISR member, preferred leaders are restored, and every change bumps the epochs.
import { describe, expect, it } from 'vitest';
import { electOffline, electPreferred, removeBroker } from './partition-elections';

const record = {
  replicas: [1, 2, 3],
  isr: [1, 2, 3],
  leader: 1,
  leaderEpoch: 5,
  partitionEpoch: 9,
};
const live = (...ids: number[]) => new Set(ids);

describe('partition elections', () => {
  it('moves leadership to the next ISR member in replica order', () => {
    expect(removeBroker(record, 1, live(1, 2, 3), false)).toEqual({
      record: { replicas: [1, 2, 3], isr: [2, 3], leader: 2, leaderEpoch: 6, partitionEpoch: 10 },
      election: 'clean',
    });
  });

  it('shrinks the ISR without an election when a follower leaves', () => {
    expect(removeBroker(record, 3, live(1, 2), false)).toEqual({
      record: { ...record, isr: [1, 2], partitionEpoch: 10 },
      election: 'none',
    });
    expect(removeBroker(record, 4, live(1, 2, 3), false)).toBeUndefined();
  });

  it('goes offline keeping the last ISR member, then returns with it', () => {
    const lonely = { ...record, isr: [1] };
    const offline = removeBroker(lonely, 1, live(2, 3), false)!;
    expect(offline.record).toMatchObject({ leader: -1, isr: [1], leaderEpoch: 6 });
    expect(offline.election).toBe('none');
    expect(electOffline(offline.record, live(2, 3), false)).toBeUndefined();
    expect(electOffline(offline.record, live(1, 2, 3), false)?.record).toMatchObject({
      leader: 1,
      leaderEpoch: 7,
    });
  });

  it('elects an out-of-sync replica only when unclean election is allowed', () => {
    const lonely = { ...record, isr: [1] };
    const unclean = removeBroker(lonely, 1, live(2, 3), true)!;
    expect(unclean.election).toBe('unclean');
    expect(unclean.record).toMatchObject({ leader: 2, isr: [2] });
  });

  it('restores the preferred leader once it is back in the ISR', () => {
    const moved = { ...record, leader: 2, isr: [2, 3] };
    expect(electPreferred(moved, live(1, 2, 3))).toBeUndefined();
    expect(electPreferred({ ...moved, isr: [2, 3, 1] }, live(1, 2, 3))?.record).toMatchObject({
      leader: 1,
      leaderEpoch: 6,
    });
  });
});
