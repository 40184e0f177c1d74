import { assertNever } from '@spool/common';
import type { PartitionSet } from './partition-set';
import { rangeAssign } from './range-assignor';
import type { AssignorName } from './group-settings';
import { uniformAssign } from './uniform-assignor';

/**
 * What a server-side assignor sees (Kafka's GroupSpec and SubscribedTopicDescriber): each member
 * with the existing topics it subscribes to and the partitions the current target assignment
 * gives it, and the partition count of every subscribed topic. It returns a target assignment
 * with an entry for every member (possibly empty), and never gives a partition to two members
 * or to a member not subscribed to its topic.
 */
export interface AssignmentMemberSpec {
  memberId: string;
  subscribedTopics: ReadonlySet<string>;
  currentAssignment: PartitionSet;
}

export interface AssignmentSpec {
  members: readonly AssignmentMemberSpec[];
  /** Partition count of every topic some member subscribes to. */
  topics: ReadonlyMap<string, number>;
}

export type TargetAssignment = Map<string, PartitionSet>;

export function computeTargetAssignment(
  assignor: AssignorName,
  spec: AssignmentSpec,
): TargetAssignment {
  switch (assignor) {
    case 'uniform':
      return uniformAssign(spec);
    case 'range':
      return rangeAssign(spec);
    default:
      return assertNever(assignor, 'unknown assignor');
  }
}

export function compareMemberIds(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
