import type { AssignmentSpec, TargetAssignment } from './assignor';
import { compareMemberIds } from './assignor';
import { addPartition } from './partition-set';

/**
 * Kafka's range assignor, topic by topic: the members subscribed to a topic, sorted by member id,
 * each take a contiguous range of its partitions; the first `partitionCount % memberCount`
 * members take one more. Co-partitioned topics thus land on the same member, which is what
 * users choose range for (joins across topics with the same key). It is not sticky: a member
 * joining shifts the ranges of the members sorted after it.
 */
export function rangeAssign(spec: AssignmentSpec): TargetAssignment {
  const result: TargetAssignment = new Map();
  for (const member of spec.members) result.set(member.memberId, new Map());
  for (const topic of [...spec.topics.keys()].sort()) {
    const partitionCount = spec.topics.get(topic)!;
    const subscribers = spec.members
      .filter((member) => member.subscribedTopics.has(topic))
      .map((member) => member.memberId)
      .sort(compareMemberIds);
    if (subscribers.length === 0) continue;
    const quota = Math.floor(partitionCount / subscribers.length);
    const extra = partitionCount % subscribers.length;
    let next = 0;
    subscribers.forEach((memberId, index) => {
      const count = quota + (index < extra ? 1 : 0);
      const assignment = result.get(memberId)!;
      for (let partition = next; partition < next + count; partition++) {
        addPartition(assignment, topic, partition);
      }
      next += count;
    });
  }
  return result;
}
