/**
 * The shapes the consumer group state machine shares with the coordinator runtime: what it needs
 * to know about the cluster, its timeouts and limits, and the records it asks the runtime to
 * persist in `__consumer_offsets`. Records are plain JSON-serialisable data; replaying every
 * record of a group in order on a fresh `ConsumerGroup` rebuilds it exactly.
 */

export type AssignorName = 'uniform' | 'range';

export const assignorNames: readonly AssignorName[] = ['uniform', 'range'];

/** A view of cluster metadata, as the coordinator's metadata cache knows it. */
export interface TopicPartitionCounts {
  /** undefined: the topic does not exist. */
  partitionCount(topic: string): number | undefined;
  /** Every topic name, for regex subscriptions (the group skips internal topics itself). */
  topicNames(): Iterable<string>;
}

export interface GroupTimeouts {
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
}

/** Bounds on what one group may hold, so one client cannot make the coordinator do unbounded work. */
export interface GroupLimits {
  /** Members, including static members away within their session (Kafka's group.consumer.max.size). */
  membersMax: number;
  /** Topics one member may name in subscribedTopics. */
  subscribedTopicsMax: number;
  /** Characters of subscribedRegex: a longer pattern is more likely a mistake than a need. */
  subscribedRegexLengthMax: number;
  /** Characters of a member id or an instance id. */
  identifierLengthMax: number;
  /** Entries of ownedPartitions in one heartbeat. */
  ownedPartitionsMax: number;
}

export const groupLimitsDefault: Readonly<GroupLimits> = {
  membersMax: 1000,
  subscribedTopicsMax: 10_000,
  subscribedRegexLengthMax: 1000,
  identifierLengthMax: 255,
  ownedPartitionsMax: 100_000,
};

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
}

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
