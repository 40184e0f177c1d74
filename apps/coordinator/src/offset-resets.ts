/**
 * ResetOffsets: moves a group's committed offsets to the earliest offset, the high watermark,
 * the first offset at or after a timestamp, or a given offset (clamped into the partition's
 * [log start, high watermark], as Kafka's reset tool does). Only while the group has no members:
 * a live member would overwrite the reset with its next commit, or be surprised by it.
 */
import {
  OffsetSpec,
  type CommittedOffset,
  type ResetOffsetsRequest,
  type ResetOffsetsResponse,
} from '@spool/protocol';
import { SpoolError, wireErrorOf } from '@spool/common';
import type { ClusterMetadataCache } from '@spool/protocol';
import type { GroupCoordinator } from './group-coordinator';
import type { OffsetsEntry } from './offsets-records';
import type { PartitionLeaders } from './partition-leaders';
import type { ShardManager } from './shard-manager';

/** How long the offset lookups of one reset may take. */
const resetLookupTimeoutMs = 5_000;
const strategies = ['earliest', 'latest', 'timestamp', 'offset'] as const;
type Strategy = (typeof strategies)[number];

export interface OffsetResetDependencies {
  readonly groups: GroupCoordinator;
  readonly shards: ShardManager;
  readonly leaders: PartitionLeaders;
  readonly metadata: ClusterMetadataCache;
}

export async function resetOffsets(
  dependencies: OffsetResetDependencies,
  request: ResetOffsetsRequest,
): Promise<ResetOffsetsResponse> {
  try {
    const shard = dependencies.groups.shardOf(request.groupId);
    const strategy = request.strategy as Strategy;
    if (!strategies.includes(strategy)) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `strategy is "${request.strategy}"; expected one of ${strategies.join(', ')}`,
      );
    }
    if (strategy === 'offset' && request.offset < 0n) {
      throw new SpoolError('INVALID_REQUEST', `offset is ${request.offset}; it must be at least 0`);
    }
    const group = shard.groups.get(request.groupId);
    if (group !== undefined && !group.isEmpty()) {
      throw new SpoolError(
        'NON_EMPTY_GROUP',
        `group "${request.groupId}" has members; offsets can be reset only while it is empty`,
      );
    }
    const partitions =
      request.partitions.length > 0
        ? request.partitions
        : shard.committedOffsets(request.groupId).map(({ topic, partition }) => ({
            topic,
            partition,
          }));
    if (partitions.length === 0) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `partitions is empty and group "${request.groupId}" has no committed offsets to reset`,
      );
    }
    const deadlineMs = Date.now() + resetLookupTimeoutMs;
    const targets = await Promise.all(
      partitions.map(async (partition) => {
        try {
          return {
            ...partition,
            offset: await targetOffset(dependencies, partition, strategy, request, deadlineMs),
            error: undefined,
          };
        } catch (error) {
          return { ...partition, offset: -1n, error: wireErrorOf(error) };
        }
      }),
    );
    const nowMs = BigInt(Date.now());
    const entries: OffsetsEntry[] = targets
      .filter((target) => target.error === undefined)
      .map((target) => ({
        kind: 'offset',
        groupId: request.groupId,
        topic: target.topic,
        partition: target.partition,
        committed: {
          offset: target.offset,
          metadata: '',
          commitTimestampMs: nowMs,
          leaderEpoch: -1,
        },
      }));
    await dependencies.shards.write(shard, entries, () => {
      for (const entry of entries) shard.apply(entry, Date.now());
    });
    return {
      error: undefined,
      offsets: targets.map((target): CommittedOffset => ({
        topic: target.topic,
        partition: target.partition,
        offset: target.offset,
        metadata: '',
        commitTimestampMs: target.error === undefined ? nowMs : -1n,
        error: target.error,
      })),
    };
  } catch (error) {
    return { error: wireErrorOf(error), offsets: [] };
  }
}

async function targetOffset(
  { leaders, metadata }: OffsetResetDependencies,
  { topic, partition }: { topic: string; partition: number },
  strategy: Strategy,
  request: ResetOffsetsRequest,
  deadlineMs: number,
): Promise<bigint> {
  const partitions = metadata.topics.get(topic)?.partitions.length;
  if (partitions === undefined || partition < 0 || partition >= partitions) {
    throw new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `${topic}-${partition} does not exist`);
  }
  const lookup = async (spec: OffsetSpec, timestampMs = 0n): Promise<bigint> =>
    (await leaders.listOffset(topic, partition, spec, deadlineMs, timestampMs)).offset;
  switch (strategy) {
    case 'earliest':
      return lookup(OffsetSpec.OFFSET_SPEC_EARLIEST);
    case 'latest':
      return lookup(OffsetSpec.OFFSET_SPEC_LATEST);
    case 'timestamp': {
      // No record at or after the timestamp: the consumer starts at the end, as Kafka's tool does.
      const found = await lookup(OffsetSpec.OFFSET_SPEC_TIMESTAMP, request.timestampMs);
      return found >= 0n ? found : lookup(OffsetSpec.OFFSET_SPEC_LATEST);
    }
    case 'offset': {
      const earliest = await lookup(OffsetSpec.OFFSET_SPEC_EARLIEST);
      const latest = await lookup(OffsetSpec.OFFSET_SPEC_LATEST);
      return request.offset < earliest
        ? earliest
        : request.offset > latest
          ? latest
          : request.offset;
    }
  }
}
