/**
 * What the gateway remembers of each classic-protocol member (JoinGroup/SyncGroup/Heartbeat)
 * between its requests, because the classic protocol does not resend it and the coordinator's
 * consumer-group heartbeat needs it in full every time: the subscription and assignor from
 * JoinGroup, the member epoch the coordinator gave, the partitions it assigned, and the ones the
 * member holds (given at its last SyncGroup).
 *
 * Bounded: at most membersMax entries, the least recently used dropped first, and an entry unused
 * for idleMsMax is dropped. A member whose entry is gone (dropped, or its requests now reach
 * another gateway) is told REBALANCE_IN_PROGRESS and rejoins, which rebuilds it: a cost of one
 * rebalance, never a wrong answer.
 */
export interface ClassicMember {
  readonly groupId: string;
  readonly memberId: string;
  subscribedTopics: string[];
  assignor: string;
  rebalanceTimeoutMs: number;
  /** The request header's client.id and the client's address at its JoinGroup. */
  clientId: string;
  clientHost: string;
  /** The coordinator's member epoch now, which heartbeats may move on. */
  memberEpoch: number;
  /** The member epoch at the member's last JoinGroup: the classic generation id it holds. */
  generation: number;
  /** What the coordinator assigns the member now. */
  assigned: Array<{ topic: string; partition: number }>;
  /** What the member holds: its assignment at its last SyncGroup; nothing after a JoinGroup. */
  owned: Array<{ topic: string; partition: number }>;
  lastUsedMs: number;
}

/** Classic members remembered at most, over all groups. */
export const classicMembersMax = 100_000;
/** A member silent this long is forgotten (Kafka's longest session timeout is 30 minutes). */
export const classicMemberIdleMsMax = 30 * 60_000;

/** What every remembered member has: its identity and when it was last used. */
export interface RememberedMember {
  readonly groupId: string;
  readonly memberId: string;
  lastUsedMs: number;
}

/**
 * Remembered members of one kind, bounded as above. The classic members' table, and the KIP-848
 * members' (kafka-consumer-groups.ts), whose heartbeats leave out what did not change.
 */
export class MemberTable<Member extends RememberedMember> {
  /** By `groupId\0memberId`, in least-recently-used order (a Map keeps insertion order). */
  private readonly members = new Map<string, Member>();

  constructor(
    private readonly membersMax = classicMembersMax,
    private readonly idleMsMax = classicMemberIdleMsMax,
  ) {}

  get size(): number {
    return this.members.size;
  }

  get(groupId: string, memberId: string, nowMs: number): Member | undefined {
    const key = keyOf(groupId, memberId);
    const member = this.members.get(key);
    if (member === undefined) return undefined;
    if (nowMs - member.lastUsedMs > this.idleMsMax) {
      this.members.delete(key);
      return undefined;
    }
    member.lastUsedMs = nowMs;
    this.members.delete(key);
    this.members.set(key, member);
    return member;
  }

  set(member: Member): void {
    const key = keyOf(member.groupId, member.memberId);
    this.members.delete(key);
    this.members.set(key, member);
    while (this.members.size > this.membersMax) {
      const oldest = this.members.keys().next().value as string;
      this.members.delete(oldest);
    }
  }

  delete(groupId: string, memberId: string): void {
    this.members.delete(keyOf(groupId, memberId));
  }
}

export class ClassicMemberTable extends MemberTable<ClassicMember> {}

function keyOf(groupId: string, memberId: string): string {
  return `${groupId}\0${memberId}`;
}
