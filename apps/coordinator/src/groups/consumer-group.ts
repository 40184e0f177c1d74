import { randomUUID } from 'node:crypto';
import { assert, assertNever, SpoolError } from '@spool/common';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
} from '@spool/protocol';
import { compareMemberIds, computeTargetAssignment, type TargetAssignment } from './assignor';
import { reconcile, type ReconciledMember } from './current-assignment-builder';
import { GroupErrorCode, unknownMember } from './group-errors';
import { parseHeartbeatRequest, type HeartbeatRequest } from './heartbeat-request';
import {
  joinGroupEpoch,
  leaveGroupEpoch,
  memberFieldsOf,
  memberRecordOf,
  rebalanceTimeoutMsDefault,
  staticMemberAwayEpoch,
  type GroupMember,
} from './member';
import {
  isPartitionSubset,
  partitionList,
  partitionSetOf,
  partitionSetsEqual,
  type PartitionSet,
} from './partition-set';
import { compileSubscribedRegex, resolveSubscription } from './subscription';
import {
  groupLimitsDefault,
  type AssignorName,
  type GroupLimits,
  type GroupRecord,
  type GroupSnapshot,
  type GroupState,
  type GroupTimeouts,
  type MemberRecord,
  type TopicPartitionCounts,
} from './types';

export interface ConsumerGroupOptions {
  limits?: Partial<GroupLimits>;
  /** Member ids for members that join without one; a random UUID by default. */
  generateMemberId?: () => string;
}

/**
 * Topic → partition count of every existing topic some member subscribes to (Kafka's
 * subscription metadata), and the existing topics each distinct subscription covers.
 */
interface SubscriptionMetadata {
  topics: Map<string, number>;
  bySubscription: Map<string, Set<string>>;
}

/** A subscription as members share it, with how many members hold it. */
interface SharedSubscription {
  subscribedTopics: string[];
  subscribedRegex: string;
  memberCount: number;
}

function subscriptionKey(member: { subscribedTopics: string[]; subscribedRegex: string }): string {
  return `${member.subscribedRegex}\u0000${member.subscribedTopics.join('\u0000')}`;
}

function emptyMetadata(): SubscriptionMetadata {
  return { topics: new Map(), bySubscription: new Map() };
}

/**
 * One consumer group under Kafka's KIP-848 protocol, as a pure state machine: no network, no
 * files, no timers; time comes in as `nowMs`. The coordinator runtime calls `heartbeat`,
 * `expire` and `onTopicsChanged`, persists the records each returns before answering, and on
 * takeover rebuilds the group with `replay`.
 *
 * Every change of persisted state goes through `apply`, the same function `replay` uses, so a
 * group rebuilt from the records equals the live one by construction. A heartbeat validates
 * everything that can fail before it applies its first record: a rejected request changes
 * nothing.
 *
 * Epochs: the group epoch bumps when membership, subscriptions, the assignor or the partition
 * counts of subscribed topics change; the target assignment is then recomputed at that epoch.
 * Members converge to their targets one heartbeat at a time (see current-assignment-builder.ts).
 */
export class ConsumerGroup {
  readonly groupId: string;
  private readonly timeouts: GroupTimeouts;
  private readonly limits: GroupLimits;
  private readonly generateMemberId: () => string;

  private dead = false;
  private epoch = 0;
  private assignor: AssignorName = 'uniform';
  private targetAssignmentEpoch = 0;
  private targetAssignment: TargetAssignment = new Map();
  private readonly members = new Map<string, GroupMember>();
  /** Which member holds each partition, assigned or pending revocation ("topic\0partition"). */
  private readonly holders = new Map<string, string>();
  /** Undefined after a replay, until the group next sees topic metadata. */
  private subscriptionMetadata: SubscriptionMetadata | undefined = emptyMetadata();
  /**
   * The distinct subscriptions of the members: a heartbeat re-resolves each of these against
   * the topics, not each member, so its cost does not grow with the group's size.
   */
  private readonly subscriptions = new Map<string, SharedSubscription>();
  private readonly compiledRegexes = new Map<string, RegExp>();
  private cachedState: GroupState | undefined = undefined;

