/**
 * What the consumer group state machine is given by the coordinator runtime: the assignors it may
 * name, its view of the cluster's topics, its timeouts, and the bounds on what one group may hold.
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
