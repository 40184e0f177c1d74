/**
 * The CoordinatorService calls for consumer groups and committed offsets, on the shards this
 * coordinator serves (shard-manager.ts). Every call first finds the group's shard: a group whose
 * shard is elsewhere gets NOT_COORDINATOR, one whose shard is loading
 * COORDINATOR_LOAD_IN_PROGRESS (both retriable: the client finds the coordinator again). A change
 * is written to __consumer_offsets (acks=all) before the call answers.
 */
import { SpoolError, wireErrorOf, type Logger } from '@spool/common';
import {
  groupPartition,
  type CommittedOffset as CommittedOffsetMessage,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type DeleteGroupRequest,
  type DeleteGroupResponse,
  type DeleteOffsetsRequest,
  type DeleteOffsetsResponse,
  type DescribeGroupRequest,
  type DescribeGroupResponse,
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
  type ListGroupsResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type PartitionLag,
  type ProtoError,
} from '@spool/protocol';
import type { ControllerLink } from './controller-link';
import type { CoordinatorMetrics } from './coordinator-metrics';
import type { ConsumerGroup } from '@spool/consumer-group';
import type { OffsetsEntry } from './offsets-records';
import type { OffsetsShard } from './offsets-shard';
import { partitionKey, type PartitionLeaders } from './partition-leaders';
import type { ShardManager } from './shard-manager';
import { topicPartitionView } from './topic-partition-view';

/** Kafka's offset.metadata.max.bytes: a commit's metadata string is bounded. */
export const offsetMetadataBytesMax = 4_096;
/** Kafka bounds group ids by its string encoding; 255 is plenty and keeps keys small. */
export const groupIdLengthMax = 255;
/** How long DescribeGroup waits for the partition leaders' high watermarks. */
const highWatermarkTimeoutMs = 3_000;

export interface GroupCoordinatorOptions {
  readonly link: ControllerLink;
  readonly shards: ShardManager;
  readonly leaders: PartitionLeaders;
  readonly metrics: CoordinatorMetrics;
  readonly logger: Logger;
}

export function validateGroupId(groupId: string): void {
  if (groupId === '') throw new SpoolError('INVALID_REQUEST', 'group_id is empty');
  if (groupId.length > groupIdLengthMax) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `group_id is ${groupId.length} characters long; the most allowed is ${groupIdLengthMax}`,
    );
  }
}

export class GroupCoordinator {
  constructor(private readonly options: GroupCoordinatorOptions) {}

  private get metadata() {
    return this.options.link.metadata;
  }

  /** The group's shard, refusing a bad group id first. */
  shardOf(groupId: string): OffsetsShard {
    validateGroupId(groupId);
    return this.options.shards.shardFor(groupId);
  }

  async heartbeat(request: ConsumerGroupHeartbeatRequest): Promise<ConsumerGroupHeartbeatResponse> {
    try {
      const shard = this.shardOf(request.groupId);
      const group = shard.groupOrNew(request.groupId);
      const epochBefore = group.groupEpoch;
      const { response, records } = group.heartbeat(
        request,
        topicPartitionView(this.metadata),
        Date.now(),
      );
      if (records.length > 0 && !shard.groups.has(request.groupId))
        shard.groups.set(request.groupId, group);
      await this.options.shards.write(
        shard,
        records.map((record): OffsetsEntry => ({ kind: 'group', record })),
      );
      this.countRebalance(group, epochBefore);
      return response;
    } catch (error) {
      return {
        error: wireErrorOf(error),
        memberId: request.memberId,
        memberEpoch: request.memberEpoch,
        heartbeatIntervalMs: 0,
        assignment: undefined,
      };
    }
  }

  countRebalance(group: ConsumerGroup, epochBefore: number): void {
    if (group.groupEpoch > epochBefore)
      this.options.metrics.rebalances.inc({ group: group.groupId });
  }

