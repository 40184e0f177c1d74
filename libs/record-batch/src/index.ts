// RecordBatch v2, Kafka's record format, as every Spool process and the client SDK read and write
// it: the byte layout, the header's fields, encoding and decoding (with the compression codecs),
// the checks a batch gets before it is written (framing, CRC, fields), CRC-32C and varints.
export { RecordBatchError, RecordBatchErrorCode } from './errors';
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
} from './varint';
export { crc32c, crc32cImplementation, type Crc32cImplementation } from './crc32c';
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
} from './record-batch-layout';
export {
  incrementSequence,
  lastOffsetOf,
  RecordBatchHeader,
  recordBatchSizeBytes,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
} from './record-batch-header';
export {
  type CompressionCodec,
  compressionCodecFor,
  registerCompressionCodec,
} from './compression-codec';
export type { DecodedRecord, RecordHeader, RecordInput } from './record';
export {
  type RecordFields,
  type RecordReader,
  uncompressedRecordsBytesMaxDefault,
} from './record-reader';
export { encodeRecordBatch, type RecordBatchInput } from './record-batch-encoder';
export { RecordBatchBuilder, type RecordBatchFields } from './record-batch-builder';
export {
  decodeRecordBatch,
  decodeRecordBatches,
  openRecordBatch,
  type DecodedRecordBatch,
  type DecodeRecordBatchOptions,
} from './record-batch-decoder';
export {
  type RecordBatchOrigin,
  type RecordBatchValidationOptions,
  splitRecordBatches,
  validateRecordBatch,
  checkRecordBatchFraming,
  checkRecordBatchCrc,
  checkRecordBatchFields,
} from './record-batch-validator';
// A faster CRC-32C that another package provides (the segment store's addon), checked first
// against the standard vectors and the JavaScript tables, which its tests compare with too.
export {
  crc32cJavaScript,
  type Crc32cFunction,
  type Crc32cInstallResult,
  installCrc32cImplementation,
} from './crc32c';
export { splitRecordBatchPositions } from './record-batch-append-validator';
