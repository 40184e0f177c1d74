// Proves the coordinator runtime's group calls against an in-memory __consumer_offsets log and
// fake partition leaders (no processes): a shard loads by replaying the log and writing its epoch
// marker; a member joins and commits; DeleteGroup and ResetOffsets refuse a group with members
// (NON_EMPTY_GROUP) and work once it is empty (earliest, latest, timestamp, offset clamped into
// the log); DeleteGroup removes the offsets; a group whose shard is elsewhere gets NOT_COORDINATOR;
// and a second coordinator replaying the same log after a takeover rebuilds the same offsets
// while ignoring what the fenced previous owner wrote afterwards.
import { createLogger } from '@spool/common';
import {
  ClusterMetadataCache,
  OffsetSpec,
  consumerOffsetsTopic,
  groupPartition,
  type DataPortFetchedPartition,
  type ListOffsetsResult,
  type TopicMetadata,
} from '@spool/protocol';
import { lastOffsetDeltaPosition, recordCountPosition, setBaseOffset } from '@spool/record-batch';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import type { ControllerLink } from './controller-link';
import { CoordinatorMetrics } from './coordinator-metrics';
import { GroupCoordinator } from './group-coordinator';
import { encodeOffsetsBatch } from './offsets-records';
import { resetOffsets } from './offset-resets';
import type { PartitionLeaders } from './partition-leaders';
import { ShardManager } from './shard-manager';

const logger = createLogger({ service: 'test', level: 'silent' });
const shardCount = 4;

function topic(name: string, partitions: number, internal = false): TopicMetadata {
  return {
    name,
    topicId: name,
    internal,
    configs: [],
    partitions: Array.from({ length: partitions }, (_, partition) => ({
      topic: name,
      partition,
      leaderId: 0,
      leaderEpoch: 0,
      replicas: [0],
      isr: [0],
      partitionEpoch: 0,
      offline: false,
      addingReplicas: [],
      removingReplicas: [],
    })),
  };
}

/** __consumer_offsets as a list of stored batches per partition; `orders` has fixed offsets. */
class FakeLeaders {
  readonly logs = new Map<number, Buffer[]>();
  /** Per partition: offsets below are deleted (DeleteRecords). */
  readonly logStarts = new Map<number, bigint>();
  private endOf(partition: number): bigint {
    return BigInt(
      (this.logs.get(partition) ?? []).reduce(
        (count, batch) => count + batch.readInt32BE(recordCountPosition),
        0,
      ),
    );
  }

  async append(_topic: string, partition: number, records: Buffer): Promise<bigint> {
    const baseOffset = this.endOf(partition);
    const stored = Buffer.from(records);
    setBaseOffset(stored, 0, baseOffset);
    this.logs.set(partition, [...(this.logs.get(partition) ?? []), stored]);
    return baseOffset;
  }

  async listOffset(
    name: string,
    partition: number,
    spec: OffsetSpec,
    _deadlineMs: number,
    timestampMs = 0n,
  ): Promise<ListOffsetsResult> {
    const result = (offset: bigint): ListOffsetsResult => ({
      topic: name,
      partition,
      error: undefined,
      offset,
      timestampMs: -1n,
      leaderEpoch: 0,
    });
    if (name === consumerOffsetsTopic)
      return result(
        spec === OffsetSpec.OFFSET_SPEC_EARLIEST
          ? (this.logStarts.get(partition) ?? 0n)
          : this.endOf(partition),
      );
    // orders: records 10 to 99, one per millisecond from timestamp 1000.
    if (spec === OffsetSpec.OFFSET_SPEC_EARLIEST) return result(10n);
    if (spec === OffsetSpec.OFFSET_SPEC_LATEST) return result(100n);
    const offset = timestampMs - 1000n + 10n;
    return result(offset >= 100n ? -1n : offset < 10n ? 10n : offset);
  }

  async highWatermarks(partitions: ReadonlyArray<{ topic: string; partition: number }>) {
    return new Map(partitions.map(({ topic, partition }) => [`${topic}\u0000${partition}`, 100n]));
  }

  /** When set, DeleteRecords fails (a leader that cannot be reached, say). */
  refuseDeletes = false;

  async deleteRecordsBefore(_topic: string, partition: number, offset: bigint): Promise<bigint> {
    if (this.refuseDeletes) throw new Error('LEADER_NOT_AVAILABLE: refused by the test');
    // Whole batches go, as a log drops whole segments; reads below the start are refused.
    this.logStarts.set(partition, offset);
    return offset;
  }

