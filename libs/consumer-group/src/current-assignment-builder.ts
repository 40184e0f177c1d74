import {
  addPartition,
  intersectPartitions,
  partitionSetsEqual,
  partitionsIntersect,
  type PartitionSet,
  subtractPartitions,
} from './partition-set';

/**
 * One reconciliation step of a member towards its target assignment (Kafka's
 * CurrentAssignmentBuilder), taken when the member heartbeats:
 *
 * 1. The member still reports owning partitions it was asked to revoke: nothing changes; it is
 *    still revoking (it has until its rebalance timeout).
 * 2. It holds exactly its target at the target's epoch: nothing changes.
 * 3. Otherwise the next step is computed from what it is assigned:
 *    a. partitions it holds that the target no longer gives it are revoked first: its
 *       assignment shrinks to what it keeps, its epoch stays, and nothing new is given until
 *       the member acknowledges (by heartbeating without them);
 *    b. with nothing (left) to revoke, it moves to the target assignment epoch and is given
 *       every partition of its target that is free, that is, no other member holds it as
 *       assigned or pending revocation; a partition still held elsewhere ("unreleased") is
 *       given on a later heartbeat, once its holder has acknowledged revoking it.
 *
 * As in Kafka, the epoch moves as soon as the member has nothing to revoke, not only once it
 * holds its whole target: a member that just joined (epoch 0) must leave epoch 0 at once, or its
 * next heartbeat would read as a rejoin. So no partition is ever assigned to two members, and a
 * member holding exactly its target is at the target epoch. The group is RECONCILING while some
 * member is not at the target epoch or does not hold exactly its target.
 */
export interface ReconciledMember {
  memberEpoch: number;
  previousMemberEpoch: number;
  assigned: PartitionSet;
  pendingRevocation: PartitionSet;
}

export interface ReconcileInput {
  member: ReconciledMember;
  target: PartitionSet;
  targetAssignmentEpoch: number;
  /** What the member reports owning in this heartbeat. */
  ownedPartitions: PartitionSet;
  /** True when no member other than this one holds the partition (assigned or revoking). */
  isFree(topic: string, partition: number): boolean;
}

export function reconcile(input: ReconcileInput): ReconciledMember {
  const { member, target, targetAssignmentEpoch } = input;
  // 1. Still revoking.
  if (
    member.pendingRevocation.size > 0 &&
    partitionsIntersect(input.ownedPartitions, member.pendingRevocation)
  ) {
    return member;
  }
  // 2. Converged.
  if (
    member.pendingRevocation.size === 0 &&
    member.memberEpoch === targetAssignmentEpoch &&
    partitionSetsEqual(member.assigned, target)
  ) {
    return member;
  }
  // 3a. Revoke what the target no longer gives.
  const kept = intersectPartitions(member.assigned, target);
  const revoked = subtractPartitions(member.assigned, target);
  if (revoked.size > 0) {
    return {
      memberEpoch: member.memberEpoch,
      previousMemberEpoch: member.previousMemberEpoch,
      assigned: kept,
      pendingRevocation: revoked,
    };
  }
  // 3b. Move to the target epoch and take what is free.
  const assigned = kept;
  for (const [topic, partitions] of subtractPartitions(target, kept)) {
    for (const partition of partitions) {
      if (input.isFree(topic, partition)) addPartition(assigned, topic, partition);
    }
  }
  const memberEpoch = targetAssignmentEpoch;
  return {
    memberEpoch,
    previousMemberEpoch:
      memberEpoch === member.memberEpoch ? member.previousMemberEpoch : member.memberEpoch,
    assigned,
    pendingRevocation: new Map(),
  };
}
