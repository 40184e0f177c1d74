import type { ProtoError } from '@spool/protocol';
import { describeTopicMetadata } from './cluster-topics';
import { ClientErrorCode, clientError, fromProtoError, partitionName } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';
import { isError } from './offset-committer';

/**
 * The admin client's consumer group calls (Kafka's ListGroups, DescribeGroup with lag,
 * DeleteGroup, OffsetFetch and the offset reset of kafka-consumer-groups), through the gateway,
 * which routes each to the group's coordinator. A group-level error is thrown as a SpoolError
 * naming the group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...); a partition's error names it too.
 */

export interface GroupListing {
  readonly groupId: string;
  /** EMPTY, ASSIGNING, RECONCILING, STABLE or DEAD, as the coordinator names them. */
  readonly state: string;
}

export interface GroupMemberDescription {
  readonly memberId: string;
  /** '' for a dynamic member. */
  readonly instanceId: string;
  readonly memberEpoch: number;
  readonly assignment: readonly { topic: string; partition: number }[];
}

export interface GroupPartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** -1n when the group committed nothing for the partition. */
  readonly committedOffset: bigint;
  readonly highWatermark: bigint;
  /** High watermark minus committed offset, never below 0; -1n when nothing is committed. */
  readonly lag: bigint;
}

export interface GroupDescription {
  readonly groupId: string;
  readonly state: string;
  readonly groupEpoch: number;
  readonly members: readonly GroupMemberDescription[];
  readonly partitions: readonly GroupPartitionLag[];
}

export type OffsetResetStrategy = 'earliest' | 'latest' | 'timestamp' | 'offset';
const offsetResetStrategies: readonly OffsetResetStrategy[] = [
  'earliest',
  'latest',
  'timestamp',
  'offset',
];

export interface ResetOffsetsOptions {
  readonly strategy: OffsetResetStrategy;
  /** With 'timestamp': the first offset at or after this time (ms since the epoch). */
  readonly timestampMs?: bigint | number;
  /** With 'offset': the offset every selected partition resumes at. */
  readonly offset?: bigint;
  /** The partitions to reset; absent: every partition the group has an offset for. */
  readonly partitions?: readonly { topic: string; partition: number }[];
}

export interface GroupOffset {
  readonly topic: string;
  readonly partition: number;
  /** -1n when nothing is committed. */
  readonly offset: bigint;
  readonly metadata: string;
  readonly commitTimestampMs: bigint;
}

/** KafkaJS's fetchOffsets shape. */
export interface TopicGroupOffsets {
  readonly topic: string;
  readonly partitions: readonly { partition: number; offset: bigint; metadata: string }[];
}

export async function listGroups(
  connection: GatewayConnection,
  options: GatewayCallOptions,
): Promise<GroupListing[]> {
  const response = await connection.call((client) => client.listGroups, {}, options);
  return response.groups
    .map(({ groupId, state }) => ({ groupId, state }))
    .sort((left, right) => left.groupId.localeCompare(right.groupId));
}

export async function describeGroup(
  connection: GatewayConnection,
  groupId: string,
  options: GatewayCallOptions,
): Promise<GroupDescription> {
  checkGroupId(groupId);
  const response = await connection.call((client) => client.describeGroup, { groupId }, options);
  throwGroupError(response.error, `describe group ${groupId}`);
  return {
    groupId: response.groupId === '' ? groupId : response.groupId,
    state: response.state,
    groupEpoch: response.groupEpoch,
    members: response.members.map((member) => ({
      memberId: member.memberId,
      instanceId: member.instanceId,
      memberEpoch: member.memberEpoch,
      assignment: sortPartitions(
        member.assignment.map(({ topic, partition }) => ({ topic, partition })),
      ),
    })),
    partitions: sortPartitions(
      response.partitions.map(({ topic, partition, committedOffset, highWatermark, lag }) => ({
        topic,
        partition,
        committedOffset,
        highWatermark,
        lag,
      })),
    ),
  };
}

export async function deleteGroup(
  connection: GatewayConnection,
  groupId: string,
  options: GatewayCallOptions,
): Promise<void> {
  checkGroupId(groupId);
  const response = await connection.call((client) => client.deleteGroup, { groupId }, options);
  throwGroupError(response.error, `delete group ${groupId}`);
}