  async fetch(_topic: string, partition: number, fetchOffset: bigint) {
    const logStart = this.logStarts.get(partition) ?? 0n;
    if (fetchOffset < logStart)
      throw new Error(`OFFSET_OUT_OF_RANGE: ${fetchOffset} < ${logStart}`);
    const batches = (this.logs.get(partition) ?? []).filter(
      (batch) =>
        batch.readBigInt64BE(0) >= logStart &&
        batch.readBigInt64BE(0) + BigInt(batch.readInt32BE(lastOffsetDeltaPosition)) >= fetchOffset,
    );
    const records = Buffer.concat(batches);
    return {
      topic: consumerOffsetsTopic,
      partition,
      errorCode: '',
      errorMessage: '',
      highWatermark: this.endOf(partition),
      logStartOffset: 0n,
      logEndOffset: this.endOf(partition),
      records,
    } satisfies DataPortFetchedPartition;
  }
}

function startCoordinator(
  leaders: FakeLeaders,
  owned: number[],
  shardEpoch: number,
  checkpointIntervalEntries?: number,
) {
  const metadata = new ClusterMetadataCache();
  metadata.apply({
    metadataVersion: 1n,
    snapshot: true,
    brokers: [],
    topics: [topic('orders', 2), topic(consumerOffsetsTopic, shardCount, true)],
    deletedTopics: [],
    deletedBrokers: [],
    controllerAddress: '',
    coordinators: [],
    deletedCoordinators: [],
    changedPartitions: [],
    coordinatorShards: Array.from({ length: shardCount }, (_, partition) => ({
      partition,
      coordinatorId: owned.includes(partition) ? 'me' : 'other',
      shardEpoch,
    })),
  });
  const link = {
    metadata,
    waitUntil: async (condition: () => boolean) => condition(),
    ensureOffsetsTopic: async () => metadata.topics.get(consumerOffsetsTopic)!,
  } as unknown as ControllerLink;
  const shards = new ShardManager({
    coordinatorId: 'me',
    link,
    leaders: leaders as unknown as PartitionLeaders,
    timeouts: { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 1_000 },
    logger,
    onLoaded: () => {},
    checkpointIntervalEntries,
  });
  const metrics = new CoordinatorMetrics(new Registry(), {
    groups: () => [],
    shardsOwned: () => shards.heldShards.length,
  });
  const groups = new GroupCoordinator({
    link,
    shards,
    leaders: leaders as unknown as PartitionLeaders,
    metrics,
    logger,
  });
  shards.onShards(owned.map((partition) => ({ partition, coordinatorId: 'me', shardEpoch })));
  const reset = (request: Parameters<typeof resetOffsets>[1]) =>
    resetOffsets(
      { groups, shards, leaders: leaders as unknown as PartitionLeaders, metadata },
      request,
    );
  return { groups, shards, reset };
}

async function loaded(shards: ShardManager, count: number): Promise<void> {
  await vi.waitFor(
    () => expect(shards.activeShards().length, 'shards loaded').toBeGreaterThanOrEqual(count),
    { timeout: 2_000, interval: 5 },
  );
}

const groupId = 'billing';
const shard = groupPartition(groupId, shardCount);
const join = {
  groupId,
  memberId: '',
  memberEpoch: 0,
  instanceId: '',
  subscribedTopics: ['orders'],
  subscribedRegex: '',
  ownedPartitions: [],
  rebalanceTimeoutMs: 10_000,
  assignor: 'uniform',
  rackId: '',
  clientId: 'billing-app',
  clientHost: '127.0.0.1',
  memberType: '',
};
const everyPartition = [
  { topic: 'orders', partition: 0 },
  { topic: 'orders', partition: 1 },
];

/**
 * Commits offsets 1..`count` of orders-0 (and `offset * 2` of orders-1 with `both`) one commit at
 * a time, letting checkpoints run between them (they are taken when no write is pending).
 */
