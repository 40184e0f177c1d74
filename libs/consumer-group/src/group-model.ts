import { assert, assertNever } from '@spool/common';
import type { TargetAssignment } from './assignor';
import { GroupSubscriptions } from './group-subscriptions';
import { memberFieldsOf, type GroupMember } from './member';
import { partitionSetOf, partitionSetsEqual } from './partition-set';
import type { AssignorName } from './group-settings';
import type { GroupRecord, GroupState, MemberRecord } from './group-records';

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/**
 * The persisted state of one consumer group and the one function that changes it: `apply`, used
 * alike for records a live group emits and records a new owner replays, so both end up equal.
 * Only `ConsumerGroup` decides which records to write; fields are read there but never assigned.
 * Besides the records' content it keeps indexes derived from them (who holds each partition,
 * the members' distinct subscriptions) and each member's in-memory deadlines.
 */
export class GroupModel {
  dead = false;
  groupEpoch = 0;
  assignor: AssignorName = 'uniform';
  targetAssignmentEpoch = 0;
  targetAssignment: TargetAssignment = new Map();
  readonly members = new Map<string, GroupMember>();
  /** Which member holds each partition, assigned or pending revocation (see partitionKey). */
  readonly holders = new Map<string, string>();
  readonly subscriptions = new GroupSubscriptions();
  private cachedState: GroupState | undefined = undefined;

  constructor(
    readonly groupId: string,
    private readonly sessionTimeoutMs: number,
  ) {}

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
    if (this.groupEpoch > this.targetAssignmentEpoch) return 'ASSIGNING';
    for (const member of this.members.values()) {
      if (!this.isConverged(member)) return 'RECONCILING';
    }
    return 'STABLE';
  }

  private isConverged(member: GroupMember): boolean {
    return (
      member.memberEpoch === this.targetAssignmentEpoch &&
      member.pendingRevocation.size === 0 &&
      partitionSetsEqual(member.assigned, this.targetAssignment.get(member.memberId) ?? new Map())
    );
  }

  /** The one place persisted state changes, live or in replay. */
  apply(record: GroupRecord, nowMs: number): void {
    this.cachedState = undefined;
    switch (record.type) {
      case 'group-epoch':
        assert(record.groupEpoch > this.groupEpoch, 'group epoch only grows');
        this.dead = false;
        this.groupEpoch = record.groupEpoch;
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
        assert(
          record.assignmentEpoch <= this.groupEpoch,
          'target epoch is at most the group epoch',
        );
        this.targetAssignmentEpoch = record.assignmentEpoch;
        this.targetAssignment = new Map(
          record.members.map(({ memberId, partitions }) => [memberId, partitionSetOf(partitions)]),
        );
        return;
      case 'group-deleted':
        assert(this.members.size === 0, 'only an empty group is deleted');
        this.dead = true;
        this.groupEpoch = 0;
        this.assignor = 'uniform';
        this.targetAssignmentEpoch = 0;
        this.targetAssignment = new Map();
        this.subscriptions.resetMetadata();
        return;
      default:
        assertNever(record, 'unknown group record');
    }
  }

  private applyMember(record: MemberRecord, nowMs: number): void {
    const existing = this.members.get(record.memberId);
    if (existing !== undefined) {
      this.releaseHolders(existing);
      this.subscriptions.release(existing);
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
      sessionDeadlineMs: existing?.sessionDeadlineMs ?? nowMs + this.sessionTimeoutMs,
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
    this.subscriptions.add(member);
  }

  private applyMemberRemoved(memberId: string): void {
    const member = this.members.get(memberId);
    assert(member !== undefined, `removed member ${memberId} exists`);
    this.releaseHolders(member);
    this.subscriptions.release(member);
    this.members.delete(memberId);
  }

  private releaseHolders(member: GroupMember): void {
    for (const partitions of [member.assigned, member.pendingRevocation]) {
      for (const [topic, numbers] of partitions) {
        for (const partition of numbers) this.holders.delete(partitionKey(topic, partition));
      }
    }
  }
}