  constructor(groupId: string, timeouts: GroupTimeouts, options: ConsumerGroupOptions = {}) {
    assert(Number.isInteger(timeouts.sessionTimeoutMs), 'sessionTimeoutMs is an integer');
    assert(timeouts.sessionTimeoutMs > 0, 'sessionTimeoutMs is positive');
    assert(Number.isInteger(timeouts.heartbeatIntervalMs), 'heartbeatIntervalMs is an integer');
    assert(timeouts.heartbeatIntervalMs > 0, 'heartbeatIntervalMs is positive');
    assert(
      timeouts.heartbeatIntervalMs < timeouts.sessionTimeoutMs,
      'heartbeatIntervalMs is below sessionTimeoutMs',
    );
    this.groupId = groupId;
    this.timeouts = { ...timeouts };
    this.limits = { ...groupLimitsDefault, ...options.limits };
    this.generateMemberId = options.generateMemberId ?? randomUUID;
  }

  /**
   * Derived from the members and epochs rather than stored, as Kafka derives it, so it can never
   * disagree with them; cached until the next applied record, as checking convergence walks
   * every assignment.
   */
  get state(): GroupState {
    this.cachedState ??= this.computeState();
    return this.cachedState;
  }

  private computeState(): GroupState {
    if (this.dead) return 'DEAD';
    if (this.members.size === 0) return 'EMPTY';
    if (this.epoch > this.targetAssignmentEpoch) return 'ASSIGNING';
    for (const member of this.members.values()) {
      if (!this.isConverged(member)) return 'RECONCILING';
    }
    return 'STABLE';
  }

  get groupEpoch(): number {
    return this.epoch;
  }

  get assignorName(): AssignorName {
    return this.assignor;
  }

  isEmpty(): boolean {
    return this.members.size === 0;
  }

  heartbeat(
    request: ConsumerGroupHeartbeatRequest,
    topics: TopicPartitionCounts,
    nowMs: number,
  ): { response: ConsumerGroupHeartbeatResponse; records: GroupRecord[] } {
    const parsed = parseHeartbeatRequest(request, this.groupId, this.limits, (pattern) =>
      this.compileRegex(pattern),
    );
    const records: GroupRecord[] = [];
    if (parsed.memberEpoch === leaveGroupEpoch || parsed.memberEpoch === staticMemberAwayEpoch) {
      this.leave(parsed, records, nowMs);
      return { response: this.response(parsed.memberId, parsed.memberEpoch), records };
    }
    const { member, joined } =
      parsed.memberEpoch === joinGroupEpoch
        ? this.join(parsed, records, nowMs)
        : { member: this.checkMemberEpoch(parsed), joined: false };
    // Everything that can fail has been checked: from here on the heartbeat only applies records.
    const subscriptionChanged = this.updateSubscription(member, parsed, records, nowMs);
    const assignorChanged =
      parsed.assignor !== undefined && parsed.assignor !== this.assignor && this.members.size === 1;
    const nextAssignor = assignorChanged ? parsed.assignor! : this.assignor;
    const metadataChanged = this.refreshSubscriptionMetadata(topics, nextAssignor);
    if (joined || subscriptionChanged || assignorChanged || metadataChanged) {
      this.bumpGroupEpoch(nextAssignor, records, nowMs);
    }
    this.maybeComputeTargetAssignment(records, nowMs);

    // apply() replaces member objects: look the member up again after each step.
    const before = this.members.get(member.memberId)!;
    this.reconcileMember(before, parsed.ownedPartitions, records, nowMs);
    const current = this.members.get(member.memberId)!;
    current.sessionDeadlineMs = nowMs + this.timeouts.sessionTimeoutMs;
    const assignmentChanged = !partitionSetsEqual(before.assigned, current.assigned);
    const sendAssignment =
      parsed.memberEpoch === joinGroupEpoch ||
      assignmentChanged ||
      !partitionSetsEqual(parsed.ownedPartitions, current.assigned);
    const response = this.response(current.memberId, current.memberEpoch);
    if (sendAssignment) response.assignment = { partitions: partitionList(current.assigned) };
    return { response, records };
  }

  expire(nowMs: number): GroupRecord[] {
    const records: GroupRecord[] = [];
    const expired = [...this.members.values()]
      .filter(
        (member) =>
          nowMs >= member.sessionDeadlineMs ||
          (member.revocationDeadlineMs !== undefined && nowMs >= member.revocationDeadlineMs),
      )
      .sort((left, right) => compareMemberIds(left.memberId, right.memberId));
    if (expired.length === 0) return records;
    for (const member of expired) {
      this.emit(
        records,
        { type: 'member-removed', groupId: this.groupId, memberId: member.memberId },
        nowMs,
      );
    }
    this.bumpGroupEpoch(this.assignor, records, nowMs);
    this.maybeComputeTargetAssignment(records, nowMs);
    return records;
  }

