import { partitionList, partitionSetOf, type PartitionSet } from './partition-set';
import type { MemberRecord } from './group-records';

/** The epoch a static member is parked at after leaving with -2, until it returns or expires. */
export const staticMemberAwayEpoch = -2;
export const leaveGroupEpoch = -1;
export const joinGroupEpoch = 0;

/** Kafka consumer's default max.poll.interval.ms, used when a joining member sends none. */
export const rebalanceTimeoutMsDefault = 300_000;

/**
 * A member as the group keeps it: the persisted fields of its MemberRecord, plus the two
 * deadlines that only live in memory (a coordinator that takes over starts them afresh).
 */
export interface GroupMember {
  memberId: string;
  instanceId: string;
  memberEpoch: number;
  previousMemberEpoch: number;
  subscribedTopics: string[];
  subscribedRegex: string;
  rebalanceTimeoutMs: number;
  assigned: PartitionSet;
  pendingRevocation: PartitionSet;
  /** The member is removed once nowMs reaches this without a heartbeat. */
  sessionDeadlineMs: number;
  /** Set while revoking: the member is fenced if it still holds revoked partitions at this time. */
  revocationDeadlineMs: number | undefined;
}

export function memberRecordOf(member: GroupMember): MemberRecord {
  return {
    memberId: member.memberId,
    instanceId: member.instanceId,
    memberEpoch: member.memberEpoch,
    previousMemberEpoch: member.previousMemberEpoch,
    subscribedTopics: [...member.subscribedTopics],
    subscribedRegex: member.subscribedRegex,
    rebalanceTimeoutMs: member.rebalanceTimeoutMs,
    assigned: partitionList(member.assigned),
    pendingRevocation: partitionList(member.pendingRevocation),
  };
}

/** The persisted part of a member from its record; the caller sets the deadlines. */
export function memberFieldsOf(
  record: MemberRecord,
): Omit<GroupMember, 'sessionDeadlineMs' | 'revocationDeadlineMs'> {
  return {
    memberId: record.memberId,
    instanceId: record.instanceId,
    memberEpoch: record.memberEpoch,
    previousMemberEpoch: record.previousMemberEpoch,
    subscribedTopics: [...record.subscribedTopics],
    subscribedRegex: record.subscribedRegex,
    rebalanceTimeoutMs: record.rebalanceTimeoutMs,
    assigned: partitionSetOf(record.assigned),
    pendingRevocation: partitionSetOf(record.pendingRevocation),
  };
}