async function commitOneByOne(
  groups: GroupCoordinator,
  member: { memberId: string; memberEpoch: number },
  count: bigint,
  both = false,
): Promise<void> {
  for (let offset = 1n; offset <= count; offset++) {
    await groups.offsetCommit({
      groupId,
      memberId: member.memberId,
      memberEpoch: member.memberEpoch,
      offsets: [
        { topic: 'orders', partition: 0, offset, metadata: '', leaderEpoch: -1 },
        ...(both
          ? [{ topic: 'orders', partition: 1, offset: offset * 2n, metadata: '', leaderEpoch: -1 }]
          : []),
      ],
    });
    await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('group coordinator', () => {
  it('serves, refuses to delete or reset a non-empty group, then resets and deletes it', async () => {
    const leaders = new FakeLeaders();
    const { groups, shards, reset } = startCoordinator(leaders, [shard], 1);
    await loaded(shards, 1);
    // The shard wrote its epoch marker before serving.
    expect(leaders.logs.get(shard)).toHaveLength(1);

    const joined = await groups.heartbeat(join);
    expect(joined.error).toBeUndefined();
    expect(joined.assignment?.partitions).toHaveLength(2);
    const committed = await groups.offsetCommit({
      groupId,
      memberId: joined.memberId,
      memberEpoch: joined.memberEpoch,
      offsets: [
        { topic: 'orders', partition: 0, offset: 40n, metadata: '', leaderEpoch: -1 },
        { topic: 'orders', partition: 5, offset: 1n, metadata: '', leaderEpoch: -1 },
        { topic: 'orders', partition: 1, offset: 1n, metadata: 'x'.repeat(5_000), leaderEpoch: -1 },
      ],
    });
    expect(committed.results.map((result) => result.error?.code)).toEqual([
      undefined,
      'UNKNOWN_TOPIC_OR_PARTITION',
      'OFFSET_METADATA_TOO_LARGE',
    ]);

    expect((await groups.deleteGroup({ groupId })).error?.code).toBe('NON_EMPTY_GROUP');
    const refused = await reset({
      groupId,
      partitions: everyPartition,
      strategy: 'earliest',
      timestampMs: 0n,
      offset: 0n,
    });
    expect(refused.error?.code).toBe('NON_EMPTY_GROUP');

    // The member leaves: the group is empty, so offsets may be reset.
    const left = await groups.heartbeat({ ...join, memberId: joined.memberId, memberEpoch: -1 });
    expect(left.error).toBeUndefined();
    const offsetsAfter = async (
      strategy: string,
      extra: { timestampMs?: bigint; offset?: bigint } = {},
    ) => {
      const response = await reset({
        groupId,
        partitions: everyPartition,
        strategy,
        timestampMs: extra.timestampMs ?? 0n,
        offset: extra.offset ?? 0n,
      });
      expect(response.error).toBeUndefined();
      return response.offsets.map((offset) => offset.offset);
    };
    expect(await offsetsAfter('earliest')).toEqual([10n, 10n]);
    expect(await offsetsAfter('latest')).toEqual([100n, 100n]);
    expect(await offsetsAfter('timestamp', { timestampMs: 1_020n })).toEqual([30n, 30n]);
    expect(await offsetsAfter('timestamp', { timestampMs: 9_999n })).toEqual([100n, 100n]);
    expect(await offsetsAfter('offset', { offset: 5n })).toEqual([10n, 10n]);
    expect(await offsetsAfter('offset', { offset: 55n })).toEqual([55n, 55n]);
    expect(await offsetsAfter('offset', { offset: 500n })).toEqual([100n, 100n]);
    expect(
      (await reset({ groupId, partitions: [], strategy: 'sideways', timestampMs: 0n, offset: 0n }))
        .error?.code,
    ).toBe('INVALID_REQUEST');
    const fetched = await groups.offsetFetch({ groupId, partitions: [] });
    expect(fetched.offsets.map((offset) => offset.offset)).toEqual([100n, 100n]);

    const described = await groups.describeGroup({ groupId });
    expect(described.state).toBe('EMPTY');
    expect(described.assignor).toBe('uniform');
    expect(described.partitions.map((partition) => partition.lag)).toEqual([0n, 0n]);

    expect((await groups.deleteGroup({ groupId })).error).toBeUndefined();
    expect((await groups.offsetFetch({ groupId, partitions: [] })).offsets).toEqual([]);
    expect((await groups.describeGroup({ groupId })).error?.code).toBe('GROUP_ID_NOT_FOUND');
    expect(groups.listGroups().groups).toEqual([]);

    const elsewhere = Array.from({ length: 100 }, (_, index) => `group-${index}`).find(
      (candidate) => groupPartition(candidate, shardCount) !== shard,
    )!;
    expect((await groups.offsetFetch({ groupId: elsewhere, partitions: [] })).error?.code).toBe(
      'NOT_COORDINATOR',
    );
    shards.stop();
  });

  it("deletes a group's offsets of a topic only while no member subscribes to it", async () => {
    const { groups, shards } = startCoordinator(new FakeLeaders(), [shard], 1);
    await loaded(shards, 1);
    const joined = await groups.heartbeat(join);
    await groups.offsetCommit({
      groupId,
      memberId: joined.memberId,
      memberEpoch: joined.memberEpoch,
      offsets: [{ topic: 'orders', partition: 0, offset: 40n, metadata: '', leaderEpoch: -1 }],
    });
    const refused = await groups.deleteOffsets({ groupId, partitions: everyPartition });
    expect(refused.error).toBeUndefined();
    expect(refused.partitions.map((entry) => entry.error?.code)).toEqual([
      'GROUP_SUBSCRIBED_TO_TOPIC',
      'GROUP_SUBSCRIBED_TO_TOPIC',
    ]);
    expect((await groups.offsetFetch({ groupId, partitions: [] })).offsets).toHaveLength(1);

    await groups.heartbeat({ ...join, memberId: joined.memberId, memberEpoch: -1 });
    // orders-1 has nothing committed: answered without error, as Kafka does.
    const deleted = await groups.deleteOffsets({ groupId, partitions: everyPartition });
    expect(deleted.partitions.map((entry) => [entry.partition, entry.error])).toEqual([
      [0, undefined],
      [1, undefined],
    ]);
    expect((await groups.offsetFetch({ groupId, partitions: [] })).offsets).toEqual([]);
    const unknown = Array.from({ length: 100 }, (_, index) => `unknown-${index}`).find(
      (candidate) => groupPartition(candidate, shardCount) === shard,
    )!;
    expect(
      (await groups.deleteOffsets({ groupId: unknown, partitions: everyPartition })).error?.code,
    ).toBe('GROUP_ID_NOT_FOUND');
    shards.stop();
  });

  it('checks the member an offset fetch names: unknown, stale, or at its epoch', async () => {
    const { groups, shards } = startCoordinator(new FakeLeaders(), [shard], 1);
    await loaded(shards, 1);
    const joined = await groups.heartbeat(join);
    await groups.offsetCommit({
      groupId,
      memberId: joined.memberId,
      memberEpoch: joined.memberEpoch,
      offsets: [{ topic: 'orders', partition: 0, offset: 40n, metadata: '', leaderEpoch: -1 }],
    });
    const partitions = [{ topic: 'orders', partition: 0 }];
    const fetched = (member: { memberId?: string; memberEpoch?: number }) =>
      groups.offsetFetch({ groupId, partitions, ...member });
    const atEpoch = await fetched({ memberId: joined.memberId, memberEpoch: joined.memberEpoch });
    expect(atEpoch.error).toBeUndefined();
    expect(atEpoch.offsets.map((offset) => offset.offset)).toEqual([40n]);
    const stale = await fetched({ memberId: joined.memberId, memberEpoch: joined.memberEpoch - 1 });
    expect(stale).toMatchObject({ error: { code: 'STALE_MEMBER_EPOCH', retriable: true } });
    expect(stale.offsets).toEqual([]);
    expect((await fetched({ memberId: 'ghost', memberEpoch: 1 })).error?.code).toBe(
      'UNKNOWN_MEMBER_ID',
    );
    // A fetch that names no member is not checked.
    expect((await fetched({})).offsets.map((offset) => offset.offset)).toEqual([40n]);
    shards.stop();
  });

  it('rebuilds the same offsets after a takeover and ignores the fenced owner', async () => {
    const leaders = new FakeLeaders();
    const first = startCoordinator(leaders, [shard], 1);
    await loaded(first.shards, 1);
    const joined = await first.groups.heartbeat(join);
    await first.groups.offsetCommit({
      groupId,
      memberId: joined.memberId,
      memberEpoch: joined.memberEpoch,
      offsets: [{ topic: 'orders', partition: 0, offset: 42n, metadata: 'm', leaderEpoch: -1 }],
    });

    const second = startCoordinator(leaders, [shard], 2);
    await loaded(second.shards, 1);
    // The first owner does not know it lost the shard and writes under epoch 1: fenced.
    await leaders.append(
      consumerOffsetsTopic,
      shard,
      encodeOffsetsBatch(
        [
          {
            kind: 'offset',
            groupId,
            topic: 'orders',
            partition: 0,
            committed: { offset: 7n, metadata: 'zombie', commitTimestampMs: 1n, leaderEpoch: -1 },
          },
        ],
        1,
        Date.now(),
      ),
    );
    const served = await second.groups.offsetFetch({ groupId, partitions: [] });
    expect(served.offsets.map((offset) => [offset.offset, offset.metadata])).toEqual([[42n, 'm']]);
    const members = (await second.groups.describeGroup({ groupId })).members;
    expect(members.map((member) => member.memberId)).toEqual([joined.memberId]);
    // Who the member is was written with it, so the new owner still shows it.
    expect(members[0]).toMatchObject({ clientId: 'billing-app', clientHost: '127.0.0.1' });

    const third = startCoordinator(leaders, [shard], 3);
    await loaded(third.shards, 1);
    const replayed = await third.groups.offsetFetch({ groupId, partitions: [] });
    expect(replayed.offsets.map((offset) => offset.offset)).toEqual([42n]);
    for (const coordinator of [first, second, third]) coordinator.shards.stop();
  });

  it('checkpoints a shard so a takeover replays its live state, not its history', async () => {
    const leaders = new FakeLeaders();
    const first = startCoordinator(leaders, [shard], 1, 20);
    await loaded(first.shards, 1);
    const joined = await first.groups.heartbeat(join);
    await commitOneByOne(first.groups, joined, 60n, true);
    const logStart = leaders.logStarts.get(shard) ?? 0n;
    // 120 committed offsets and the group's records were written; the log now starts at a
    // checkpoint not long before its end.
    expect(logStart).toBeGreaterThan(60n);

    const second = startCoordinator(leaders, [shard], 2, 20);
    await loaded(second.shards, 1);
    const served = await second.groups.offsetFetch({ groupId, partitions: [] });
    expect(served.offsets.map((offset) => offset.offset)).toEqual([60n, 120n]);
    const members = (await second.groups.describeGroup({ groupId })).members;
    expect(members.map((member) => member.memberId)).toEqual([joined.memberId]);
    for (const coordinator of [first, second]) coordinator.shards.stop();
  });

  it('deletes nothing when another writer appended since its own last write', async () => {
    const leaders = new FakeLeaders();
    const first = startCoordinator(leaders, [shard], 1, 10);
    await loaded(first.shards, 1);
    const joined = await first.groups.heartbeat(join);
    // A newer owner (which the first has not heard of) wrote its marker and a commit.
    await leaders.append(
      consumerOffsetsTopic,
      shard,
      encodeOffsetsBatch(
        [
          { kind: 'shard-epoch', coordinatorId: 'newer' },
          {
            kind: 'offset',
            groupId: 'other-group',
            topic: 'orders',
            partition: 0,
            committed: { offset: 9n, metadata: '', commitTimestampMs: 1n, leaderEpoch: -1 },
          },
        ],
        2,
        Date.now(),
      ),
    );
    await commitOneByOne(first.groups, joined, 15n);
    // The first checkpoint's marker did not land after the first owner's own last write.
    expect(leaders.logStarts.get(shard) ?? 0n).toBe(0n);
    first.shards.stop();
  });

  it('replays checkpoints whose deletions never happened after the records they restate', async () => {
    const leaders = new FakeLeaders();
    leaders.refuseDeletes = true;
    const first = startCoordinator(leaders, [shard], 1, 10);
    await loaded(first.shards, 1);
    const joined = await first.groups.heartbeat(join);
    await commitOneByOne(first.groups, joined, 40n);
    expect(leaders.logStarts.get(shard) ?? 0n).toBe(0n);

    // The whole history, checkpoints (restating the group epoch and members) included.
    const second = startCoordinator(leaders, [shard], 2, 10);
    await loaded(second.shards, 1);
    const served = await second.groups.offsetFetch({ groupId, partitions: [] });
    expect(served.offsets.map((offset) => offset.offset)).toEqual([40n]);
    const described = await second.groups.describeGroup({ groupId });
    expect(described.members.map((member) => member.memberId)).toEqual([joined.memberId]);
    for (const coordinator of [first, second]) coordinator.shards.stop();
  });
});