  onTopicsChanged(topics: TopicPartitionCounts, nowMs: number): GroupRecord[] {
    const records: GroupRecord[] = [];
    if (this.members.size === 0) return records;
    if (this.refreshSubscriptionMetadata(topics, this.assignor)) {
      this.bumpGroupEpoch(this.assignor, records, nowMs);
    }
    this.maybeComputeTargetAssignment(records, nowMs);
    return records;
  }

  /**
   * For DeleteGroup: only a group without members can be deleted (NON_EMPTY_GROUP otherwise).
   * The runtime deletes the committed offsets itself.
   */
  delete(nowMs: number): GroupRecord[] {
    if (this.members.size > 0) {
      throw new SpoolError(
        GroupErrorCode.NonEmptyGroup,
        `group '${this.groupId}' has ${this.members.size} members; only an empty group can be deleted`,
      );
    }
    const records: GroupRecord[] = [];
    this.emit(records, { type: 'group-deleted', groupId: this.groupId }, nowMs);
    return records;
  }

  validateOffsetCommit(memberId: string, memberEpoch: number): void {
    if (memberId === '' && memberEpoch === leaveGroupEpoch && this.members.size === 0) return;
    const member = this.members.get(memberId);
    if (member === undefined) throw unknownMember(this.groupId, memberId);
    if (memberEpoch !== member.memberEpoch) {
      throw new SpoolError(
        GroupErrorCode.StaleMemberEpoch,
        `member '${memberId}' of group '${this.groupId}' is at epoch ${member.memberEpoch}, ` +
          `not ${memberEpoch}`,
        { retriable: true },
      );
    }
  }

  describeMembers(): {
    memberId: string;
    instanceId: string;
    memberEpoch: number;
    assignment: { topic: string; partition: number }[];
  }[] {
    return this.sortedMembers().map((member) => ({
      memberId: member.memberId,
      instanceId: member.instanceId,
      memberEpoch: member.memberEpoch,
      assignment: partitionList(member.assigned),
    }));
  }

  /** Everything replay must rebuild, in canonical order (for tests and diagnostics). */
  snapshot(): GroupSnapshot {
    return {
      groupId: this.groupId,
      state: this.state,
      groupEpoch: this.epoch,
      assignor: this.assignor,
      targetAssignmentEpoch: this.targetAssignmentEpoch,
      targetAssignment: [...this.targetAssignment.keys()]
        .sort(compareMemberIds)
        .map((memberId) => ({
          memberId,
          partitions: partitionList(this.targetAssignment.get(memberId)!),
        })),
      members: this.sortedMembers().map(memberRecordOf),
    };
  }

  /** Rebuilds the group after a coordinator takeover; replayed members get a fresh session. */
  replay(record: GroupRecord, nowMs: number): void {
    assert(record.groupId === this.groupId, 'replayed record belongs to this group');
    this.apply(record, nowMs);
    // Which topics exist is not in the records: learn it again from the next metadata seen.
    this.subscriptionMetadata = undefined;
  }

  // --- heartbeat steps -------------------------------------------------------------------------

  private leave(request: HeartbeatRequest, records: GroupRecord[], nowMs: number): void {
    const member = this.members.get(request.memberId);
    if (member === undefined) throw unknownMember(this.groupId, request.memberId);
    if (request.memberEpoch === staticMemberAwayEpoch && member.instanceId !== '') {
      // A static member bouncing: its assignment stays reserved for its instance id until its
      // session runs out, so the restarted process continues where it left off.
      if (member.memberEpoch === staticMemberAwayEpoch) return;
      this.emitMember(
        records,
        {
          ...memberRecordOf(member),
          memberEpoch: staticMemberAwayEpoch,
          previousMemberEpoch: member.memberEpoch,
        },
        nowMs,
      );
      this.members.get(member.memberId)!.sessionDeadlineMs = nowMs + this.timeouts.sessionTimeoutMs;
      return;
    }
    this.removeMember(member, records, nowMs);
    this.bumpGroupEpoch(this.assignor, records, nowMs);
    this.maybeComputeTargetAssignment(records, nowMs);
  }

