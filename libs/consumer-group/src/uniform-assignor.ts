import type { AssignmentMemberSpec, AssignmentSpec, TargetAssignment } from './assignor';
import { compareMemberIds } from './assignor';
import {
  addPartition,
  hasPartition,
  partitionCount,
  partitionList,
  type PartitionSet,
  removePartition,
} from './partition-set';

/**
 * The `uniform` assignor (Kafka's UniformAssignor): balanced and sticky. Every member keeps the
 * partitions of its current target that are still valid, then the free partitions go to the
 * members with the fewest, then partitions move one at a time from a member that has at least
 * two more than another member subscribed to their topic. Moves happen only to restore balance,
 * so a member joining a group of N takes about P/(N+1) partitions and nobody else changes.
 *
 * Balance: members with the same subscription end with partition counts that differ by at most
 * one (a move from the larger to the smaller is always possible between them, and the loop stops
 * only when no move is possible). Each move lowers the sum of squared counts by at least 2, so
 * the loop ends. When every member has the same subscription (the common case) quotas are
 * computed directly instead.
 */
export function uniformAssign(spec: AssignmentSpec): TargetAssignment {
  const members = [...spec.members].sort((left, right) =>
    compareMemberIds(left.memberId, right.memberId),
  );
  const result: TargetAssignment = new Map();
  for (const member of members) result.set(member.memberId, new Map());
  if (members.length === 0) return result;
  const taken: PartitionSet = new Map();
  keepCurrentPartitions(members, spec.topics, result, taken);
  if (hasHomogeneousSubscriptions(members)) {
    assignByQuota(members, spec.topics, result, taken);
  } else {
    assignFreeToLeastLoaded(members, spec.topics, result, taken);
    balance(members, result);
  }
  return result;
}

/** Step 1: stickiness. A partition stays with its current holder if still valid and not taken. */
function keepCurrentPartitions(
  members: readonly AssignmentMemberSpec[],
  topics: ReadonlyMap<string, number>,
  result: TargetAssignment,
  taken: PartitionSet,
): void {
  for (const member of members) {
    const assignment = result.get(member.memberId)!;
    for (const { topic, partition } of partitionList(member.currentAssignment)) {
      const count = topics.get(topic);
      if (count === undefined || partition >= count) continue;
      if (!member.subscribedTopics.has(topic)) continue;
      if (hasPartition(taken, topic, partition)) continue;
      addPartition(assignment, topic, partition);
      addPartition(taken, topic, partition);
    }
  }
}

function hasHomogeneousSubscriptions(members: readonly AssignmentMemberSpec[]): boolean {
  const first = members[0]!.subscribedTopics;
  return members.every(
    (member) =>
      member.subscribedTopics.size === first.size &&
      [...member.subscribedTopics].every((topic) => first.has(topic)),
  );
}

/** Every partition of the subscribed topics that no member kept, in topic then partition order. */
function freePartitions(
  topicNames: Iterable<string>,
  topics: ReadonlyMap<string, number>,
  taken: PartitionSet,
): { topic: string; partition: number }[] {
  const free: { topic: string; partition: number }[] = [];
  for (const topic of [...topicNames].sort()) {
    const count = topics.get(topic) ?? 0;
    for (let partition = 0; partition < count; partition++) {
      if (!hasPartition(taken, topic, partition)) free.push({ topic, partition });
    }
  }
  return free;
}

/**
 * Homogeneous subscriptions: P partitions over N members gives each floor(P/N), and P mod N of
 * them one more; those extra slots go to the members that already hold the most, so fewer
 * partitions move. A member above its quota gives up its highest partitions; the free ones are
 * dealt round-robin to the members below quota, which spreads each topic across members.
 */
function assignByQuota(
  members: readonly AssignmentMemberSpec[],
  topics: ReadonlyMap<string, number>,
  result: TargetAssignment,
  taken: PartitionSet,
): void {
  const subscribed = [...members[0]!.subscribedTopics].filter((topic) => topics.has(topic));
  let total = 0;
  for (const topic of subscribed) total += topics.get(topic)!;
  const quotaMin = Math.floor(total / members.length);
  let extraSlots = total % members.length;
  const held = new Map<string, number>();
  for (const member of members) {
    held.set(member.memberId, partitionCount(result.get(member.memberId)!));
  }
  const byHeld = [...members].sort(
    (left, right) =>
      held.get(right.memberId)! - held.get(left.memberId)! ||
      compareMemberIds(left.memberId, right.memberId),
  );
  const quotas = new Map<string, number>();
  for (const member of byHeld) {
    const quota = quotaMin + (extraSlots > 0 ? 1 : 0);
    if (extraSlots > 0) extraSlots--;
    quotas.set(member.memberId, quota);
    if (held.get(member.memberId)! <= quota) continue;
    const assignment = result.get(member.memberId)!;
    for (const { topic, partition } of partitionList(assignment).slice(quota)) {
      removePartition(assignment, topic, partition);
      removePartition(taken, topic, partition);
    }
    held.set(member.memberId, quota);
  }
  const free = freePartitions(subscribed, topics, taken);
  let receivers = members.filter(
    (member) => held.get(member.memberId)! < quotas.get(member.memberId)!,
  );
  let next = 0;
  for (const { topic, partition } of free) {
    // Total quota equals the partition count, so a receiver below quota always exists here.
    const receiver = receivers[next % receivers.length]!;
    const assignment = result.get(receiver.memberId)!;
    addPartition(assignment, topic, partition);
    addPartition(taken, topic, partition);
    held.set(receiver.memberId, held.get(receiver.memberId)! + 1);
    if (held.get(receiver.memberId)! >= quotas.get(receiver.memberId)!) {
      receivers = receivers.filter((member) => member !== receiver);
    } else {
      next++;
    }
    if (receivers.length > 0) next %= receivers.length;
  }
}

