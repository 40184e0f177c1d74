/**
 * Partition reassignment (Kafka's KIP-455, as KRaft's PartitionReassignmentReplicas,
 * PartitionReassignmentRevert and PartitionChangeBuilder.completeReassignmentIfNeeded), as pure
 * functions over a partition record: the controller decides, then writes the result with a
 * compare-and-set. The state lives in the record (addingReplicas, removingReplicas), so a
 * controller that takes over midway reads it and carries on.
 *
 *   1. Start: current replicas C, target T. The replica set becomes T followed by C − T (target
 *      first, so the preferred leader is the target's); adding = T − C, removing = C − T. The
 *      storage nodes host the added replicas as followers, which fetch from the leader and join
 *      the ISR through the leader's AlterPartition once caught up. A new target for a partition
 *      already moving starts from its whole current replica set, as KRaft does.
 *   2. Complete, once every target replica is in the ISR: the replica set becomes T, the ISR
 *      keeps its members in T (so it is all of T, at least min.insync.replicas, which every
 *      target must reach: the ISR never shrinks below it because of a move), and a leader
 *      outside T hands over to the first live target replica in the ISR. The storage nodes of
 *      the removed replicas stop them and delete their logs.
 *   3. Cancel: the original set O = replicas − adding comes back, the ISR keeps its members in O
 *      and a leader outside O hands over, at once, when that ISR has a live member and at least
 *      min(min.insync.replicas, the ISR's size now) members. Otherwise the cancel becomes a move
 *      back to O (the added replicas are then the removing ones) that completes by rule 2 once
 *      O is in sync, so a cancel never takes the ISR below its minimum either.
 *   4. Every change bumps the partition epoch; a leader change bumps the leader epoch.
 */
import { SpoolError } from '@spool/common';
import type { PartitionRecord } from './metadata-records';

export interface Reassignment {
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

/** The reassignment in progress, or undefined when the partition is not moving. */
export function reassignmentOf(record: PartitionRecord): Reassignment | undefined {
  const addingReplicas = record.addingReplicas ?? [];
  const removingReplicas = record.removingReplicas ?? [];
  if (addingReplicas.length === 0 && removingReplicas.length === 0) return undefined;
  return { addingReplicas, removingReplicas };
}

/** The replica set the partition is moving to (its replicas when it is not moving). */
export function targetReplicas(record: PartitionRecord): readonly number[] {
  const removing = record.removingReplicas ?? [];
  return record.replicas.filter((replica) => !removing.includes(replica));
}

/** The record with `next` applied and the epochs bumped (rule 4), reassignment fields as given. */
function withChange(
  record: PartitionRecord,
  next: {
    replicas: readonly number[];
    isr: readonly number[];
    leader: number;
    reassignment: Reassignment | undefined;
  },
): PartitionRecord {
  const changed: PartitionRecord = {
    replicas: [...next.replicas],
    isr: [...next.isr],
    leader: next.leader,
    leaderEpoch: next.leader === record.leader ? record.leaderEpoch : record.leaderEpoch + 1,
    partitionEpoch: record.partitionEpoch + 1,
  };
  if (next.reassignment === undefined) return changed;
  return {
    ...changed,
    addingReplicas: [...next.reassignment.addingReplicas],
    removingReplicas: [...next.reassignment.removingReplicas],
  };
}

/**
 * Rule 1 (and rule 2 at once when it already holds: a move that only removes in-sync replicas
 * or reorders them completes in the same write). Undefined when the partition already moves to
 * exactly `target` or already has it. `target` is validated by the caller (reassignment-commands).
 */
export function startReassignment(
  record: PartitionRecord,
  target: readonly number[],
  live: ReadonlySet<number>,
): PartitionRecord | undefined {
  const current = record.replicas;
  const addingReplicas = target.filter((replica) => !current.includes(replica));
  const removingReplicas = current.filter((replica) => !target.includes(replica));
  const inProgress = reassignmentOf(record);
  const sameOrder = (left: readonly number[], right: readonly number[]): boolean =>
    left.length === right.length && left.every((replica, index) => right[index] === replica);
  if (inProgress === undefined && sameOrder(current, target)) return undefined;
  if (inProgress !== undefined && sameOrder(targetReplicas(record), target)) return undefined;
  const started = withChange(record, {
    replicas: [...target, ...removingReplicas],
    isr: record.isr,
    leader: record.leader,
    reassignment:
      addingReplicas.length === 0 && removingReplicas.length === 0
        ? undefined
        : { addingReplicas, removingReplicas },
  });
  const completed = completeReassignment(started, live);
  // One write, one epoch step: the completion replaces the start rather than following it.
  return completed === undefined
    ? started
    : { ...completed, partitionEpoch: record.partitionEpoch + 1 };
}

/**
 * Rule 2: the completed record once every target replica is in the ISR and one of them can
 * lead; undefined while the move must wait (or when nothing moves).
 */
export function completeReassignment(
  record: PartitionRecord,
  live: ReadonlySet<number>,
): PartitionRecord | undefined {
  if (reassignmentOf(record) === undefined) return undefined;
  const target = targetReplicas(record);
  if (!target.every((replica) => record.isr.includes(replica))) return undefined;
  const leader = nextLeader(record, target, live);
  if (leader === undefined) return undefined;
  return withChange(record, {
    replicas: target,
    isr: record.isr.filter((replica) => target.includes(replica)),
    leader,
    reassignment: undefined,
  });
}

/**
 * Rule 3: the cancelled record. NO_REASSIGNMENT_IN_PROGRESS when the partition is not moving.
 * `minInsyncReplicas` is the topic's min.insync.replicas.
 */
export function cancelReassignment(
  record: PartitionRecord,
  live: ReadonlySet<number>,
  minInsyncReplicas: number,
  name: string,
): PartitionRecord {
  const reassignment = reassignmentOf(record);
  if (reassignment === undefined) {
    throw new SpoolError(
      'NO_REASSIGNMENT_IN_PROGRESS',
      `partition ${name} has no reassignment in progress to cancel`,
    );
  }
  const original = record.replicas.filter(
    (replica) => !reassignment.addingReplicas.includes(replica),
  );
  const isr = record.isr.filter((replica) => original.includes(replica));
  const leader = nextLeader({ ...record, isr }, original, live);
  if (leader !== undefined && isr.length >= Math.min(minInsyncReplicas, record.isr.length)) {
    return withChange(record, { replicas: original, isr, leader, reassignment: undefined });
  }
  // The revert would leave the ISR too small: move back to the original set instead.
  return withChange(record, {
    replicas: [...original, ...reassignment.addingReplicas],
    isr: record.isr,
    leader: record.leader,
    reassignment: { addingReplicas: [], removingReplicas: reassignment.addingReplicas },
  });
}

/**
 * The leader once the replica set is `replicas`: the current one if it stays, else the first
 * live member of `replicas` in the ISR; undefined when none can lead.
 */
function nextLeader(
  record: PartitionRecord,
  replicas: readonly number[],
  live: ReadonlySet<number>,
): number | undefined {
  if (replicas.includes(record.leader)) return record.leader;
  return replicas.find((replica) => record.isr.includes(replica) && live.has(replica));
}