  /**
   * Epoch 0. Four cases:
   * 1. a known member id: the member rejoins after being fenced; it gives up everything it held
   *    (a static member coming back from a -2 leave instead resumes its assignment);
   * 2. an instance id held by a static member that left with -2: the new member replaces it and
   *    inherits its epoch, assignment and target;
   * 3. an instance id held by a live member: UNRELEASED_INSTANCE_ID;
   * 4. otherwise a new member, if the group has room.
   */
  private join(
    request: HeartbeatRequest,
    records: GroupRecord[],
    nowMs: number,
  ): { member: GroupMember; joined: boolean } {
    const known = request.memberId === '' ? undefined : this.members.get(request.memberId);
    const holder =
      request.instanceId === '' ? undefined : this.memberByInstanceId(request.instanceId);
    if (holder !== undefined && holder !== known && holder.memberEpoch !== staticMemberAwayEpoch) {
      throw new SpoolError(
        GroupErrorCode.UnreleasedInstanceId,
        `instance id '${request.instanceId}' is still held by member '${holder.memberId}' of ` +
          `group '${this.groupId}'; it must leave first`,
      );
    }
    // 1. Known member id.
    if (known !== undefined) {
      if (holder !== undefined && holder !== known) this.removeMember(holder, records, nowMs);
      const returning = known.memberEpoch === staticMemberAwayEpoch;
      const rejoined: MemberRecord = returning
        ? { ...memberRecordOf(known), memberEpoch: known.previousMemberEpoch }
        : {
            ...memberRecordOf(known),
            memberEpoch: joinGroupEpoch,
            previousMemberEpoch: joinGroupEpoch,
            assigned: [],
            pendingRevocation: [],
          };
      this.emitMember(records, { ...rejoined, instanceId: request.instanceId }, nowMs);
      return { member: this.members.get(known.memberId)!, joined: false };
    }
    const memberId = request.memberId === '' ? this.generateMemberId() : request.memberId;
    assert(!this.members.has(memberId), 'generated member id is unique');
    // 2. Replace a static member that is away.
    if (holder !== undefined) {
      const inherited = memberRecordOf(holder);
      const target = this.targetAssignment.get(holder.memberId);
      this.removeMember(holder, records, nowMs);
      this.emitMember(
        records,
        {
          ...inherited,
          memberId,
          memberEpoch: holder.previousMemberEpoch,
        },
        nowMs,
      );
      if (target !== undefined)
        this.emitTargetAssignment(
          records,
          this.targetAssignmentEpoch,
          new Map([...this.targetAssignment, [memberId, target]]),
          nowMs,
        );
      return { member: this.members.get(memberId)!, joined: false };
    }
    // 4. A new member.
    if (this.members.size >= this.limits.membersMax) {
      throw new SpoolError(
        GroupErrorCode.GroupMaxSizeReached,
        `group '${this.groupId}' has reached its maximum of ${this.limits.membersMax} members`,
      );
    }
    this.emitMember(
      records,
      {
        memberId,
        instanceId: request.instanceId,
        memberEpoch: joinGroupEpoch,
        previousMemberEpoch: joinGroupEpoch,
        subscribedTopics: request.subscribedTopics,
        subscribedRegex: request.subscribedRegex,
        rebalanceTimeoutMs: request.rebalanceTimeoutMs || rebalanceTimeoutMsDefault,
        assigned: [],
        pendingRevocation: [],
      },
      nowMs,
    );
    return { member: this.members.get(memberId)!, joined: true };
  }

  /**
   * A regular heartbeat must carry the member's epoch, or its previous epoch when what it owns is
   * still part of its assignment: the response that moved it to the new epoch was lost, and
   * accepting it lets the coordinator resend instead of fencing a healthy member (KIP-848).
   */
  private checkMemberEpoch(request: HeartbeatRequest): GroupMember {
    const member = this.members.get(request.memberId);
    if (member === undefined) throw unknownMember(this.groupId, request.memberId);
    if (request.instanceId !== '' && request.instanceId !== member.instanceId) {
      throw new SpoolError(
        GroupErrorCode.InvalidRequest,
        `instanceId: '${request.instanceId}' is not the instance id of member '${member.memberId}'`,
        { details: { field: 'instanceId' } },
      );
    }
    const current = request.memberEpoch === member.memberEpoch;
    const previousWithSubset =
      request.memberEpoch === member.previousMemberEpoch &&
      member.memberEpoch !== staticMemberAwayEpoch &&
      isPartitionSubset(request.ownedPartitions, member.assigned);
    if (!current && !previousWithSubset) {
      throw new SpoolError(
        GroupErrorCode.FencedMemberEpoch,
        `member '${member.memberId}' of group '${this.groupId}' sent epoch ` +
          `${request.memberEpoch}; its epoch is ${member.memberEpoch}. Release every partition ` +
          `and rejoin with epoch 0`,
      );
    }
    return member;
  }

