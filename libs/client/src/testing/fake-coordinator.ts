import { SpoolError } from '@spool/common';
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
 * A small in-memory group coordinator for the SDK's unit tests, behind the fake gateway. It
 * follows the contract of KIP-848 as PLAN.md states it, so the SDK's membership loop can be
 * tested against the same rules the real coordinator keeps:
 * - a heartbeat at epoch 0 joins (a new member id if none is given); -1 leaves; -2 leaves as a
 *   static member, whose assignment stays reserved for its instance id: a member joining with
 *   that instance id gets a new member id and inherits the epoch and partitions (no rebalance);
 * - joining, leaving and subscription changes bump the group epoch and recompute the target
 *   assignment (`uniform`: round robin over the sorted partitions; `range`: contiguous ranges
 *   per topic), each member converging to it in steps: partitions it owns but should not are
 *   revoked first (its epoch unchanged) and released only once a heartbeat no longer reports
 *   them; a partition is handed out only once no other member owns or is revoking it; a member
 *   holding exactly its target moves to the target's epoch;
 * - any other epoch than the member's is fenced (FENCED_MEMBER_EPOCH); an unknown member gets
 *   UNKNOWN_MEMBER_ID; commits are refused unless from the current member at its current epoch
 *   (STALE_MEMBER_EPOCH), or from nobody (id '', epoch -1) while the group has no members;
 * - delete and offset reset only while the group has no members (NON_EMPTY_GROUP).
 * No session timeouts: tests remove members with `fenceMember` or `expireMember`. Every
 * heartbeat checks that no partition is owned or being revoked by two members at once and
 * records a violation if one is (`violations`).
 */

export interface FakeLogView {
  partitionCount(topic: string): number | undefined;
  topicNames(): string[];
  logStartOffset(topic: string, partition: number): bigint;
  highWatermark(topic: string, partition: number): bigint;
  /** First offset of a batch whose max timestamp is at or after `timestampMs`; -1n if none. */
  offsetForTimestamp(topic: string, partition: number, timestampMs: bigint): bigint;
}

export interface FakeMember {
  readonly memberId: string;
  readonly instanceId: string;
  memberEpoch: number;
  subscribedTopics: string[];
  subscribedRegex: string;
  /** What the member was told it owns. */
  assigned: TopicPartition[];
  /** Told to give these up; released once a heartbeat no longer reports them. */
  pendingRevocation: TopicPartition[];
  /** A static member that left with -2: its partitions wait for its instance id. */
  departed: boolean;
  lastSentAssignment: string | undefined;
}

export interface FakeGroup {
  readonly groupId: string;
  groupEpoch: number;
  assignmentEpoch: number;
  assignor: string;
  readonly members: Map<string, FakeMember>;
  target: Map<string, TopicPartition[]>;
  readonly offsets: Map<string, { offset: bigint; metadata: string; commitTimestampMs: bigint }>;
}

export interface InjectedFailure {
  readonly code: string;
  /** response: in the `error` field of the answer; status: as a failed gRPC call. */
  readonly via: 'response' | 'status';
}

export class FakeCoordinator {
  readonly groups = new Map<string, FakeGroup>();
  readonly heartbeats: { request: ConsumerGroupHeartbeatRequest; atMs: number }[] = [];
  readonly commits: { request: OffsetCommitRequest; atMs: number }[] = [];
  readonly violations: string[] = [];
  heartbeatIntervalMs = 50;
  private readonly heartbeatFailures: InjectedFailure[] = [];
  private readonly fencedMemberIds = new Set<string>();
  private nextMemberNumber = 1;

  constructor(private readonly logs: FakeLogView) {}

  /** The next heartbeats (of any member) fail, in order. */
  failHeartbeats(...failures: InjectedFailure[]): void {
    this.heartbeatFailures.push(...failures);
  }

  /** Removes the member as a rebalance timeout would: its next heartbeat is fenced. */
  fenceMember(groupId: string, memberId: string): void {
    this.removeMember(this.groupOf(groupId)!, memberId);
    this.fencedMemberIds.add(memberId);
  }

  /** Removes the member as a session timeout would: its next heartbeat is UNKNOWN_MEMBER_ID. */
  expireMember(groupId: string, memberId: string): void {
    this.removeMember(this.groupOf(groupId)!, memberId);
  }

