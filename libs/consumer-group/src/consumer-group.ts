import { randomUUID } from 'node:crypto';
import { assert, SpoolError } from '@spool/common';
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
  memberRecordOf,
  metadataRecordOf,
  rebalanceTimeoutMsDefault,
  sameMemberMetadata,
  staticMemberAwayEpoch,
  type GroupMember,
} from './member';
import {
  isPartitionSubset,
  partitionList,
  partitionSetsEqual,
  type PartitionSet,
} from './partition-set';
import { GroupModel, partitionKey } from './group-model';
import { compileSubscribedRegex } from './subscription';
import {
  groupLimitsDefault,
  type AssignorName,
  type GroupLimits,
  type GroupTimeouts,
  type TopicPartitionCounts,
} from './group-settings';
import {
  type GroupRecord,
  type GroupSnapshot,
  type GroupState,
  type MemberRecord,
} from './group-records';

export interface ConsumerGroupOptions {
  limits?: Partial<GroupLimits>;
  /** Member ids for members that join without one; a random UUID by default. */
  generateMemberId?: () => string;
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

  /** The persisted state; it changes only by applying records. */
  private readonly model: GroupModel;
  private readonly compiledRegexes = new Map<string, RegExp>();

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
    this.model = new GroupModel(groupId, timeouts.sessionTimeoutMs);
  }

  /** EMPTY, ASSIGNING (target behind the group epoch), RECONCILING, STABLE, or DEAD (deleted). */
  get state(): GroupState {
    return this.model.state;
  }

  get groupEpoch(): number {
    return this.model.groupEpoch;
  }

  get assignorName(): AssignorName {
    return this.model.assignor;
  }

  isEmpty(): boolean {
    return this.model.members.size === 0;
  }

  /**
   * Whether a member subscribes to `topic`, by name or by regex (Kafka's isSubscribedToTopic):
   * such a topic's committed offsets are in use and OffsetDelete refuses them.
   */
  isSubscribedToTopic(topic: string): boolean {
    return this.model.subscriptions.covers(topic, (pattern) => this.compileRegex(pattern));
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
      parsed.assignor !== undefined &&
      parsed.assignor !== this.model.assignor &&
      this.model.members.size === 1;
    const nextAssignor = assignorChanged ? parsed.assignor! : this.model.assignor;
    const metadataChanged = this.refreshSubscriptionMetadata(topics, nextAssignor);
    if (joined || subscriptionChanged || assignorChanged || metadataChanged) {
      this.bumpGroupEpoch(nextAssignor, records, nowMs);
    }
    this.maybeComputeTargetAssignment(records, nowMs);

    // apply() replaces member objects: look the member up again after each step.
    const before = this.model.members.get(member.memberId)!;
    this.reconcileMember(before, parsed.ownedPartitions, records, nowMs);
    const current = this.model.members.get(member.memberId)!;
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
    const expired = [...this.model.members.values()]
      .filter(
        (member) =>
          nowMs >= member.sessionDeadlineMs ||
          (member.revocationDeadlineMs !== undefined && nowMs >= member.revocationDeadlineMs),
      )
      .sort((left, right) => compareMemberIds(left.memberId, right.memberId));
    if (expired.length === 0) return records;
    for (const member of expired) this.removeMember(member, records, nowMs);
    this.bumpGroupEpoch(this.model.assignor, records, nowMs);
    this.maybeComputeTargetAssignment(records, nowMs);
    return records;
  }

  /**
   * Removes one member now, as `expire` does when its session or rebalance timeout runs out
   * (Kafka's consumerGroupFenceMember): its partitions go back to the group at a new epoch, and
   * its next heartbeat is answered UNKNOWN_MEMBER_ID. For a runtime that times members one by
   * one, and for test doubles that decide when a member times out.
   */
  fenceMember(memberId: string, nowMs: number): GroupRecord[] {
    const member = this.model.members.get(memberId);
    if (member === undefined) throw unknownMember(this.groupId, memberId);
    const records: GroupRecord[] = [];
    this.removeMember(member, records, nowMs);
    this.bumpGroupEpoch(this.model.assignor, records, nowMs);
    this.maybeComputeTargetAssignment(records, nowMs);
    return records;
  }

  onTopicsChanged(topics: TopicPartitionCounts, nowMs: number): GroupRecord[] {
    const records: GroupRecord[] = [];
    if (this.model.members.size === 0) return records;
    if (this.refreshSubscriptionMetadata(topics, this.model.assignor)) {
      this.bumpGroupEpoch(this.model.assignor, records, nowMs);
    }
    this.maybeComputeTargetAssignment(records, nowMs);
    return records;
  }

  /**
   * For DeleteGroup: only a group without members can be deleted (NON_EMPTY_GROUP otherwise).
   * The runtime deletes the committed offsets itself.
   */
  delete(nowMs: number): GroupRecord[] {
    if (this.model.members.size > 0) {
      throw new SpoolError(
        GroupErrorCode.NonEmptyGroup,
        `group '${this.groupId}' has ${this.model.members.size} members; only an empty group can be deleted`,
      );
    }
    const records: GroupRecord[] = [];
    this.emit(records, { type: 'group-deleted', groupId: this.groupId }, nowMs);
    return records;
  }

  validateOffsetCommit(memberId: string, memberEpoch: number): void {
    if (memberId === '' && memberEpoch === leaveGroupEpoch && this.model.members.size === 0) return;
    this.validateMemberAtEpoch(memberId, memberEpoch);
  }

  /**
   * Kafka's ConsumerGroup.validateOffsetFetch for a fetch that names a member (OffsetFetch v9+):
   * the member must be in the group (UNKNOWN_MEMBER_ID) at this epoch (STALE_MEMBER_EPOCH, which
   * the client retries after its next heartbeat). A fetch that names none is not checked.
   */
  validateOffsetFetch(memberId: string, memberEpoch: number): void {
    this.validateMemberAtEpoch(memberId, memberEpoch);
  }

  private validateMemberAtEpoch(memberId: string, memberEpoch: number): void {
    const member = this.model.members.get(memberId);
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

  /** Every member as DescribeGroup shows it, with the target the assignor gave it. */
  describeMembers(): {
    memberId: string;
    instanceId: string;
    memberEpoch: number;
    subscribedTopics: string[];
    subscribedRegex: string;
    assignment: { topic: string; partition: number }[];
    targetAssignment: { topic: string; partition: number }[];
    rackId: string;
    clientId: string;
    clientHost: string;
    memberType: string;
  }[] {
    return this.sortedMembers().map((member) => ({
      memberId: member.memberId,
      instanceId: member.instanceId,
      memberEpoch: member.memberEpoch,
      subscribedTopics: [...member.subscribedTopics],
      subscribedRegex: member.subscribedRegex,
      assignment: partitionList(member.assigned),
      targetAssignment: partitionList(
        this.model.targetAssignment.get(member.memberId) ?? new Map(),
      ),
      ...member.metadata,
    }));
  }

  /** The group epoch of the target assignment (Kafka's assignment epoch). */
  get assignmentEpoch(): number {
    return this.model.targetAssignmentEpoch;
  }

  /** Everything replay must rebuild, in canonical order (for tests and diagnostics). */
  snapshot(): GroupSnapshot {
    return {
      groupId: this.groupId,
      state: this.state,
      groupEpoch: this.model.groupEpoch,
      assignor: this.model.assignor,
      targetAssignmentEpoch: this.model.targetAssignmentEpoch,
      targetAssignment: [...this.model.targetAssignment.keys()]
        .sort(compareMemberIds)
        .map((memberId) => ({
          memberId,
          partitions: partitionList(this.model.targetAssignment.get(memberId)!),
        })),
      members: this.sortedMembers().map(memberRecordOf),
    };
  }

  /**
   * The fewest records that rebuild this group as it is now, for the runtime to write as a
   * checkpoint so a takeover need not replay the group's whole history: the group epoch and
   * assignor, the target assignment, then every member.
   */
  snapshotRecords(): GroupRecord[] {
    const groupId = this.groupId;
    if (this.model.dead) return [{ type: 'group-deleted', groupId }];
    if (this.model.groupEpoch === 0) return [];
    const snapshot = this.snapshot();
    return [
      {
        type: 'group-epoch',
        groupId,
        groupEpoch: snapshot.groupEpoch,
        assignor: snapshot.assignor,
      },
      {
        type: 'target-assignment',
        groupId,
        assignmentEpoch: snapshot.targetAssignmentEpoch,
        members: snapshot.targetAssignment,
      },
      ...snapshot.members.map((member): GroupRecord => ({ type: 'member', groupId, member })),
    ];
  }

  /** Rebuilds the group after a coordinator takeover; replayed members get a fresh session. */
  replay(record: GroupRecord, nowMs: number): void {
    assert(record.groupId === this.groupId, 'replayed record belongs to this group');
    // A checkpoint (snapshotRecords) restates the epoch the group already has when the records
    // before it were not deleted: the same state again, not a new epoch. (Live, epochs only grow.)
    const restated =
      record.type === 'group-epoch' &&
      !this.model.dead &&
      record.groupEpoch === this.model.groupEpoch &&
      record.assignor === this.model.assignor;
    if (!restated) this.model.apply(record, nowMs);
    this.model.subscriptions.forgetMetadata();
  }

  // --- heartbeat steps -------------------------------------------------------------------------

  private leave(request: HeartbeatRequest, records: GroupRecord[], nowMs: number): void {
    const member = this.model.members.get(request.memberId);
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
      this.model.members.get(member.memberId)!.sessionDeadlineMs =
        nowMs + this.timeouts.sessionTimeoutMs;
      return;
    }
    this.removeMember(member, records, nowMs);
    this.bumpGroupEpoch(this.model.assignor, records, nowMs);
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
    const known = request.memberId === '' ? undefined : this.model.members.get(request.memberId);
    const holder =
      request.instanceId === '' ? undefined : this.memberByInstanceId(request.instanceId);
    // 3. The instance id is still in use.
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
      this.emitMember(
        records,
        withMetadata({ ...rejoined, instanceId: request.instanceId }, request),
        nowMs,
      );
      return { member: this.model.members.get(known.memberId)!, joined: false };
    }
    const memberId = request.memberId === '' ? this.generateMemberId() : request.memberId;
    assert(!this.model.members.has(memberId), 'generated member id is unique');
    // 2. Replace a static member that is away.
    if (holder !== undefined) {
      const inherited = memberRecordOf(holder);
      const target = this.model.targetAssignment.get(holder.memberId);
      this.removeMember(holder, records, nowMs);
      this.emitMember(
        records,
        withMetadata({ ...inherited, memberId, memberEpoch: holder.previousMemberEpoch }, request),
        nowMs,
      );
      if (target !== undefined) {
        // The target moves to the new member id at the same epoch: nothing is reassigned.
        this.emitTargetAssignment(
          records,
          this.model.targetAssignmentEpoch,
          new Map([...this.model.targetAssignment, [memberId, target]]),
          nowMs,
        );
      }
      return { member: this.model.members.get(memberId)!, joined: false };
    }
    // 4. A new member.
    if (this.model.members.size >= this.limits.membersMax) {
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
        ...metadataRecordOf(request.metadata),
      },
      nowMs,
    );
    return { member: this.model.members.get(memberId)!, joined: true };
  }

  /**
   * A regular heartbeat must carry the member's epoch, or its previous epoch when what it owns is
   * still part of its assignment: the response that moved it to the new epoch was lost, and
   * accepting it lets the coordinator resend instead of fencing a healthy member (KIP-848).
   */
  private checkMemberEpoch(request: HeartbeatRequest): GroupMember {
    const member = this.model.members.get(request.memberId);
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

  /**
   * Applies a changed subscription, rebalance timeout or member metadata; true when the
   * subscription changed (only that calls for a new group epoch).
   */
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
    if (
      subscriptionChanged ||
      rebalanceTimeoutMs !== member.rebalanceTimeoutMs ||
      !sameMemberMetadata(request.metadata, member.metadata)
    ) {
      this.emitMember(
        records,
        withMetadata(
          {
            ...memberRecordOf(member),
            subscribedTopics: request.subscribedTopics,
            subscribedRegex: request.subscribedRegex,
            rebalanceTimeoutMs,
          },
          request,
        ),
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
      target: this.model.targetAssignment.get(member.memberId) ?? new Map(),
      targetAssignmentEpoch: this.model.targetAssignmentEpoch,
      ownedPartitions,
      isFree: (topic, partition) => {
        const holder = this.model.holders.get(partitionKey(topic, partition));
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
        groupEpoch: this.model.groupEpoch + 1,
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
    const changed = this.model.subscriptions.refresh(topics, (pattern) =>
      this.compileRegex(pattern),
    );
    if (changed !== undefined) return changed;
    if (
      this.model.groupEpoch > this.model.targetAssignmentEpoch ||
      assignor !== this.model.assignor
    )
      return false;
    return !sameAssignment(this.candidateTargetAssignment(assignor), this.model.targetAssignment);
  }

  /**
   * Computes the target assignment at the group epoch when it is behind and the group knows the
   * subscribed topics; otherwise the group stays ASSIGNING until a heartbeat or a metadata
   * change brings them.
   */
  private maybeComputeTargetAssignment(records: GroupRecord[], nowMs: number): void {
    if (this.model.groupEpoch <= this.model.targetAssignmentEpoch) return;
    if (!this.model.subscriptions.known) return;
    this.model.subscriptions.restrictToCurrentSubscriptions();
    this.emitTargetAssignment(
      records,
      this.model.groupEpoch,
      this.candidateTargetAssignment(this.model.assignor),
      nowMs,
    );
  }

  private candidateTargetAssignment(assignor: AssignorName): TargetAssignment {
    return computeTargetAssignment(assignor, {
      members: this.sortedMembers().map((member) => ({
        memberId: member.memberId,
        subscribedTopics: this.model.subscriptions.topicsOf(member),
        currentAssignment: this.model.targetAssignment.get(member.memberId) ?? new Map(),
      })),
      topics: this.model.subscriptions.partitionCounts(),
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
          .filter((memberId) => this.model.members.has(memberId))
          .sort(compareMemberIds)
          .map((memberId) => ({ memberId, partitions: partitionList(target.get(memberId)!) })),
      },
      nowMs,
    );
  }

  // --- records ---------------------------------------------------------------------------------

  private emit(records: GroupRecord[], record: GroupRecord, nowMs: number): void {
    this.model.apply(record, nowMs);
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

  // --- helpers ---------------------------------------------------------------------------------

  private memberByInstanceId(instanceId: string): GroupMember | undefined {
    for (const member of this.model.members.values()) {
      if (member.instanceId === instanceId) return member;
    }
    return undefined;
  }

  private sortedMembers(): GroupMember[] {
    return [...this.model.members.values()].sort((left, right) =>
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

/** A member record with the metadata the request brings instead of what it had. */
function withMetadata(record: MemberRecord, request: HeartbeatRequest): MemberRecord {
  const {
    rackId: _rackId,
    clientId: _clientId,
    clientHost: _clientHost,
    memberType: _memberType,
    ...rest
  } = record;
  return { ...rest, ...metadataRecordOf(request.metadata) };
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