  /** Applies a changed subscription or rebalance timeout; true when the subscription changed. */
  private updateSubscription(
    member: GroupMember,
    request: HeartbeatRequest,
    records: GroupRecord[],
    nowMs: number,
  ): boolean {
    const rebalanceTimeoutMs = request.rebalanceTimeoutMs || member.rebalanceTimeoutMs;
    const subscriptionChanged =
      request.subscribedRegex !== member.subscribedRegex ||
      request.subscribedTopics.length !== member.subscribedTopics.length ||
      request.subscribedTopics.some((topic, index) => topic !== member.subscribedTopics[index]);
    if (subscriptionChanged || rebalanceTimeoutMs !== member.rebalanceTimeoutMs) {
      this.emitMember(
        records,
        {
          ...memberRecordOf(member),
          subscribedTopics: request.subscribedTopics,
          subscribedRegex: request.subscribedRegex,
          rebalanceTimeoutMs,
        },
        nowMs,
      );
    }
    return subscriptionChanged;
  }

  private reconcileMember(
    member: GroupMember,
    ownedPartitions: PartitionSet,
    records: GroupRecord[],
    nowMs: number,
  ): void {
    const next: ReconciledMember = reconcile({
      member,
      target: this.targetAssignment.get(member.memberId) ?? new Map(),
      targetAssignmentEpoch: this.targetAssignmentEpoch,
      ownedPartitions,
      isFree: (topic, partition) => {
        const holder = this.holders.get(partitionKey(topic, partition));
        return holder === undefined || holder === member.memberId;
      },
    });
    if (
      next.memberEpoch === member.memberEpoch &&
      next.previousMemberEpoch === member.previousMemberEpoch &&
      partitionSetsEqual(next.assigned, member.assigned) &&
      partitionSetsEqual(next.pendingRevocation, member.pendingRevocation)
    ) {
      return;
    }
    this.emitMember(
      records,
      {
        ...memberRecordOf(member),
        memberEpoch: next.memberEpoch,
        previousMemberEpoch: next.previousMemberEpoch,
        assigned: partitionList(next.assigned),
        pendingRevocation: partitionList(next.pendingRevocation),
      },
      nowMs,
    );
  }

  private response(memberId: string, memberEpoch: number): ConsumerGroupHeartbeatResponse {
    return {
      error: undefined,
      memberId,
      memberEpoch,
      heartbeatIntervalMs: this.timeouts.heartbeatIntervalMs,
      assignment: undefined,
    };
  }

  // --- epochs and target assignment ------------------------------------------------------------

  private bumpGroupEpoch(assignor: AssignorName, records: GroupRecord[], nowMs: number): void {
    this.emit(
      records,
      {
        type: 'group-epoch',
        groupId: this.groupId,
        groupEpoch: this.epoch + 1,
        assignor,
      },
      nowMs,
    );
  }

  /**
   * Re-reads which topics members subscribe to and their partition counts. True when that
   * changed, which calls for a new group epoch. When the previous metadata is unknown (after a
   * replay), a change is whatever would make the assignor compute a different target.
   */
  private refreshSubscriptionMetadata(
    topics: TopicPartitionCounts,
    assignor: AssignorName,
  ): boolean {
    const metadata = emptyMetadata();
    for (const [key, subscription] of this.subscriptions) {
      const regex =
        subscription.subscribedRegex === ''
          ? undefined
          : this.compileRegex(subscription.subscribedRegex);
      const resolved = resolveSubscription(subscription.subscribedTopics, regex, topics);
      for (const [topic, count] of resolved) metadata.topics.set(topic, count);
      metadata.bySubscription.set(key, new Set(resolved.keys()));
    }
    const previous = this.subscriptionMetadata;
    this.subscriptionMetadata = metadata;
    if (previous !== undefined) return !sameCounts(previous.topics, metadata.topics);
    if (this.epoch > this.targetAssignmentEpoch || assignor !== this.assignor) return false;
    return !sameAssignment(this.candidateTargetAssignment(assignor), this.targetAssignment);
  }