  groupOf(groupId: string): FakeGroup | undefined {
    return this.groups.get(groupId);
  }

  committedOffset(groupId: string, topic: string, partition: number): bigint | undefined {
    return this.groups.get(groupId)?.offsets.get(keyOf({ topic, partition }))?.offset;
  }

  /** Sets a committed offset directly, as an earlier member would have. */
  setCommittedOffset(groupId: string, topic: string, partition: number, offset: bigint): void {
    this.ensureGroup(groupId).offsets.set(keyOf({ topic, partition }), {
      offset,
      metadata: '',
      commitTimestampMs: BigInt(Date.now()),
    });
  }

  heartbeat(request: ConsumerGroupHeartbeatRequest): ConsumerGroupHeartbeatResponse {
    this.heartbeats.push({ request, atMs: Date.now() });
    const failure = this.heartbeatFailures.shift();
    if (failure !== undefined) {
      const error = coordinatorError(failure.code, `injected ${failure.code}`);
      if (failure.via === 'status') {
        throw new SpoolError(error.code, error.message, { retriable: error.retriable });
      }
      return heartbeatResponse({ error });
    }
    if (request.groupId === '') return heartbeatResponse({ error: invalid('groupId is empty') });
    const group = this.ensureGroup(request.groupId);
    if (request.assignor !== '') group.assignor = request.assignor;
    if (request.memberEpoch === -1 || request.memberEpoch === -2) {
      return this.leave(group, request);
    }
    let member: FakeMember;
    if (request.memberEpoch === 0) {
      const joined = this.join(group, request);
      if ('error' in joined) return heartbeatResponse({ error: joined.error });
      member = joined.member;
    } else {
      const known = group.members.get(request.memberId);
      if (known === undefined || known.departed) {
        const code = this.fencedMemberIds.has(request.memberId)
          ? 'FENCED_MEMBER_EPOCH'
          : 'UNKNOWN_MEMBER_ID';
        return heartbeatResponse({ error: coordinatorError(code, `member ${request.memberId}`) });
      }
      if (known.memberEpoch !== request.memberEpoch) {
        return heartbeatResponse({
          error: coordinatorError(
            'FENCED_MEMBER_EPOCH',
            `member ${known.memberId} is at epoch ${known.memberEpoch}, not ${request.memberEpoch}`,
          ),
        });
      }
      member = known;
      this.updateSubscription(group, member, request);
    }
    this.acknowledge(member, request.ownedPartitions);
    this.reconcile(group, member);
    this.checkInvariants(group);
    const assignmentKey = describe(member.assigned);
    const changed = member.lastSentAssignment !== assignmentKey;
    member.lastSentAssignment = assignmentKey;
    return heartbeatResponse({
      memberId: member.memberId,
      memberEpoch: member.memberEpoch,
      heartbeatIntervalMs: this.heartbeatIntervalMs,
      assignment: changed ? { partitions: member.assigned.map((tp) => ({ ...tp })) } : undefined,
    });
  }

