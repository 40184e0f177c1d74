import { ConsumerGroup, type TopicPartitionCounts } from '@spool/consumer-group';
import { SpoolError, wireErrorOf } from '@spool/common';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  DescribeGroupResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  ProtoError,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
  TopicPartition,
} from '@spool/protocol';

/**
 * An in-memory group coordinator for the SDK's unit tests, behind the fake gateway: a thin adapter
 * over the real KIP-848 state machine (@spool/consumer-group's ConsumerGroup, the coordinator's
 * own), so the SDK's membership loop meets the real rules, the real sticky `uniform` assignor and
 * the real member order. What the adapter adds is what the coordinator runtime adds around the
 * group, kept in memory: committed offsets, ListGroups, DescribeGroup (lag as the coordinator
 * computes it), DeleteGroup and ResetOffsets, answered as apps/coordinator's group-coordinator.ts
 * answers them. Records the group emits are applied by it already; nothing persists them.
 *
 * Time: no session or rebalance timeouts run by themselves. A test removes a member as its
 * timeout would with `expireMember` (its next heartbeat: UNKNOWN_MEMBER_ID, as the real one
 * answers) or `fenceMember` (the same removal, and its next heartbeat answered
 * FENCED_MEMBER_EPOCH, as a member whose epoch fell behind is answered), and injects failures of
 * the next heartbeats with `failHeartbeats`. Every heartbeat checks that no partition is owned or
 * being revoked by two members at once and records a violation if one is (`violations`).
 */

export interface FakeLogView {
  partitionCount(topic: string): number | undefined;
  topicNames(): string[];
  logStartOffset(topic: string, partition: number): bigint;
  highWatermark(topic: string, partition: number): bigint;
  /** First offset of a batch whose max timestamp is at or after `timestampMs`; -1n if none. */
  offsetForTimestamp(topic: string, partition: number, timestampMs: bigint): bigint;
}

export interface InjectedFailure {
  readonly code: string;
  /** response: in the `error` field of the answer; status: as a failed gRPC call. */
  readonly via: 'response' | 'status';
}

interface CommittedOffset {
  offset: bigint;
  metadata: string;
  commitTimestampMs: bigint;
}

/** Long enough that no member's session runs out during a test: expiry is the test's call. */
const sessionTimeoutMs = 3_600_000;

export class FakeCoordinator {
  readonly heartbeats: { request: ConsumerGroupHeartbeatRequest; atMs: number }[] = [];
  readonly commits: { request: OffsetCommitRequest; atMs: number }[] = [];
  readonly violations: string[] = [];
  /** The interval every heartbeat answer asks for (the coordinator's config). */
  heartbeatIntervalMs = 50;
  private readonly groups = new Map<string, ConsumerGroup>();
  private readonly offsets = new Map<string, Map<string, CommittedOffset>>();
  private readonly heartbeatFailures: InjectedFailure[] = [];
  private readonly fencedMemberIds = new Set<string>();
  private readonly topics: TopicPartitionCounts;
  private nextMemberNumber = 1;

  constructor(private readonly logs: FakeLogView) {
    this.topics = {
      partitionCount: (topic) => logs.partitionCount(topic),
      topicNames: () => logs.topicNames(),
    };
  }

  /** The next heartbeats (of any member) fail, in order. */
  failHeartbeats(...failures: InjectedFailure[]): void {
    this.heartbeatFailures.push(...failures);
  }

  /** Removes the member as a rebalance timeout would; its next heartbeat is fenced. */
  fenceMember(groupId: string, memberId: string): void {
    this.requireGroup(groupId).fenceMember(memberId, Date.now());
    this.fencedMemberIds.add(memberId);
  }

  /** Removes the member as a session timeout would: its next heartbeat is UNKNOWN_MEMBER_ID. */
  expireMember(groupId: string, memberId: string): void {
    this.requireGroup(groupId).fenceMember(memberId, Date.now());
  }

  /** The group's state machine, as the coordinator holds it; undefined before any member. */
  groupOf(groupId: string): ConsumerGroup | undefined {
    return this.groups.get(groupId);
  }

  committedOffset(groupId: string, topic: string, partition: number): bigint | undefined {
    return this.offsets.get(groupId)?.get(keyOf({ topic, partition }))?.offset;
  }

  /** Sets a committed offset directly, as an earlier member would have. */
  setCommittedOffset(groupId: string, topic: string, partition: number, offset: bigint): void {
    this.offsetsOf(groupId).set(keyOf({ topic, partition }), {
      offset,
      metadata: '',
      commitTimestampMs: BigInt(Date.now()),
    });
  }

