// The KIP-848 consumer group state machine and its assignors: pure (no I/O), driven by the
// coordinator runtime, which persists the records it returns in __consumer_offsets.
export { ConsumerGroup, type ConsumerGroupOptions } from './consumer-group';
export {
  assignorNames,
  groupLimitsDefault,
  type AssignorName,
  type GroupLimits,
  type GroupRecord,
  type GroupSnapshot,
  type GroupState,
  type GroupTimeouts,
  type MemberRecord,
  type TargetAssignmentMemberRecord,
  type TopicPartitionCounts,
  type TopicPartitionRecord,
} from './types';
export { GroupErrorCode } from './group-errors';
export { isInternalTopic } from './subscription';
export {
  computeTargetAssignment,
  type AssignmentMemberSpec,
  type AssignmentSpec,
  type TargetAssignment,
} from './assignor';
export { type PartitionSet } from './partition-set';