  /** After members leave, the metadata is what the remaining members subscribe to. */
  private refreshMetadataForRemainingMembers(): void {
    const previous = this.subscriptionMetadata;
    if (previous === undefined) return;
    const metadata = emptyMetadata();
    for (const key of this.subscriptions.keys()) {
      const covered = previous.bySubscription.get(key);
      assert(covered !== undefined, 'every remaining subscription was resolved');
      metadata.bySubscription.set(key, covered);
      for (const topic of covered) metadata.topics.set(topic, previous.topics.get(topic)!);
    }
    this.subscriptionMetadata = metadata;
  }

  /**
   * Computes the target assignment at the group epoch when it is behind and the group knows the
   * subscribed topics; otherwise the group stays ASSIGNING until a heartbeat or a metadata
   * change brings them.
   */
  private maybeComputeTargetAssignment(records: GroupRecord[], nowMs: number): void {
    if (this.epoch <= this.targetAssignmentEpoch) return;
    if (this.subscriptionMetadata === undefined) return;
    this.refreshMetadataForRemainingMembers();
    this.emitTargetAssignment(
      records,
      this.epoch,
      this.candidateTargetAssignment(this.assignor),
      nowMs,
    );
  }

  private candidateTargetAssignment(assignor: AssignorName): TargetAssignment {
    const metadata = this.subscriptionMetadata;
    assert(metadata !== undefined, 'subscription metadata is known before assigning');
    return computeTargetAssignment(assignor, {
      members: this.sortedMembers().map((member) => ({
        memberId: member.memberId,
        subscribedTopics: metadata.bySubscription.get(subscriptionKey(member))!,
        currentAssignment: this.targetAssignment.get(member.memberId) ?? new Map(),
      })),
      topics: metadata.topics,
    });
  }

  private emitTargetAssignment(
    records: GroupRecord[],
    assignmentEpoch: number,
    target: TargetAssignment,
    nowMs: number,
  ): void {
    this.emit(
      records,
      {
        type: 'target-assignment',
        groupId: this.groupId,
        assignmentEpoch,
        members: [...target.keys()]
          .filter((memberId) => this.members.has(memberId))
          .sort(compareMemberIds)
          .map((memberId) => ({ memberId, partitions: partitionList(target.get(memberId)!) })),
      },
      nowMs,
    );
  }

  // --- records ---------------------------------------------------------------------------------

  private emit(records: GroupRecord[], record: GroupRecord, nowMs: number): void {
    this.apply(record, nowMs);
    records.push(record);
  }

  private emitMember(records: GroupRecord[], member: MemberRecord, nowMs: number): void {
    this.emit(records, { type: 'member', groupId: this.groupId, member }, nowMs);
  }

  private removeMember(member: GroupMember, records: GroupRecord[], nowMs: number): void {
    this.emit(
      records,
      { type: 'member-removed', groupId: this.groupId, memberId: member.memberId },
      nowMs,
    );
  }

  /** The one place persisted state changes, live or in replay. */
  private apply(record: GroupRecord, nowMs: number): void {
    this.cachedState = undefined;
    switch (record.type) {
      case 'group-epoch':
        assert(record.groupEpoch > this.epoch, 'group epoch only grows');
        this.dead = false;
        this.epoch = record.groupEpoch;
        this.assignor = record.assignor;
        return;
      case 'member':
        this.applyMember(record.member, nowMs);
        return;
      case 'member-removed':
        this.applyMemberRemoved(record.memberId);
        return;
      case 'target-assignment':
        assert(record.assignmentEpoch >= this.targetAssignmentEpoch, 'target epoch only grows');
        assert(record.assignmentEpoch <= this.epoch, 'target epoch is at most the group epoch');
        this.targetAssignmentEpoch = record.assignmentEpoch;
        this.targetAssignment = new Map(
          record.members.map(({ memberId, partitions }) => [memberId, partitionSetOf(partitions)]),
        );
        return;
      case 'group-deleted':
        assert(this.members.size === 0, 'only an empty group is deleted');
        this.dead = true;
        this.epoch = 0;
        this.assignor = 'uniform';
        this.targetAssignmentEpoch = 0;
        this.targetAssignment = new Map();
        this.subscriptionMetadata = emptyMetadata();
        return;
      default:
        assertNever(record, 'unknown group record');
    }
  }