  async offsetCommit(request: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const resultOf = (
      offset: { topic: string; partition: number },
      error: ProtoError | undefined,
    ) => ({ topic: offset.topic, partition: offset.partition, error });
    try {
      const shard = this.shardOf(request.groupId);
      const group = shard.groups.get(request.groupId);
      if (group !== undefined) group.validateOffsetCommit(request.memberId, request.memberEpoch);
      else if (request.memberId !== '' || request.memberEpoch !== -1) {
        throw new SpoolError(
          'UNKNOWN_MEMBER_ID',
          `group "${request.groupId}" has no member "${request.memberId}"; a commit outside a ` +
            'group needs an empty member_id and member_epoch -1',
        );
      }
      const nowMs = BigInt(Date.now());
      const errors = request.offsets.map((offset, index) => this.commitError(offset, index));
      const entries: OffsetsEntry[] = [];
      request.offsets.forEach((offset, index) => {
        if (errors[index] !== undefined) return;
        entries.push({
          kind: 'offset',
          groupId: request.groupId,
          topic: offset.topic,
          partition: offset.partition,
          committed: {
            offset: offset.offset,
            metadata: offset.metadata,
            commitTimestampMs: nowMs,
            leaderEpoch: offset.leaderEpoch,
          },
        });
      });
      await this.options.shards.write(shard, entries, () => {
        for (const entry of entries) shard.apply(entry, Date.now());
      });
      if (entries.length > 0)
        this.options.metrics.offsetCommits.inc({ group: request.groupId }, entries.length);
      return {
        results: request.offsets.map((offset, index) =>
          resultOf(offset, errors[index] === undefined ? undefined : wireErrorOf(errors[index])),
        ),
      };
    } catch (error) {
      const coded = wireErrorOf(error);
      return { results: request.offsets.map((offset) => resultOf(offset, coded)) };
    }
  }

