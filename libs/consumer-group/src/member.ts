import { partitionList, partitionSetOf, type PartitionSet } from './partition-set';
import type { MemberRecord, MemberType } from './group-records';

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
  /** Shown by DescribeGroup; not part of any decision of the group. */
  metadata: MemberMetadata;
  /** The member is removed once nowMs reaches this without a heartbeat. */
  sessionDeadlineMs: number;
  /** Set while revoking: the member is fenced if it still holds revoked partitions at this time. */
  revocationDeadlineMs: number | undefined;
}

/** Who a member is, as its heartbeats say: shown by DescribeGroup, never used to assign. */
export interface MemberMetadata {
  rackId: string;
  clientId: string;
  clientHost: string;
  memberType: MemberType;
}

export const memberMetadataDefault: Readonly<MemberMetadata> = {
  rackId: '',
  clientId: '',
  clientHost: '',
  memberType: 'consumer',
};

export function sameMemberMetadata(left: MemberMetadata, right: MemberMetadata): boolean {
  return (
    left.rackId === right.rackId &&
    left.clientId === right.clientId &&
    left.clientHost === right.clientHost &&
    left.memberType === right.memberType
  );
}

/** The metadata fields of a member record: only those that differ from the defaults. */
export function metadataRecordOf(metadata: MemberMetadata): Partial<MemberRecord> {
  return {
    ...(metadata.rackId === '' ? {} : { rackId: metadata.rackId }),
    ...(metadata.clientId === '' ? {} : { clientId: metadata.clientId }),
    ...(metadata.clientHost === '' ? {} : { clientHost: metadata.clientHost }),
    ...(metadata.memberType === 'consumer' ? {} : { memberType: metadata.memberType }),
  };
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
    ...metadataRecordOf(member.metadata),
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
    metadata: {
      rackId: record.rackId ?? memberMetadataDefault.rackId,
      clientId: record.clientId ?? memberMetadataDefault.clientId,
      clientHost: record.clientHost ?? memberMetadataDefault.clientHost,
      memberType: record.memberType ?? memberMetadataDefault.memberType,
    },
  };
}