/** Committed offsets of the group: of the topics' partitions, or every one it has. */
export async function fetchGroupOffsets(
  connection: GatewayConnection,
  groupId: string,
  topics: readonly string[] | undefined,
  options: GatewayCallOptions,
): Promise<GroupOffset[]> {
  checkGroupId(groupId);
  const partitions =
    topics === undefined
      ? []
      : (await describeTopicMetadata(connection, topics, options)).flatMap((topic) =>
          topic.partitions.map(({ partition }) => ({ topic: topic.name, partition })),
        );
  if (topics !== undefined && partitions.length === 0) return [];
  const response = await connection.call(
    (client) => client.offsetFetch,
    { groupId, partitions },
    options,
  );
  throwGroupError(response.error, `fetch offsets of group ${groupId}`);
  const failed = response.offsets.find((offset) => isError(offset.error));
  if (failed !== undefined) {
    throw fromProtoError(
      failed.error!,
      `fetch offsets of group ${groupId}: ${partitionName(failed.topic, failed.partition)}`,
    );
  }
  return sortPartitions(
    response.offsets.map(({ topic, partition, offset, metadata, commitTimestampMs }) => ({
      topic,
      partition,
      offset,
      metadata,
      commitTimestampMs,
    })),
  );
}

export async function resetGroupOffsets(
  connection: GatewayConnection,
  groupId: string,
  reset: ResetOffsetsOptions,
  options: GatewayCallOptions,
): Promise<GroupOffset[]> {
  checkGroupId(groupId);
  checkReset(reset);
  const response = await connection.call(
    (client) => client.resetOffsets,
    {
      groupId,
      partitions: (reset.partitions ?? []).map(({ topic, partition }) => ({ topic, partition })),
      strategy: reset.strategy,
      timestampMs: reset.timestampMs === undefined ? 0n : BigInt(reset.timestampMs),
      offset: reset.offset ?? 0n,
    },
    options,
  );
  throwGroupError(response.error, `reset offsets of group ${groupId}`);
  const failed = response.offsets.find((offset) => isError(offset.error));
  if (failed !== undefined) {
    throw fromProtoError(
      failed.error!,
      `reset offsets of group ${groupId}: ${partitionName(failed.topic, failed.partition)}`,
    );
  }
  return sortPartitions(
    response.offsets.map(({ topic, partition, offset, metadata, commitTimestampMs }) => ({
      topic,
      partition,
      offset,
      metadata,
      commitTimestampMs,
    })),
  );
}

/** Every bad field of a reset named before anything is sent. */
export function checkReset(reset: ResetOffsetsOptions): void {
  if (!offsetResetStrategies.includes(reset.strategy)) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `reset offsets: strategy must be one of ${offsetResetStrategies.join(', ')}, got ` +
        `${JSON.stringify(reset.strategy)}`,
    );
  }
  if (reset.strategy === 'timestamp') {
    const timestampMs = reset.timestampMs;
    const valid =
      (typeof timestampMs === 'bigint' && timestampMs >= 0n) ||
      (typeof timestampMs === 'number' && Number.isSafeInteger(timestampMs) && timestampMs >= 0);
    if (!valid) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `reset offsets: strategy timestamp needs timestampMs, milliseconds since the epoch, got ` +
          `${String(timestampMs)}`,
      );
    }
  }
  if (reset.strategy === 'offset' && (typeof reset.offset !== 'bigint' || reset.offset < 0n)) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `reset offsets: strategy offset needs offset, a bigint of 0n or more, got ${String(reset.offset)}`,
    );
  }
  for (const { topic, partition } of reset.partitions ?? []) {
    if (
      typeof topic !== 'string' ||
      topic === '' ||
      !Number.isInteger(partition) ||
      partition < 0
    ) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `reset offsets: a partition needs a topic and a partition number of 0 or more, got ` +
          `${String(topic)}[${String(partition)}]`,
      );
    }
  }
}

function checkGroupId(groupId: string): void {
  if (typeof groupId !== 'string' || groupId === '') {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `a group id must be a non-empty name, got ${JSON.stringify(groupId)}`,
    );
  }
}

function throwGroupError(error: ProtoError | undefined, subject: string): void {
  if (isError(error)) throw fromProtoError(error, subject);
}

function sortPartitions<T extends { topic: string; partition: number }>(partitions: T[]): T[] {
  return partitions.sort(
    (left, right) => left.topic.localeCompare(right.topic) || left.partition - right.partition,
  );
}

export function groupOffsetsByTopic(offsets: readonly GroupOffset[]): TopicGroupOffsets[] {
  const byTopic = new Map<string, { partition: number; offset: bigint; metadata: string }[]>();
  for (const { topic, partition, offset, metadata } of offsets) {
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), { partition, offset, metadata }]);
  }
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}
