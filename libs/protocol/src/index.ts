// The wire formats every Spool process and the client SDK share: the gRPC messages generated
// from proto/ (never edited by hand) and, beside them, hand-written codecs.
export {
  Acks,
  BrokerMetadata,
  ConfigEntry,
  Endpoint,
  Error as ProtoError,
  OffsetSpec,
  PartitionMetadata,
  TopicMetadata,
  TopicPartition,
} from './generated/spool/v1/common';
export {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
  DeleteRecordsPartition,
  DeleteRecordsRequest,
  DeleteRecordsResponse,
  DeleteRecordsResult,
  ListOffsetsPartition,
  ListOffsetsRequest,
  ListOffsetsResponse,
  ListOffsetsResult,
  PartitionAppendResult,
  PartitionBatches,
  type StorageServiceServer,
} from './generated/spool/v1/storage';
export {
  AllocateProducerIdsRequest,
  AllocateProducerIdsResponse,
  AlterConfigsRequest,
  AlterConfigsResponse,
  AlterPartitionItem,
  AlterPartitionPartitionResult,
  AlterPartitionRequest,
  AlterPartitionResponse,
  AlterPartitionTopic,
  AlterPartitionTopicResult,
  AlterTopicConfigs,
  BrokerHeartbeatRequest,
  BrokerHeartbeatResponse,
  ControlledShutdownRequest,
  ControlledShutdownResponse,
  ControllerServiceClient,
  type ControllerServiceServer,
  ControllerServiceService,
  CoordinatorHeartbeatRequest,
  CoordinatorHeartbeatResponse,
  CoordinatorMetadata,
  CoordinatorShard,
  CreatableTopic,
  CreatePartitionsRequest,
  CreatePartitionsResponse,
  CreatePartitionsTopic,
  CreateTopicsRequest,
  CreateTopicsResponse,
  DeleteTopicsRequest,
  DeleteTopicsResponse,
  DescribeClusterRequest,
  DescribeClusterResponse,
  DescribeConfigsRequest,
  DescribeConfigsResponse,
  DescribeTopicsRequest,
  DescribeTopicsResponse,
  EnsureOffsetsTopicRequest,
  EnsureOffsetsTopicResponse,
  ListTopicsRequest,
  ListTopicsResponse,
  RegisterBrokerRequest,
  RegisterBrokerResponse,
  TopicConfigs,
  TopicDescription,
  TopicResult,
  WatchMetadataRequest,
  WatchMetadataResponse,
} from './generated/spool/v1/controller';
export {
  Assignment,
  CommittableOffset,
  CommittedOffset,
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  CoordinatorServiceClient,
  type CoordinatorServiceServer,
  CoordinatorServiceService,
  DeleteGroupRequest,
  DeleteGroupResponse,
  DescribeGroupRequest,
  DescribeGroupResponse,
  FindCoordinatorRequest,
  FindCoordinatorResponse,
  GroupListing,
  GroupMember,
  InitProducerIdRequest,
  InitProducerIdResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  PartitionLag,
  PartitionResult,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
} from './generated/spool/v1/coordinator';
export {
  ConsumeRequest,
  ConsumeResponse,
  FetchPartition,
  FetchRequest,
  FetchResponse,
  FetchedPartition,
  type GatewayServiceServer,
  ProduceRequest,
  ProduceResponse,
  ProduceStreamRequest,
  ProduceStreamResponse,
} from './generated/spool/v1/gateway';
// The services as generated, except that produce-path requests skip the generated code's copies
// of record bytes (partition-batches-codec.ts).
export {
  GatewayServiceClient,
  GatewayServiceService,
  StorageServiceClient,
  StorageServiceService,
  decodeBatchesRequest,
  encodeBatchesRequest,
  type BatchesRequest,
} from './partition-batches-codec';
export { protoDescriptorSetPath } from './descriptor-set';
export { ProtocolError, ProtocolErrorCode } from './errors';
export {
  type ReadCursor,
  readVarint,
  readVarlong,
  readVarlongAsNumber,
  sizeOfVarint,
  sizeOfVarlong,
  skipVarlong,
  writeVarint,
  writeVarlong,
} from './record-batch/varint';
export { crc32c, crc32cImplementation, type Crc32cImplementation } from './record-batch/crc32c';
export {
  attributesPosition,
  baseOffsetPosition,
  baseSequencePosition,
  baseTimestampPosition,
  batchLengthPosition,
  compressionCodecMask,
  CompressionType,
  controlFlagMask,
  crcPosition,
  deleteHorizonFlagMask,
  isKnownCompressionType,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicPosition,
  magicValueV2,
  maxTimestampPosition,
  noPartitionLeaderEpoch,
  noProducerEpoch,
  noProducerId,
  noSequence,
  noTimestamp,
  partitionLeaderEpochPosition,
  producerEpochPosition,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
  recordCountPosition,
  recordsPosition,
  TimestampType,
  timestampTypeMask,
  transactionalFlagMask,
} from './record-batch/record-batch-layout';
export {
  incrementSequence,
  lastOffsetOf,
  RecordBatchHeader,
  recordBatchSizeBytes,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
} from './record-batch/record-batch-header';
export {
  type CompressionCodec,
  compressionCodecFor,
  registerCompressionCodec,
} from './record-batch/compression-codec';
export type { DecodedRecord, RecordHeader, RecordInput } from './record-batch/record';
export {
  type RecordFields,
  type RecordReader,
  uncompressedRecordsBytesMaxDefault,
} from './record-batch/record-reader';
export { encodeRecordBatch, type RecordBatchInput } from './record-batch/record-batch-encoder';
export { RecordBatchBuilder, type RecordBatchFields } from './record-batch/record-batch-builder';
export {
  decodeRecordBatch,
  decodeRecordBatches,
  openRecordBatch,
  type DecodedRecordBatch,
  type DecodeRecordBatchOptions,
} from './record-batch/record-batch-decoder';
export {
  type RecordBatchOrigin,
  type RecordBatchValidationOptions,
  splitRecordBatches,
  validateRecordBatch,
  checkRecordBatchFraming,
  checkRecordBatchCrc,
  checkRecordBatchFields,
} from './record-batch/record-batch-validator';
export { ClusterMetadataCache, type MetadataChange } from './cluster-metadata-cache';