/** Heterogeneous step 2: each free partition to the least loaded member subscribed to its topic. */
function assignFreeToLeastLoaded(
  members: readonly AssignmentMemberSpec[],
  topics: ReadonlyMap<string, number>,
  result: TargetAssignment,
  taken: PartitionSet,
): void {
  const counts = new Map<string, number>();
  for (const member of members) {
    counts.set(member.memberId, partitionCount(result.get(member.memberId)!));
  }
  const subscribersByTopic = new Map<string, AssignmentMemberSpec[]>();
  for (const topic of topics.keys()) subscribersByTopic.set(topic, []);
  for (const member of members) {
    for (const topic of member.subscribedTopics) subscribersByTopic.get(topic)?.push(member);
  }
  // Topics with the fewest subscribers first: their partitions have the fewest places to go.
  const topicOrder = [...topics.keys()].sort(
    (left, right) =>
      subscribersByTopic.get(left)!.length - subscribersByTopic.get(right)!.length ||
      compareMemberIds(left, right),
  );
  for (const topic of topicOrder) {
    const subscribers = subscribersByTopic.get(topic)!;
    if (subscribers.length === 0) continue;
    const heap = new LeastLoadedHeap(
      subscribers.map((member) => member.memberId),
      counts,
    );
    for (const { partition } of freePartitions([topic], topics, taken)) {
      const receiver = heap.takeLeastLoaded();
      addPartition(result.get(receiver)!, topic, partition);
      addPartition(taken, topic, partition);
    }
  }
}

/**
 * Heterogeneous step 3: move single partitions from heavy to light members until no member has
 * two more than another member subscribed to one of its topics. Each pass sorts once and makes
 * every move it finds; a pass that finds none is the fixed point.
 */
function balance(members: readonly AssignmentMemberSpec[], result: TargetAssignment): void {
  const counts = new Map<string, number>();
  for (const member of members) {
    counts.set(member.memberId, partitionCount(result.get(member.memberId)!));
  }
  const countOf = (member: AssignmentMemberSpec): number => counts.get(member.memberId)!;
  for (;;) {
    const ascending = [...members].sort(
      (left, right) =>
        countOf(left) - countOf(right) || compareMemberIds(left.memberId, right.memberId),
    );
    let moves = 0;
    for (const receiver of ascending) {
      for (let index = ascending.length - 1; index >= 0; index--) {
        const donor = ascending[index]!;
        // Exact when the pass starts; moves within a pass may make it skip a donor, which a
        // later pass picks up (the last pass moves nothing, so its counts are fresh).
        if (countOf(donor) < countOf(receiver) + 2) break;
        while (countOf(donor) >= countOf(receiver) + 2) {
          const move = movablePartition(result.get(donor.memberId)!, receiver);
          if (move === undefined) break;
          removePartition(result.get(donor.memberId)!, move.topic, move.partition);
          addPartition(result.get(receiver.memberId)!, move.topic, move.partition);
          counts.set(donor.memberId, countOf(donor) - 1);
          counts.set(receiver.memberId, countOf(receiver) + 1);
          moves++;
        }
      }
    }
    if (moves === 0) return;
  }
}

/** The donor's highest partition of the first of its topics the receiver subscribes to. */
function movablePartition(
  donorAssignment: PartitionSet,
  receiver: AssignmentMemberSpec,
): { topic: string; partition: number } | undefined {
  for (const [topic, partitions] of donorAssignment) {
    if (!receiver.subscribedTopics.has(topic)) continue;
    let partition = -1;
    for (const candidate of partitions) partition = Math.max(partition, candidate);
    return { topic, partition };
  }
  return undefined;
}

/** A binary min-heap of member ids by (partition count, member id); taking one counts it. */
class LeastLoadedHeap {
  private readonly heap: string[];

  constructor(
    memberIds: string[],
    private readonly counts: Map<string, number>,
  ) {
    this.heap = [...memberIds].sort((left, right) => this.compare(left, right));
  }

  takeLeastLoaded(): string {
    const memberId = this.heap[0]!;
    this.counts.set(memberId, this.counts.get(memberId)! + 1);
    this.siftDown(0);
    return memberId;
  }

  private compare(left: string, right: string): number {
    return this.counts.get(left)! - this.counts.get(right)! || compareMemberIds(left, right);
  }

  private siftDown(start: number): void {
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < this.heap.length && this.compare(this.heap[left]!, this.heap[smallest]!) < 0) {
        smallest = left;
      }
      if (right < this.heap.length && this.compare(this.heap[right]!, this.heap[smallest]!) < 0) {
        smallest = right;
      }
      if (smallest === index) return;
      [this.heap[index], this.heap[smallest]] = [this.heap[smallest]!, this.heap[index]!];
      index = smallest;
    }
  }
}