  heartbeat(request: ConsumerGroupHeartbeatRequest): ConsumerGroupHeartbeatResponse {
    this.heartbeats.push({ request, atMs: Date.now() });
    const failure = this.heartbeatFailures.shift();
    if (failure !== undefined) {
      const error = new SpoolError(failure.code, `injected ${failure.code}`);
      if (failure.via === 'status') throw error;
      return this.refused(request, wireErrorOf(error));
    }
    if (this.fencedMemberIds.delete(request.memberId) && request.memberEpoch > 0) {
      return this.refused(
        request,
        wireErrorOf(
          new SpoolError(
            'FENCED_MEMBER_EPOCH',
            `member '${request.memberId}' was fenced; release every partition and rejoin with ` +
              'epoch 0',
          ),
        ),
      );
    }
    try {
      if (request.groupId === '') throw new SpoolError('INVALID_REQUEST', 'groupId is empty');
      // As the coordinator does: a group is kept once a heartbeat changed it.
      const group = this.groups.get(request.groupId) ?? this.newGroup(request.groupId);
      const { response, records } = group.heartbeat(request, this.topics, Date.now());
      if (records.length > 0) this.groups.set(request.groupId, group);
      this.checkInvariants(group);
      return { ...response, heartbeatIntervalMs: this.heartbeatIntervalMs };
    } catch (error) {
      return this.refused(request, wireErrorOf(error));
    }
  }

  offsetCommit(request: OffsetCommitRequest): OffsetCommitResponse {
    this.commits.push({ request, atMs: Date.now() });
    let error: ProtoError | undefined;
    try {
      const group = this.groups.get(request.groupId);
      if (group !== undefined) group.validateOffsetCommit(request.memberId, request.memberEpoch);
      else if (request.memberId !== '' || request.memberEpoch !== -1) {
        throw new SpoolError(
          'UNKNOWN_MEMBER_ID',
          `group "${request.groupId}" has no member "${request.memberId}"; a commit outside a ` +
            'group needs an empty member_id and member_epoch -1',
        );
      }
    } catch (refusal) {
      error = wireErrorOf(refusal);
    }
    return {
      results: request.offsets.map(({ topic, partition, offset, metadata }) => {
        if (error === undefined) {
          this.offsetsOf(request.groupId).set(keyOf({ topic, partition }), {
            offset,
            metadata,
            commitTimestampMs: BigInt(Date.now()),
          });
        }
        return { topic, partition, error };
      }),
    };
  }

  offsetFetch(request: OffsetFetchRequest): OffsetFetchResponse {
    if (request.memberId !== undefined) {
      try {
        this.groups
          .get(request.groupId)
          ?.validateOffsetFetch(request.memberId, request.memberEpoch ?? -1);
      } catch (refusal) {
        return { error: wireErrorOf(refusal), offsets: [] };
      }
    }
    const committed = this.offsets.get(request.groupId);
    const partitions =
      request.partitions.length > 0
        ? request.partitions
        : [...(committed?.keys() ?? [])].map(fromKey);
    return {
      error: undefined,
      offsets: partitions.map(({ topic, partition }) => {
        const found = committed?.get(keyOf({ topic, partition }));
        return {
          topic,
          partition,
          offset: found?.offset ?? -1n,
          metadata: found?.metadata ?? '',
          commitTimestampMs: found?.commitTimestampMs ?? -1n,
          error: undefined,
        };
      }),
    };
  }

  listGroups(): { groups: { groupId: string; state: string }[] } {
    const groupIds = new Set([...this.groups.keys(), ...this.offsets.keys()]);
    return {
      groups: [...groupIds]
        .sort((left, right) => left.localeCompare(right))
        .map((groupId) => ({ groupId, state: this.groups.get(groupId)?.state ?? 'EMPTY' })),
    };
  }

  describeGroup(groupId: string): DescribeGroupResponse {
    const group = this.groups.get(groupId);
    const committed = this.offsets.get(groupId) ?? new Map<string, CommittedOffset>();
    if (group === undefined && committed.size === 0) {
      return {
        error: wireErrorOf(
          new SpoolError('GROUP_ID_NOT_FOUND', `group "${groupId}" does not exist`),
        ),
        groupId,
        state: 'DEAD',
        groupEpoch: 0,
        members: [],
        partitions: [],
        assignor: '',
        assignmentEpoch: 0,
      };
    }
    const members = group?.describeMembers() ?? [];
    const partitions = new Map<string, TopicPartition>();
    for (const key of committed.keys()) partitions.set(key, fromKey(key));
    for (const member of members) {
      for (const tp of member.assignment) partitions.set(keyOf(tp), tp);
    }
    return {
      error: undefined,
      groupId,
      state: group?.state ?? 'EMPTY',
      groupEpoch: group?.groupEpoch ?? 0,
      assignor: group?.assignorName ?? '',
      assignmentEpoch: group?.assignmentEpoch ?? 0,
      members,
      partitions: [...partitions.values()]
        .sort(
          (left, right) =>
            left.topic.localeCompare(right.topic) || left.partition - right.partition,
        )
        .map(({ topic, partition }) => {
          // As the coordinator computes lag: -1 with nothing committed, never below 0.
          const committedOffset = committed.get(keyOf({ topic, partition }))?.offset ?? -1n;
          const highWatermark = this.logs.highWatermark(topic, partition);
          const lag = highWatermark - committedOffset;
          return {
            topic,
            partition,
            committedOffset,
            highWatermark,
            lag: committedOffset < 0n ? -1n : lag > 0n ? lag : 0n,
          };
        }),
    };
  }

