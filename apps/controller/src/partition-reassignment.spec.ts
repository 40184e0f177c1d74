// Proves the reassignment rules on partition records (KIP-455): a move adds the new replicas
// beside the old ones, completes only once every target replica is in the ISR (moving the leader
// to the first live in-sync target replica when it is leaving), a move that only removes in-sync
// replicas completes at once, a new target restarts from the whole current set, a cancel reverts
// at once when the reverted ISR keeps its minimum and otherwise moves back, and every change
// bumps the epochs.
import { describe, expect, it } from 'vitest';
import type { PartitionRecord } from './metadata-records';
import {
  cancelReassignment,
  completeReassignment,
  reassignmentOf,
  startReassignment,
  targetReplicas,
} from './partition-reassignment';

const record: PartitionRecord = {
  replicas: [1, 2, 3],
  isr: [1, 2, 3],
  leader: 1,
  leaderEpoch: 5,
  partitionEpoch: 9,
};
const live = (...ids: number[]) => new Set(ids);
const all = live(1, 2, 3, 4, 5);

describe('partition reassignment', () => {
  it('starts a move: target first, then the leaving replicas; the ISR and leader stay', () => {
    const started = startReassignment(record, [2, 3, 4], all)!;
    expect(started).toEqual({
      replicas: [2, 3, 4, 1],
      isr: [1, 2, 3],
      leader: 1,
      leaderEpoch: 5,
      partitionEpoch: 10,
      addingReplicas: [4],
      removingReplicas: [1],
    });
    expect(targetReplicas(started)).toEqual([2, 3, 4]);
    expect(reassignmentOf(record)).toBeUndefined();
  });

  it('waits while a target replica is out of the ISR', () => {
    const started = startReassignment(record, [2, 3, 4], all)!;
    expect(completeReassignment(started, all)).toBeUndefined();
    // A removing replica falling out of the ISR does not complete it either.
    expect(completeReassignment({ ...started, isr: [2, 3] }, all)).toBeUndefined();
  });

  it('completes once every target replica is in the ISR, moving a leaving leader', () => {
    const started = startReassignment(record, [2, 3, 4], all)!;
    const caughtUp = { ...started, isr: [1, 2, 3, 4], partitionEpoch: 11 };
    expect(completeReassignment(caughtUp, all)).toEqual({
      replicas: [2, 3, 4],
      isr: [2, 3, 4],
      leader: 2,
      leaderEpoch: 6,
      partitionEpoch: 12,
    });
    // The new leader is the first live target replica in the ISR.
    expect(completeReassignment(caughtUp, live(1, 3, 4))?.leader).toBe(3);
    // No target replica can lead: the move waits rather than leave the partition offline.
    expect(completeReassignment(caughtUp, live(1))).toBeUndefined();
  });

  it('keeps a leader that stays, without a leader epoch bump', () => {
    const started = startReassignment(record, [1, 2, 4], all)!;
    const completed = completeReassignment({ ...started, isr: [1, 2, 3, 4] }, all)!;
    expect(completed).toEqual({
      replicas: [1, 2, 4],
      isr: [1, 2, 4],
      leader: 1,
      leaderEpoch: 5,
      partitionEpoch: 11,
    });
  });

  it('completes at once a move that only removes or reorders in-sync replicas', () => {
    expect(startReassignment(record, [3, 2], all)).toEqual({
      replicas: [3, 2],
      isr: [2, 3],
      leader: 3,
      leaderEpoch: 6,
      partitionEpoch: 10,
    });
    expect(startReassignment(record, [3, 1, 2], all)).toEqual({
      ...record,
      replicas: [3, 1, 2],
      partitionEpoch: 10,
    });
  });

  it('changes nothing for the current replicas or the target already in progress', () => {
    expect(startReassignment(record, [1, 2, 3], all)).toBeUndefined();
    const started = startReassignment(record, [2, 3, 4], all)!;
    expect(startReassignment(started, [2, 3, 4], all)).toBeUndefined();
  });

  it('restarts a moving partition from its whole current replica set', () => {
    const started = startReassignment(record, [2, 3, 4], all)!;
    expect(startReassignment(started, [3, 4, 5], all)).toEqual({
      replicas: [3, 4, 5, 2, 1],
      isr: [1, 2, 3],
      leader: 1,
      leaderEpoch: 5,
      partitionEpoch: 11,
      addingReplicas: [5],
      removingReplicas: [2, 1],
    });
  });

  it('cancels at once: the original set comes back and the added replicas leave', () => {
    const started = startReassignment(record, [2, 3, 4], all)!;
    const withNewInIsr = { ...started, isr: [1, 2, 3, 4] };
    expect(cancelReassignment(withNewInIsr, all, 2, 't-0')).toEqual({
      replicas: [2, 3, 1],
      isr: [1, 2, 3],
      leader: 1,
      leaderEpoch: 5,
      partitionEpoch: 11,
    });
  });

  it('moves the leader back into the original set when a cancel removes it', () => {
    const moved = {
      ...startReassignment(record, [2, 3, 4], all)!,
      isr: [4, 2, 3],
      leader: 4,
      leaderEpoch: 6,
    };
    expect(cancelReassignment(moved, all, 1, 't-0')).toMatchObject({
      replicas: [2, 3, 1],
      isr: [2, 3],
      leader: 2,
      leaderEpoch: 7,
    });
  });

  it('turns a cancel into a move back when the revert would shrink the ISR below its minimum', () => {
    // Old replicas 1 and 2 fell out of the ISR; the new replica 4 is in it.
    const moving = { ...startReassignment(record, [3, 4], all)!, isr: [3, 4], leader: 3 };
    expect(moving.replicas).toEqual([3, 4, 1, 2]);
    const cancelled = cancelReassignment(moving, all, 2, 't-0');
    expect(cancelled).toEqual({
      replicas: [3, 1, 2, 4],
      isr: [3, 4],
      leader: 3,
      leaderEpoch: 5,
      partitionEpoch: 11,
      addingReplicas: [],
      removingReplicas: [4],
    });
    expect(targetReplicas(cancelled)).toEqual([3, 1, 2]);
    // Once the originals are back in the ISR the move back completes by the usual rule.
    expect(completeReassignment({ ...cancelled, isr: [3, 4, 1, 2] }, all)).toMatchObject({
      replicas: [3, 1, 2],
      isr: [3, 1, 2],
    });
  });

  it('refuses to cancel a partition that is not moving', () => {
    expect(() => cancelReassignment(record, all, 1, 't-0')).toThrow(
      expect.objectContaining({ code: 'NO_REASSIGNMENT_IN_PROGRESS' }),
    );
  });
});
