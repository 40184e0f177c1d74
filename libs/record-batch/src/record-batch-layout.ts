/**
 * The byte layout of a RecordBatch v2 (magic 2), exactly as Kafka's DefaultRecordBatch writes it.
 * All integers are big-endian and signed unless marked otherwise.
 *
 *   position  size  field
 *   0         8     baseOffset            int64: offset of the first record
 *   8         4     batchLength           int32: bytes after this field (size - LOG_OVERHEAD)
 *   12        4     partitionLeaderEpoch  int32: -1 until the leader stamps it
 *   16        1     magic                 int8: 2
 *   17        4     crc                   uint32: CRC-32C of every byte from attributes to the end
 *   21        2     attributes            int16: bit flags, below
 *   23        4     lastOffsetDelta       int32: offset of the last record - baseOffset
 *   27        8     baseTimestamp         int64: timestamp of the first record (or delete horizon)
 *   35        8     maxTimestamp          int64: greatest timestamp (log append time if that type)
 *   43        8     producerId            int64: -1 without idempotence
 *   51        2     producerEpoch         int16: -1 without idempotence
 *   53        4     baseSequence          int32: sequence of the first record, -1 without
 *   57        4     recordCount           int32: number of records that follow
 *   61        …     records               varint-encoded records, compressed as a whole if at all
 *
 * Attributes: bits 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3
 * timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5 control, bit 6 delete horizon
 * set (baseTimestamp then holds it). The remaining bits are unused and written as zero.
 *
 * The CRC starts at attributes on purpose: the leader assigns baseOffset and stamps
 * partitionLeaderEpoch in place, and neither write invalidates the producer's checksum.
 *
 * Names say `Position` for a byte position within the batch, so they never read as log offsets.
 */

/** Kafka's BASE_OFFSET_OFFSET. */
export const baseOffsetPosition = 0;
/** Kafka's LENGTH_OFFSET. */
export const batchLengthPosition = 8;
/** Kafka's PARTITION_LEADER_EPOCH_OFFSET. */
export const partitionLeaderEpochPosition = 12;
/** Kafka's MAGIC_OFFSET. */
export const magicPosition = 16;
/** Kafka's CRC_OFFSET. */
export const crcPosition = 17;
/** Kafka's ATTRIBUTES_OFFSET; also where the CRC-covered bytes begin. */
export const attributesPosition = 21;
/** Kafka's LAST_OFFSET_DELTA_OFFSET. */
export const lastOffsetDeltaPosition = 23;
/** Kafka's BASE_TIMESTAMP_OFFSET. */
export const baseTimestampPosition = 27;
/** Kafka's MAX_TIMESTAMP_OFFSET. */
export const maxTimestampPosition = 35;
/** Kafka's PRODUCER_ID_OFFSET. */
export const producerIdPosition = 43;
/** Kafka's PRODUCER_EPOCH_OFFSET. */
export const producerEpochPosition = 51;
/** Kafka's BASE_SEQUENCE_OFFSET. */
export const baseSequencePosition = 53;
/** Kafka's RECORDS_COUNT_OFFSET. */
export const recordCountPosition = 57;
/** Kafka's RECORDS_OFFSET. */
export const recordsPosition = 61;

/** Kafka's RECORD_BATCH_OVERHEAD: every byte of a batch before its first record. */
export const recordBatchHeaderSizeBytes = 61;
/** Kafka's LOG_OVERHEAD: baseOffset and batchLength, the bytes batchLength does not count. */
export const logOverheadSizeBytes = 12;
/** Kafka's HEADER_SIZE_UP_TO_MAGIC: what must be present before the format can be told. */
export const headerSizeUpToMagicBytes = 17;
/** The smallest batchLength a v2 batch can have: a header without records. */
export const batchLengthMin = recordBatchHeaderSizeBytes - logOverheadSizeBytes;
/**
 * The smallest encoded record: a one-byte length varint, then attributes, timestamp delta,
 * offset delta, key length, value length and header count of one byte each.
 */
export const recordSizeBytesMin = 7;

/** Kafka's CURRENT_MAGIC_VALUE, the only message format Spool reads or writes. */
export const magicValueV2 = 2;

export const compressionCodecMask = 0x07;
export const timestampTypeMask = 0x08;
export const transactionalFlagMask = 0x10;
export const controlFlagMask = 0x20;
export const deleteHorizonFlagMask = 0x40;

/** Kafka's compression type ids, as stored in attribute bits 0-2. */
export const CompressionType = {
  None: 0,
  Gzip: 1,
  Snappy: 2,
  Lz4: 3,
  Zstd: 4,
} as const;
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType];

export function isKnownCompressionType(id: number): id is CompressionType {
  return Number.isInteger(id) && id >= CompressionType.None && id <= CompressionType.Zstd;
}

/** Kafka's TimestampType ids, as stored in attribute bit 3. */
export const TimestampType = {
  CreateTime: 0,
  LogAppendTime: 1,
} as const;
export type TimestampType = (typeof TimestampType)[keyof typeof TimestampType];

/** Kafka's RecordBatch.NO_PRODUCER_ID: the batch is not idempotent. */
export const noProducerId = -1n;
/** Kafka's RecordBatch.NO_PRODUCER_EPOCH. */
export const noProducerEpoch = -1;
/** Kafka's RecordBatch.NO_SEQUENCE. */
export const noSequence = -1;
/** Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH: the leader has not stamped the batch yet. */
export const noPartitionLeaderEpoch = -1;
/** Kafka's RecordBatch.NO_TIMESTAMP: a record without a timestamp. */
export const noTimestamp = -1n;