  private applyMember(record: MemberRecord, nowMs: number): void {
    const existing = this.members.get(record.memberId);
    if (existing !== undefined) {
      this.releaseHolders(existing);
      this.releaseSubscription(existing);
    }
    const fields = memberFieldsOf(record);
    // The rebalance timeout runs from the moment a revocation is asked for; it restarts only
    // when a different set of partitions is to be revoked.
    let revocationDeadlineMs: number | undefined = undefined;
    if (fields.pendingRevocation.size > 0) {
      revocationDeadlineMs =
        existing?.revocationDeadlineMs !== undefined &&
        partitionSetsEqual(existing.pendingRevocation, fields.pendingRevocation)
          ? existing.revocationDeadlineMs
          : nowMs + fields.rebalanceTimeoutMs;
    }
    const member: GroupMember = {
      ...fields,
      sessionDeadlineMs: existing?.sessionDeadlineMs ?? nowMs + this.timeouts.sessionTimeoutMs,
      revocationDeadlineMs,
    };
    for (const partitions of [member.assigned, member.pendingRevocation]) {
      for (const [topic, numbers] of partitions) {
        for (const partition of numbers) {
          const key = partitionKey(topic, partition);
          assert(!this.holders.has(key), `partition ${topic}-${partition} has one holder`);
          this.holders.set(key, member.memberId);
        }
      }
    }
    this.members.set(member.memberId, member);
    const key = subscriptionKey(member);
    const shared = this.subscriptions.get(key);
    if (shared === undefined) {
      this.subscriptions.set(key, {
        subscribedTopics: member.subscribedTopics,
        subscribedRegex: member.subscribedRegex,
        memberCount: 1,
      });
    } else {
      shared.memberCount++;
    }
  }

  private releaseSubscription(member: GroupMember): void {
    const key = subscriptionKey(member);
    const shared = this.subscriptions.get(key);
    assert(shared !== undefined, 'a member holds a counted subscription');
    shared.memberCount--;
    if (shared.memberCount === 0) this.subscriptions.delete(key);
  }

  private applyMemberRemoved(memberId: string): void {
    const member = this.members.get(memberId);
    assert(member !== undefined, `removed member ${memberId} exists`);
    this.releaseHolders(member);
    this.releaseSubscription(member);
    this.members.delete(memberId);
  }

  private releaseHolders(member: GroupMember): void {
    for (const partitions of [member.assigned, member.pendingRevocation]) {
      for (const [topic, numbers] of partitions) {
        for (const partition of numbers) this.holders.delete(partitionKey(topic, partition));
      }
    }
  }

  // --- helpers ---------------------------------------------------------------------------------

  private isConverged(member: GroupMember): boolean {
    return (
      member.memberEpoch === this.targetAssignmentEpoch &&
      member.pendingRevocation.size === 0 &&
      partitionSetsEqual(member.assigned, this.targetAssignment.get(member.memberId) ?? new Map())
    );
  }

  private memberByInstanceId(instanceId: string): GroupMember | undefined {
    for (const member of this.members.values()) {
      if (member.instanceId === instanceId) return member;
    }
    return undefined;
  }

  private sortedMembers(): GroupMember[] {
    return [...this.members.values()].sort((left, right) =>
      compareMemberIds(left.memberId, right.memberId),
    );
  }

  private compileRegex(pattern: string): RegExp {
    let regex = this.compiledRegexes.get(pattern);
    if (regex === undefined) {
      regex = compileSubscribedRegex(pattern, this.limits.subscribedRegexLengthMax);
      // Bounded by the members' distinct patterns; forget them all rather than grow forever.
      if (this.compiledRegexes.size >= this.limits.membersMax) this.compiledRegexes.clear();
      this.compiledRegexes.set(pattern, regex);
    }
    return regex;
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function sameCounts(
  left: ReadonlyMap<string, number>,
  right: ReadonlyMap<string, number>,
): boolean {
  if (left.size !== right.size) return false;
  for (const [topic, count] of left) if (right.get(topic) !== count) return false;
  return true;
}

function sameAssignment(left: TargetAssignment, right: TargetAssignment): boolean {
  const memberIds = new Set([...left.keys(), ...right.keys()]);
  for (const memberId of memberIds) {
    if (!partitionSetsEqual(left.get(memberId) ?? new Map(), right.get(memberId) ?? new Map())) {
      return false;
    }
  }
  return true;
}
