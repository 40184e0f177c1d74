// The KIP-848 consumer group state machine and its assignors: pure (no network, files or timers),
// driven by the coordinator runtime, and by the SDK's fake coordinator (libs/client/src/testing)
// so that the SDK's tests meet the same rules, assignor and member order. How the runtime uses it:
// - `heartbeat`, `expire` (every ~250 ms), `onTopicsChanged` (on every metadata change) and
//   `delete` return records; write them to __consumer_offsets (acks=all) before answering. The
//   group has already applied them: if the write fails, rebuild the group from what was written
//   (replay) rather than keep the unwritten state.
// - On takeover, `replay` every record of the group in order (or the last `snapshotRecords()`
//   checkpoint and what followed), then call `onTopicsChanged` once: which topics exist is not in
//   the records, and until the group sees them again a membership change leaves it ASSIGNING.
// - Errors are SpoolErrors with Kafka's codes (GroupErrorCode); a rejected request changes nothing.
export { ConsumerGroup, type ConsumerGroupOptions } from './consumer-group';
export {
  assignorNames,
  groupLimitsDefault,
  type AssignorName,
  type GroupLimits,
  type GroupTimeouts,
  type TopicPartitionCounts,
} from './group-settings';
export {
  type GroupRecord,
  type GroupSnapshot,
  type GroupState,
  type MemberRecord,
  type TargetAssignmentMemberRecord,
  type TopicPartitionRecord,
} from './group-records';
export { GroupErrorCode } from './group-errors';
export { isInternalTopic } from './subscription';
export {
  computeTargetAssignment,
  type AssignmentMemberSpec,
  type AssignmentSpec,
  type TargetAssignment,
} from './assignor';
export { type PartitionSet } from './partition-set';