  offsetCommit(request: OffsetCommitRequest): OffsetCommitResponse {
    this.commits.push({ request, atMs: Date.now() });
    const group = this.ensureGroup(request.groupId);
    const error = this.validateCommit(group, request.memberId, request.memberEpoch);
    return {
      results: request.offsets.map(({ topic, partition, offset, metadata }) => {
        if (error === undefined) {
          group.offsets.set(keyOf({ topic, partition }), {
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
    const group = this.groups.get(request.groupId);
    const partitions =
      request.partitions.length > 0
        ? request.partitions
        : [...(group?.offsets.keys() ?? [])].map(fromKey);
    return {
      error: undefined,
      offsets: partitions.map(({ topic, partition }) => {
        const committed = group?.offsets.get(keyOf({ topic, partition }));
        return {
          topic,
          partition,
          offset: committed?.offset ?? -1n,
          metadata: committed?.metadata ?? '',
          commitTimestampMs: committed?.commitTimestampMs ?? -1n,
          error: undefined,
        };
      }),
    };
  }

  listGroups(): { groups: { groupId: string; state: string }[] } {
    return {
      groups: [...this.groups.values()].map((group) => ({
        groupId: group.groupId,
        state: stateOf(group),
      })),
    };
  }

  describeGroup(groupId: string): DescribeGroupResponse {
    const group = this.groups.get(groupId);
    if (group === undefined) {
      return {
        error: coordinatorError('GROUP_ID_NOT_FOUND', `group ${groupId} does not exist`),
        groupId,
        state: 'DEAD',
        groupEpoch: 0,
        members: [],
        partitions: [],
      };
    }
    const partitions = new Map<string, TopicPartition>();
    for (const key of group.offsets.keys()) partitions.set(key, fromKey(key));
    for (const member of group.members.values()) {
      for (const tp of member.assigned) partitions.set(keyOf(tp), tp);
    }
    return {
      error: undefined,
      groupId,
      state: stateOf(group),
      groupEpoch: group.groupEpoch,
      members: [...group.members.values()].map((member) => ({
        memberId: member.memberId,
        instanceId: member.instanceId,
        memberEpoch: member.memberEpoch,
        assignment: member.assigned.map((tp) => ({ ...tp })),
      })),
      partitions: [...partitions.values()].map(({ topic, partition }) => {
        const committedOffset = group.offsets.get(keyOf({ topic, partition }))?.offset ?? -1n;
        const highWatermark = this.logs.highWatermark(topic, partition);
        const from =
          committedOffset >= 0n ? committedOffset : this.logs.logStartOffset(topic, partition);
        return { topic, partition, committedOffset, highWatermark, lag: highWatermark - from };
      }),
    };
  }

  deleteGroup(groupId: string): { error: ProtoError | undefined } {
    const group = this.groups.get(groupId);
    if (group === undefined) {
      return { error: coordinatorError('GROUP_ID_NOT_FOUND', `group ${groupId} does not exist`) };
    }
    if (group.members.size > 0) {
      return { error: coordinatorError('NON_EMPTY_GROUP', `group ${groupId} has members`) };
    }
    this.groups.delete(groupId);
    return { error: undefined };
  }

  resetOffsets(request: ResetOffsetsRequest): ResetOffsetsResponse {
    // As Kafka's tool does, a reset may set up the offsets of a group nobody joined yet.
    const group = this.ensureGroup(request.groupId);
    if (group.members.size > 0) {
      return {
        error: coordinatorError('NON_EMPTY_GROUP', `group ${request.groupId} has members`),
        offsets: [],
      };
    }
    const partitions =
      request.partitions.length > 0 ? request.partitions : [...group.offsets.keys()].map(fromKey);
    const offsets = partitions.map(({ topic, partition }) => {
      const base = { topic, partition, metadata: '', commitTimestampMs: BigInt(Date.now()) };
      if ((this.logs.partitionCount(topic) ?? 0) <= partition) {
        return {
          ...base,
          offset: -1n,
          error: coordinatorError('UNKNOWN_TOPIC_OR_PARTITION', `${topic}[${partition}]`),
        };
      }
      const offset = this.resetTarget(request, topic, partition);
      group.offsets.set(keyOf({ topic, partition }), {
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

  private ensureGroup(groupId: string): FakeGroup {
    let group = this.groups.get(groupId);
    if (group === undefined) {
      group = {
        groupId,
        groupEpoch: 0,
        assignmentEpoch: 0,
        assignor: 'uniform',
        members: new Map(),
        target: new Map(),
        offsets: new Map(),
      };
      this.groups.set(groupId, group);
    }
    return group;
  }

  private join(
    group: FakeGroup,
    request: ConsumerGroupHeartbeatRequest,
  ): { member: FakeMember } | { error: ProtoError } {
    if (request.instanceId !== '') {
      const holder = [...group.members.values()].find(
        (member) => member.instanceId === request.instanceId,
      );
      if (holder !== undefined && !holder.departed && holder.memberId !== request.memberId) {
        return {
          error: coordinatorError(
            'UNRELEASED_INSTANCE_ID',
            `instance ${request.instanceId} is held by member ${holder.memberId}`,
          ),
        };
      }
      if (holder !== undefined && holder.memberId === request.memberId) {
        holder.departed = false;
        holder.lastSentAssignment = undefined;
        this.updateSubscription(group, holder, request);
        return { member: holder };
      }
      if (holder !== undefined) {
        // A static member back within its session: a new member id that inherits the epoch,
        // the partitions and the target of the one that left, without a rebalance.
        const replacement: FakeMember = {
          ...holder,
          memberId: `member-${this.nextMemberNumber++}`,
          departed: false,
          lastSentAssignment: undefined,
        };
        group.members.delete(holder.memberId);
        group.members.set(replacement.memberId, replacement);
        const target = group.target.get(holder.memberId);
        group.target.delete(holder.memberId);
        if (target !== undefined) group.target.set(replacement.memberId, target);
        this.updateSubscription(group, replacement, request);
        return { member: replacement };
      }
    }
    const existing = group.members.get(request.memberId);
    if (existing !== undefined) {
      // A known member joining again gave up everything it had (it was fenced or lost them).
      existing.assigned = [];
      existing.pendingRevocation = [];
      existing.memberEpoch = 0;
      existing.lastSentAssignment = undefined;
      this.updateSubscription(group, existing, request);
      return { member: existing };
    }
    const member: FakeMember = {
      memberId: request.memberId !== '' ? request.memberId : `member-${this.nextMemberNumber++}`,
      instanceId: request.instanceId,
      memberEpoch: 0,
      subscribedTopics: [...request.subscribedTopics],
      subscribedRegex: request.subscribedRegex,
      assigned: [],
      pendingRevocation: [],
      departed: false,
      lastSentAssignment: undefined,
    };
    this.fencedMemberIds.delete(member.memberId);
    group.members.set(member.memberId, member);
    this.bumpGroupEpoch(group);
    return { member };
  }

  private leave(
    group: FakeGroup,
    request: ConsumerGroupHeartbeatRequest,
  ): ConsumerGroupHeartbeatResponse {
    const member = group.members.get(request.memberId);
    if (member === undefined) {
      return heartbeatResponse({
        error: coordinatorError('UNKNOWN_MEMBER_ID', `member ${request.memberId}`),
      });
    }
    if (request.memberEpoch === -2 && member.instanceId !== '') {
      member.departed = true;
      member.pendingRevocation = [];
    } else {
      this.removeMember(group, member.memberId);
    }
    return heartbeatResponse({ memberId: member.memberId, memberEpoch: request.memberEpoch });
  }

  private removeMember(group: FakeGroup, memberId: string): void {
    if (!group.members.delete(memberId)) throw new Error(`no member ${memberId}`);
    this.bumpGroupEpoch(group);
  }

  private updateSubscription(
    group: FakeGroup,
    member: FakeMember,
    request: ConsumerGroupHeartbeatRequest,
  ): void {
    const topics = [...request.subscribedTopics];
    if (
      describeNames(topics) === describeNames(member.subscribedTopics) &&
      request.subscribedRegex === member.subscribedRegex
    ) {
      return;
    }
    member.subscribedTopics = topics;
    member.subscribedRegex = request.subscribedRegex;
    this.bumpGroupEpoch(group);
  }

  private bumpGroupEpoch(group: FakeGroup): void {
    group.groupEpoch += 1;
    group.assignmentEpoch = group.groupEpoch;
    group.target = this.computeTarget(group);
  }

  /** Partitions of each member's subscription, spread by the group's assignor. */
  private computeTarget(group: FakeGroup): Map<string, TopicPartition[]> {
    const members = [...group.members.values()].sort((left, right) =>
      left.memberId.localeCompare(right.memberId),
    );
    const target = new Map<string, TopicPartition[]>(
      members.map((member) => [member.memberId, []]),
    );
    const topics = new Set<string>();
    for (const member of members)
      for (const topic of this.subscribedTopics(member)) topics.add(topic);
    let cursor = 0;
    for (const topic of [...topics].sort()) {
      const eligible = members.filter((member) => this.subscribedTopics(member).includes(topic));
      const count = this.logs.partitionCount(topic) ?? 0;
      for (let partition = 0; partition < count; partition++) {
        const owner =
          group.assignor === 'range'
            ? eligible[Math.floor((partition * eligible.length) / count)]!
            : eligible[cursor++ % eligible.length]!;
        target.get(owner.memberId)!.push({ topic, partition });
      }
    }
    return target;
  }

  private subscribedTopics(member: FakeMember): string[] {
    const names = member.subscribedTopics.filter(
      (topic) => this.logs.partitionCount(topic) !== undefined,
    );
    if (member.subscribedRegex === '') return names;
    const expression = new RegExp(`^(?:${member.subscribedRegex})$`);
    return [
      ...new Set([...names, ...this.logs.topicNames().filter((name) => expression.test(name))]),
    ];
  }

  /** Partitions no longer reported as owned are released from revocation. */
  private acknowledge(member: FakeMember, owned: readonly TopicPartition[]): void {
    const ownedKeys = new Set(owned.map(keyOf));
    member.pendingRevocation = member.pendingRevocation.filter((tp) => ownedKeys.has(keyOf(tp)));
  }

  private reconcile(group: FakeGroup, member: FakeMember): void {
    const target = group.target.get(member.memberId) ?? [];
    const targetKeys = new Set(target.map(keyOf));
    const revoked = member.assigned.filter((tp) => !targetKeys.has(keyOf(tp)));
    if (revoked.length > 0) {
      member.assigned = member.assigned.filter((tp) => targetKeys.has(keyOf(tp)));
      member.pendingRevocation.push(...revoked);
    }
    if (member.pendingRevocation.length > 0) return;
    const taken = new Set<string>();
    for (const other of group.members.values()) {
      if (other === member) continue;
      for (const tp of [...other.assigned, ...other.pendingRevocation]) taken.add(keyOf(tp));
    }
    const assignedKeys = new Set(member.assigned.map(keyOf));
    for (const tp of target) {
      if (!assignedKeys.has(keyOf(tp)) && !taken.has(keyOf(tp))) member.assigned.push({ ...tp });
    }
    if (member.assigned.length === target.length) member.memberEpoch = group.assignmentEpoch;
    else if (member.memberEpoch === 0) member.memberEpoch = group.groupEpoch;
  }

  private validateCommit(
    group: FakeGroup,
    memberId: string,
    memberEpoch: number,
  ): ProtoError | undefined {
    if (memberId === '' && memberEpoch === -1) {
      return group.members.size === 0
        ? undefined
        : coordinatorError('UNKNOWN_MEMBER_ID', 'the group has members: commit as one of them');
    }
    const member = group.members.get(memberId);
    if (member === undefined || member.departed) {
      return coordinatorError('UNKNOWN_MEMBER_ID', `member ${memberId}`);
    }
    if (member.memberEpoch !== memberEpoch) {
      return coordinatorError(
        'STALE_MEMBER_EPOCH',
        `member ${memberId} is at epoch ${member.memberEpoch}, the commit says ${memberEpoch}`,
      );
    }
    return undefined;
  }

  private checkInvariants(group: FakeGroup): void {
    const owners = new Map<string, string>();
    for (const member of group.members.values()) {
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

function stateOf(group: FakeGroup): string {
  const members = [...group.members.values()];
  if (members.length === 0) return 'EMPTY';
  const converged = members.every(
    (member) =>
      member.pendingRevocation.length === 0 &&
      describe(member.assigned) === describe(group.target.get(member.memberId) ?? []),
  );
  return converged ? 'STABLE' : 'RECONCILING';
}

function heartbeatResponse(
  fields: Partial<ConsumerGroupHeartbeatResponse>,
): ConsumerGroupHeartbeatResponse {
  return {
    error: undefined,
    memberId: '',
    memberEpoch: 0,
    heartbeatIntervalMs: 0,
    assignment: undefined,
    ...fields,
  };
}

const retriableCoordinatorCodes = new Set([
  'NOT_COORDINATOR',
  'COORDINATOR_NOT_AVAILABLE',
  'COORDINATOR_LOAD_IN_PROGRESS',
]);

function coordinatorError(code: string, message: string): ProtoError {
  return { code, message, retriable: retriableCoordinatorCodes.has(code) };
}

function invalid(message: string): ProtoError {
  return { code: 'INVALID_REQUEST', message, retriable: false };
}

function keyOf(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}

function fromKey(key: string): TopicPartition {
  const [topic, partition] = key.split('\u0000');
  return { topic: topic!, partition: Number(partition) };
}

function describe(partitions: readonly TopicPartition[]): string {
  return partitions.map(keyOf).sort().join(',');
}

function describeNames(names: readonly string[]): string {
  return [...names].sort().join(',');
}
