/**
 * The records the consumer group state machine asks the coordinator runtime to persist in
 * `__consumer_offsets`, and the snapshot replay must rebuild. Records are plain
 * JSON-serialisable data; replaying every record of a group in order on a fresh `ConsumerGroup`
 * rebuilds it exactly.
 */
import type { AssignorName } from './group-settings';

export interface TopicPartitionRecord {
  topic: string;
  partition: number;
}

export interface MemberRecord {
  memberId: string;
  /** Empty for a dynamic member; the static member's instance id otherwise. */
  instanceId: string;
  /** -2 while a static member is away (it left with epoch -2 and may come back). */
  memberEpoch: number;
  previousMemberEpoch: number;
  /** Sorted, without duplicates. */
  subscribedTopics: string[];
  subscribedRegex: string;
  rebalanceTimeoutMs: number;
  /** Sorted by topic, then partition. */
  assigned: TopicPartitionRecord[];
  /** Sorted by topic, then partition. */
  pendingRevocation: TopicPartitionRecord[];
  /**
   * Who the member is, for DescribeGroup only (absent when empty, and in records written before
   * they existed): Kafka's client.rack, client.id, the address it connects from, and "classic"
   * for a JoinGroup/SyncGroup member of the Kafka listener.
   */
  rackId?: string;
  clientId?: string;
  clientHost?: string;
  memberType?: MemberType;
}

/** A member speaking this protocol (KIP-848) or Kafka's classic JoinGroup/SyncGroup. */
export type MemberType = 'consumer' | 'classic';

export interface TargetAssignmentMemberRecord {
  memberId: string;
  partitions: TopicPartitionRecord[];
}

/** A change to persist in __consumer_offsets, written before the heartbeat response is sent. */
export type GroupRecord =
  | { type: 'group-epoch'; groupId: string; groupEpoch: number; assignor: AssignorName }
  | { type: 'member'; groupId: string; member: MemberRecord }
  | { type: 'member-removed'; groupId: string; memberId: string }
  | {
      type: 'target-assignment';
      groupId: string;
      assignmentEpoch: number;
      members: TargetAssignmentMemberRecord[];
    }
  | { type: 'group-deleted'; groupId: string };

export type GroupState = 'EMPTY' | 'ASSIGNING' | 'RECONCILING' | 'STABLE' | 'DEAD';

/** Everything `replay` must rebuild, in a canonical order: live and replayed groups compare equal. */
export interface GroupSnapshot {
  groupId: string;
  state: GroupState;
  groupEpoch: number;
  assignor: AssignorName;
  targetAssignmentEpoch: number;
  targetAssignment: TargetAssignmentMemberRecord[];
  members: MemberRecord[];
}
