// The TypeScript SDK applications import: `new Spool({ brokers })` makes producers, consumers and
// admins that talk to the gateway's gRPC API only. Also the pieces that must match Kafka exactly,
// such as the default partitioner. Every Kafka compression codec comes with @spool/record-batch.

export { Spool } from './spool';
export { Producer, type RecordOutcome } from './producer';
export { Consumer } from './consumer';
export type {
  AssignedPartition,
  ConsumerBatch,
  ConsumerRunConfig,
  ConsumerSubscription,
  EachBatchPayload,
  EachMessagePayload,
  PartitionOffset,
  PartitionSelection,
} from './consumer-payloads';
export type { PartitionsCallback, RebalanceListener } from './consumer-group-session';
export type { OffsetReset } from './consumer-fetcher';
export type {
  GroupDescription,
  GroupListing,
  GroupMemberDescription,
  GroupOffset,
  GroupPartitionLag,
  OffsetResetStrategy,
  ResetOffsetsOptions,
  TopicGroupOffsets,
} from './group-admin';
export {
  Admin,
  type ClusterDescription,
  type ConfigEntryDescription,
  type ConfigEntryInput,
  type PartitionCleanerDescription,
  type PartitionDescription,
  type PartitionOffsets,
  type TopicConfigChange,
  type TopicConfigDescription,
  type TopicDescription,
  type TopicMetadataListing,
  type TopicToCreate,
} from './admin';
export type { AclBinding, AclBindingFilter } from './acl-admin';
export type {
  BrokerConfigChange,
  BrokerConfigEntry,
  BrokerConfigSource,
  BrokerConfigsDescription,
} from './broker-configs';
export type {
  OngoingPartitionReassignment,
  PartitionReassignmentInput,
} from './partition-reassignments';
export type {
  UserScramCredentialDeletion,
  UserScramCredentialUpsertion,
  UserScramCredentialsDescription,
} from './user-credentials';
export type {
  AcksSetting,
  AdminOptions,
  CompressionName,
  ConsumerOptions,
  GroupAssignorName,
  OffsetResetPolicy,
  ProducerOptions,
  SpoolConfig,
} from './config';
export {
  channelCredentialsOf,
  channelCredentialsOfSsl,
  readClientProperties,
  type SpoolSslOptions,
  type SpoolSaslOptions,
} from './client-security';
export type {
  ConsumedMessage,
  Message,
  MessageBytes,
  MessageHeader,
  MessageHeaders,
  ProducerRecord,
  RecordMetadata,
} from './message';
export { ClientErrorCode } from './errors';
export { SpoolError } from '@spool/common';
export { DefaultPartitioner } from './partitioner';
export { murmur2, toPositive, partitionForKey } from './murmur2';