// The data port: the storage node's TCP protocol for consumer and replica fetches (sendfile).
export {
  consumerReplicaId,
  DataPortApiKey,
  dataPortApiNames,
  type DataPortApiVersion,
  dataPortErrorApiKey,
  dataPortPartitionsMax,
  dataPortRequestBytesMax,
  dataPortSupportedApiVersions,
  errorCodeBytesMax,
  errorMessageBytesMax,
  frameSizeFieldBytes,
  noErrorCode,
  recordBatchBytesMax,
  requestHeaderBytes,
  responseHeaderBytes,
  stringBytesMax,
  unknownCorrelationId,
  unknownLeaderEpoch,
} from './data-port/data-port-layout';
export type { FrameDirection } from './data-port/frame-reader';
export { FrameSplitter, type FrameSplitterOptions } from './data-port/frame-splitter';
export {
  apiVersionsApiVersion,
  type DataPortApiVersionsResponse,
  encodeApiVersionsRequest,
  encodeApiVersionsResponse,
} from './data-port/api-versions-codec';
export {
  type DataPortFetchedPartition,
  type DataPortFetchPartition,
  type DataPortFetchPartitionHeader,
  type DataPortFetchRequest,
  type DataPortFetchResponse,
  type DataPortFetchSessionRequest,
  type DataPortFetchSessionResponse,
  type DataPortTopicPartition,
  encodeFetchRequest,
  encodeFetchResponse,
  encodeFetchResponseHeader,
  fetchApiVersionOf,
  fetchApiVersionSessionless,
  fetchApiVersionWithSessions,
  fetchResponseBytesMax,
  fetchSessionEpochFinal,
  fetchSessionEpochInitial,
  fetchSessionIdNone,
} from './data-port/fetch-codec';
export {
  type DataPortEpochEndOffset,
  type DataPortOffsetForLeaderEpochPartition,
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  encodeOffsetForLeaderEpochRequest,
  encodeOffsetForLeaderEpochResponse,
  offsetForLeaderEpochApiVersion,
} from './data-port/offset-for-leader-epoch-codec';
export { type DataPortErrorResponse, encodeErrorResponse } from './data-port/error-response-codec';
export {
  type DataPortRequest,
  type DataPortRequestHeader,
  decodeDataPortRequest,
  decodeDataPortRequestHeader,
} from './data-port/data-port-request';
export { type DataPortResponse, decodeDataPortResponse } from './data-port/data-port-response';
export {
  DataPortClient,
  dataPortClientInFlightRequestsMaxDefault,
  type DataPortClientOptions,
  dataPortConnectTimeoutMsDefault,
  type DataPortFetchOptions,
  type DataPortRequestOptions,
} from './data-port/data-port-client';
// A faster CRC-32C that another package provides (the segment store's addon), checked first
// against the standard vectors and the JavaScript tables, which its tests compare with too.
export {
  crc32cJavaScript,
  type Crc32cFunction,
  type Crc32cInstallResult,
  installCrc32cImplementation,
} from './record-batch/crc32c';
export { splitRecordBatchPositions } from './record-batch/record-batch-append-validator';
// Which __consumer_offsets partition (coordinator shard) holds a group, as Kafka computes it.
export {
  groupPartition,
  javaStringHashCode,
  consumerOffsetsTopic,
  consumerOffsetsPartitionCountDefault,
} from './group-partition';
// The records of __consumer_offsets.
export {
  OffsetCommitValue,
  OffsetRemoved,
  OffsetsRecordKey,
  OffsetsRecordValue,
  ShardEpochMarker,
} from './generated/spool/v1/offsets_topic';