  deleteGroup(groupId: string): { error: ProtoError | undefined } {
    const group = this.groups.get(groupId);
    if (group === undefined && !this.offsets.has(groupId)) {
      return {
        error: wireErrorOf(
          new SpoolError('GROUP_ID_NOT_FOUND', `group "${groupId}" does not exist`),
        ),
      };
    }
    if (group !== undefined && !group.isEmpty()) {
      return {
        error: wireErrorOf(
          new SpoolError(
            'NON_EMPTY_GROUP',
            `group "${groupId}" still has members; stop them before deleting it`,
          ),
        ),
      };
    }
    group?.delete(Date.now());
    this.groups.delete(groupId);
    this.offsets.delete(groupId);
    return { error: undefined };
  }

  resetOffsets(request: ResetOffsetsRequest): ResetOffsetsResponse {
    // As Kafka's tool does, a reset may set up the offsets of a group nobody joined yet.
    const group = this.groups.get(request.groupId);
    if (group !== undefined && !group.isEmpty()) {
      return {
        error: wireErrorOf(
          new SpoolError('NON_EMPTY_GROUP', `group ${request.groupId} has members`),
        ),
        offsets: [],
      };
    }
    const committed = this.offsetsOf(request.groupId);
    const partitions =
      request.partitions.length > 0 ? request.partitions : [...committed.keys()].map(fromKey);
    const offsets = partitions.map(({ topic, partition }) => {
      const base = { topic, partition, metadata: '', commitTimestampMs: BigInt(Date.now()) };
      if ((this.logs.partitionCount(topic) ?? 0) <= partition) {
        return {
          ...base,
          offset: -1n,
          error: wireErrorOf(
            new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `${topic}[${partition}]`),
          ),
        };
      }
      const offset = this.resetTarget(request, topic, partition);
      committed.set(keyOf({ topic, partition }), {
        offset,
        metadata: '',
        commitTimestampMs: base.commitTimestampMs,
      });
      return { ...base, offset, error: undefined };
    });
    return { error: undefined, offsets };
  }

  private resetTarget(request: ResetOffsetsRequest, topic: string, partition: number): bigint {
    const start = this.logs.logStartOffset(topic, partition);
    const end = this.logs.highWatermark(topic, partition);
    switch (request.strategy) {
      case 'earliest':
        return start;
      case 'latest':
        return end;
      case 'timestamp': {
        const found = this.logs.offsetForTimestamp(topic, partition, request.timestampMs);
        return found < 0n ? end : found;
      }
      default:
        return request.offset < start ? start : request.offset > end ? end : request.offset;
    }
  }

  private newGroup(groupId: string): ConsumerGroup {
    return new ConsumerGroup(
      groupId,
      { sessionTimeoutMs, heartbeatIntervalMs: this.heartbeatIntervalMs },
      { generateMemberId: () => `member-${this.nextMemberNumber++}` },
    );
  }

  private requireGroup(groupId: string): ConsumerGroup {
    const group = this.groups.get(groupId);
    if (group === undefined) throw new Error(`no group ${groupId}`);
    return group;
  }

  private offsetsOf(groupId: string): Map<string, CommittedOffset> {
    let committed = this.offsets.get(groupId);
    if (committed === undefined) {
      committed = new Map();
      this.offsets.set(groupId, committed);
    }
    return committed;
  }

  /** The coordinator's answer to a refused heartbeat. */
  private refused(
    request: ConsumerGroupHeartbeatRequest,
    error: ProtoError,
  ): ConsumerGroupHeartbeatResponse {
    return {
      error,
      memberId: request.memberId,
      memberEpoch: request.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: undefined,
    };
  }

  private checkInvariants(group: ConsumerGroup): void {
    const owners = new Map<string, string>();
    for (const member of group.snapshot().members) {
      for (const tp of [...member.assigned, ...member.pendingRevocation]) {
        const previous = owners.get(keyOf(tp));
        if (previous !== undefined && previous !== member.memberId) {
          this.violations.push(
            `${tp.topic}[${tp.partition}] owned by ${previous} and ${member.memberId}`,
          );
        }
        owners.set(keyOf(tp), member.memberId);
      }
    }
  }
}

function keyOf(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}

function fromKey(key: string): TopicPartition {
  const [topic, partition] = key.split('\u0000');
  return { topic: topic!, partition: Number(partition) };
}