  /** Why one offset of a commit cannot be committed, or undefined when it can. */
  private commitError(
    offset: OffsetCommitRequest['offsets'][number],
    index: number,
  ): SpoolError | undefined {
    const partitions = this.metadata.topics.get(offset.topic)?.partitions.length;
    if (partitions === undefined || offset.partition < 0 || offset.partition >= partitions) {
      return new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `offsets[${index}]: ${offset.topic}-${offset.partition} does not exist`,
      );
    }
    if (offset.offset < 0n) {
      return new SpoolError(
        'INVALID_REQUEST',
        `offsets[${index}].offset is ${offset.offset}; a committed offset is at least 0`,
      );
    }
    const metadataBytes = Buffer.byteLength(offset.metadata, 'utf8');
    if (metadataBytes > offsetMetadataBytesMax) {
      return new SpoolError(
        'OFFSET_METADATA_TOO_LARGE',
        `offsets[${index}].metadata is ${metadataBytes} bytes; the most allowed is ${offsetMetadataBytesMax}`,
      );
    }
    return undefined;
  }

  async offsetFetch(request: OffsetFetchRequest): Promise<OffsetFetchResponse> {
    try {
      const shard = this.shardOf(request.groupId);
      // A fetch that names a member is checked against the group, if there is one; Kafka answers
      // a group it does not know with no offsets, not with an unknown member.
      if (request.memberId !== undefined) {
        shard.groups
          .get(request.groupId)
          ?.validateOffsetFetch(request.memberId, request.memberEpoch ?? -1);
      }
      const committed = new Map(
        shard
          .committedOffsets(request.groupId)
          .map((offset) => [partitionKey(offset.topic, offset.partition), offset]),
      );
      const wanted = request.partitions.length === 0 ? [...committed.values()] : request.partitions;
      return {
        error: undefined,
        offsets: wanted.map((partition): CommittedOffsetMessage => {
          const found = committed.get(partitionKey(partition.topic, partition.partition));
          return {
            topic: partition.topic,
            partition: partition.partition,
            offset: found?.offset ?? -1n,
            metadata: found?.metadata ?? '',
            commitTimestampMs: found?.commitTimestampMs ?? -1n,
            error: undefined,
          };
        }),
      };
    } catch (error) {
      return { error: wireErrorOf(error), offsets: [] };
    }
  }

  listGroups(): ListGroupsResponse {
    const groups: ListGroupsResponse['groups'] = [];
    for (const shard of this.options.shards.activeShards()) {
      for (const groupId of shard.groupIds())
        groups.push({ groupId, state: shard.groups.get(groupId)?.state ?? 'EMPTY' });
    }
    return { groups: groups.sort((left, right) => left.groupId.localeCompare(right.groupId)) };
  }

  async describeGroup(request: DescribeGroupRequest): Promise<DescribeGroupResponse> {
    const base: DescribeGroupResponse = {
      error: undefined,
      groupId: request.groupId,
      state: 'DEAD',
      groupEpoch: 0,
      members: [],
      partitions: [],
      assignor: '',
      assignmentEpoch: 0,
    };
    try {
      const shard = this.shardOf(request.groupId);
      const group = shard.groups.get(request.groupId);
      const committed = shard.committedOffsets(request.groupId);
      if (group === undefined && committed.length === 0) {
        throw new SpoolError('GROUP_ID_NOT_FOUND', `group "${request.groupId}" does not exist`);
      }
      const members = group?.describeMembers() ?? [];
      const partitions = new Map<string, { topic: string; partition: number; offset: bigint }>();
      for (const offset of committed)
        partitions.set(partitionKey(offset.topic, offset.partition), offset);
      for (const member of members) {
        for (const assigned of member.assignment) {
          const key = partitionKey(assigned.topic, assigned.partition);
          if (!partitions.has(key)) partitions.set(key, { ...assigned, offset: -1n });
        }
      }
      const lags = await this.lagOf(request.groupId, [...partitions.values()]);
      return {
        ...base,
        state: group?.state ?? 'EMPTY',
        groupEpoch: group?.groupEpoch ?? 0,
        assignor: group?.assignorName ?? '',
        assignmentEpoch: group?.assignmentEpoch ?? 0,
        members,
        partitions: lags,
      };
    } catch (error) {
      return { ...base, error: wireErrorOf(error) };
    }
  }

  /**
   * Lag per partition: high watermark (from the leader) minus committed offset, never below 0;
   * -1 when nothing is committed or the high watermark is unknown. Refreshes the lag metrics.
   */
  async lagOf(
    groupId: string,
    partitions: ReadonlyArray<{ topic: string; partition: number; offset: bigint }>,
  ): Promise<PartitionLag[]> {
    const highWatermarks = await this.options.leaders.highWatermarks(
      partitions,
      Date.now() + highWatermarkTimeoutMs,
    );
    const lags = partitions
      .map((partition): PartitionLag => {
        const highWatermark =
          highWatermarks.get(partitionKey(partition.topic, partition.partition)) ?? -1n;
        const known = highWatermark >= 0n && partition.offset >= 0n;
        const lag = highWatermark - partition.offset;
        return {
          topic: partition.topic,
          partition: partition.partition,
          committedOffset: partition.offset,
          highWatermark,
          lag: !known ? -1n : lag > 0n ? lag : 0n,
        };
      })
      .sort(
        (left, right) => left.topic.localeCompare(right.topic) || left.partition - right.partition,
      );
    this.options.metrics.setGroupLag({
      groupId,
      partitions: lags.filter((partition) => partition.lag >= 0n),
    });
    return lags;
  }

  async deleteGroup(request: DeleteGroupRequest): Promise<DeleteGroupResponse> {
    try {
      const shard = this.shardOf(request.groupId);
      const group = shard.groups.get(request.groupId);
      const committed = shard.committedOffsets(request.groupId);
      if (group === undefined && committed.length === 0) {
        throw new SpoolError('GROUP_ID_NOT_FOUND', `group "${request.groupId}" does not exist`);
      }
      if (group !== undefined && !group.isEmpty()) {
        throw new SpoolError(
          'NON_EMPTY_GROUP',
          `group "${request.groupId}" still has members; stop them before deleting it`,
        );
      }
      const groupRecords = group?.delete(Date.now()) ?? [];
      const entries: OffsetsEntry[] = committed.map((offset) => ({
        kind: 'offset',
        groupId: request.groupId,
        topic: offset.topic,
        partition: offset.partition,
        committed: undefined,
      }));
      for (const record of groupRecords) entries.push({ kind: 'group', record });
      await this.options.shards.write(shard, entries, () => {
        for (const entry of entries) shard.apply(entry, Date.now());
      });
      this.options.logger.info({ groupId: request.groupId }, 'group deleted');
      return { error: undefined };
    } catch (error) {
      return { error: wireErrorOf(error) };
    }
  }

  /**
   * Kafka's OffsetDelete: removes the group's committed offsets of the given partitions, each
   * refused with GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to its topic (its offset is
   * in use). A partition with nothing committed is answered without error, as Kafka does.
   */
  async deleteOffsets(request: DeleteOffsetsRequest): Promise<DeleteOffsetsResponse> {
    try {
      const shard = this.shardOf(request.groupId);
      const group = shard.groups.get(request.groupId);
      const committed = shard.committedOffsets(request.groupId);
      if (group === undefined && committed.length === 0) {
        throw new SpoolError('GROUP_ID_NOT_FOUND', `group "${request.groupId}" does not exist`);
      }
      const committedKeys = new Set(
        committed.map((offset) => partitionKey(offset.topic, offset.partition)),
      );
      const partitions = request.partitions.map((wanted) => ({
        topic: wanted.topic,
        partition: wanted.partition,
        error:
          group?.isSubscribedToTopic(wanted.topic) === true
            ? wireErrorOf(
                new SpoolError(
                  'GROUP_SUBSCRIBED_TO_TOPIC',
                  `a member of group "${request.groupId}" subscribes to topic ` +
                    `"${wanted.topic}"; its offsets can be deleted once none does`,
                ),
              )
            : undefined,
      }));
      const entries: OffsetsEntry[] = partitions
        .filter(
          (entry) =>
            entry.error === undefined &&
            committedKeys.delete(partitionKey(entry.topic, entry.partition)),
        )
        .map((entry) => ({
          kind: 'offset',
          groupId: request.groupId,
          topic: entry.topic,
          partition: entry.partition,
          committed: undefined,
        }));
      if (entries.length > 0) {
        await this.options.shards.write(shard, entries, () => {
          for (const entry of entries) shard.apply(entry, Date.now());
        });
        this.options.logger.info(
          { groupId: request.groupId, partitions: entries.length },
          'committed offsets deleted',
        );
      }
      return { error: undefined, partitions };
    } catch (error) {
      return { error: wireErrorOf(error), partitions: [] };
    }
  }

  findCoordinator(request: FindCoordinatorRequest): FindCoordinatorResponse {
    try {
      validateGroupId(request.groupId);
      const shardCount = this.metadata.coordinatorShardCount;
      const owner =
        shardCount === 0
          ? undefined
          : this.metadata.shardOwner(groupPartition(request.groupId, shardCount));
      const endpoint =
        owner === undefined
          ? undefined
          : this.metadata.coordinators
              .get(owner.coordinatorId)
              ?.endpoints.find((candidate) => candidate.name === 'grpc');
      if (endpoint === undefined) {
        throw new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `no live coordinator owns the shard of group "${request.groupId}" yet`,
        );
      }
      return { error: undefined, coordinator: { ...endpoint } };
    } catch (error) {
      return { error: wireErrorOf(error), coordinator: undefined };
    }
  }
}
