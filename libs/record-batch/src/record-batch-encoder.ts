import assert from 'node:assert/strict';
import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { compressionCodecFor } from './compression-codec';
import { crc32c } from './crc32c';
import type { RecordInput } from './record';
import {
  attributesPosition,
  baseOffsetPosition,
  baseSequencePosition,
  baseTimestampPosition,
  batchLengthPosition,
  CompressionType,
  controlFlagMask,
  crcPosition,
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
  timestampTypeMask,
  transactionalFlagMask,
} from './record-batch-layout';
import { sizeOfRecord, sizeOfRecordBody, writeRecord } from './record-writer';

/**
 * Builds a RecordBatch v2 with the bytes Kafka's MemoryRecordsBuilder would produce for the
 * same records and fields: baseTimestamp is the first record's timestamp, maxTimestamp the
 * greatest (or the log append time), lastOffsetDelta the last record's offset delta. Sizes are
 * computed first and the batch is written into one buffer allocated once; a compressed batch
 * needs one more, for the uncompressed records the codec reads.
 */

export interface RecordBatchInput {
  /** 0n from a producer; the leader assigns the real offset in place. */
  baseOffset: bigint;
  /** At least one record: Kafka writes no batch for none. */
  records: readonly RecordInput[];
  /** Defaults to -1: the leader stamps its epoch in place. */
  partitionLeaderEpoch?: number;
  /** Defaults to -1n: not idempotent. */
  producerId?: bigint;
  /** Defaults to -1. */
  producerEpoch?: number;
  /** Defaults to -1; the sequence of the first record for an idempotent producer. */
  baseSequence?: number;
  /** Defaults to none; a codec must be registered for any other. */
  compressionType?: CompressionType;
  isTransactional?: boolean;
  isControl?: boolean;
  /** Marks the batch LogAppendTime with this time as its maxTimestamp; CreateTime if absent. */
  logAppendTimeMs?: bigint;
}

const int32Max = 0x7fffffff;

function invalidInput(problem: string): RecordBatchError {
  return new RecordBatchError(
    RecordBatchErrorCode.InvalidRecord,
    `cannot encode record batch: ${problem}`,
  );
}

function isInt64(value: bigint): boolean {
  return BigInt.asIntN(64, value) === value;
}

/** What the header needs from the records, and each record's body size for writing them. */
interface RecordsPlan {
  baseTimestampMs: bigint;
  maxTimestampMs: bigint;
  offsetDeltas: Int32Array;
  bodySizesBytes: Int32Array;
  recordsSizeBytes: number;
}

/**
 * Checks the records as Kafka's MemoryRecordsBuilder does (timestamps of -1 or more, offsets
 * increasing) and sizes them.
 */
function planRecords(records: readonly RecordInput[]): RecordsPlan {
  if (records.length === 0) throw invalidInput('a batch needs at least one record');
  const baseTimestampMs = records[0].timestampMs;
  let maxTimestampMs = noTimestamp;
  const offsetDeltas = new Int32Array(records.length);
  const bodySizesBytes = new Int32Array(records.length);
  let recordsSizeBytes = 0;
  let previousOffsetDelta = -1;
  for (let index = 0; index < records.length; index++) {
    const record = records[index];
    const timestampMs = record.timestampMs;
    if (timestampMs < noTimestamp || !isInt64(timestampMs)) {
      throw invalidInput(`record ${index} has timestamp ${timestampMs}`);
    }
    if (timestampMs > maxTimestampMs) maxTimestampMs = timestampMs;
    const timestampDelta = timestampMs - baseTimestampMs;
    if (!isInt64(timestampDelta)) {
      throw invalidInput(`record ${index} is too far in time from record 0 for a delta`);
    }
    const offsetDelta = record.offsetDelta ?? index;
    const isInOrder = Number.isInteger(offsetDelta) && offsetDelta > previousOffsetDelta;
    if (!isInOrder || offsetDelta > int32Max) {
      throw invalidInput(
        `record ${index} has offsetDelta ${offsetDelta} after ${previousOffsetDelta}`,
      );
    }
    previousOffsetDelta = offsetDelta;
    offsetDeltas[index] = offsetDelta;
    const bodySizeBytes = sizeOfRecordBody(record, offsetDelta, timestampDelta);
    bodySizesBytes[index] = bodySizeBytes;
    recordsSizeBytes += sizeOfRecord(bodySizeBytes);
  }
  return { baseTimestampMs, maxTimestampMs, offsetDeltas, bodySizesBytes, recordsSizeBytes };
}

function writeRecords(
  buffer: Buffer,
  position: number,
  records: readonly RecordInput[],
  plan: RecordsPlan,
): void {
  let next = position;
  for (let index = 0; index < records.length; index++) {
    const record = records[index];
    const timestampDelta = record.timestampMs - plan.baseTimestampMs;
    const offsetDelta = plan.offsetDeltas[index];
    next = writeRecord(
      buffer,
      next,
      record,
      plan.bodySizesBytes[index],
      offsetDelta,
      timestampDelta,
    );
  }
  assert.equal(next, position + plan.recordsSizeBytes, 'records were not written to their size');
}

function attributesOf(batch: RecordBatchInput, compressionType: CompressionType): number {
  let attributes: number = compressionType;
  if (batch.logAppendTimeMs !== undefined) attributes |= timestampTypeMask;
  if (batch.isTransactional === true) attributes |= transactionalFlagMask;
  if (batch.isControl === true) attributes |= controlFlagMask;
  return attributes;
}

/** Kafka's DefaultRecordBatch.writeHeader: every header field, then the CRC over the rest. */
function writeHeader(
  buffer: Buffer,
  batch: RecordBatchInput,
  compressionType: CompressionType,
  plan: RecordsPlan,
): void {
  const recordCount = batch.records.length;
  buffer.writeBigInt64BE(batch.baseOffset, baseOffsetPosition);
  buffer.writeInt32BE(buffer.length - logOverheadSizeBytes, batchLengthPosition);
  buffer.writeInt32BE(
    batch.partitionLeaderEpoch ?? noPartitionLeaderEpoch,
    partitionLeaderEpochPosition,
  );
  buffer.writeInt8(magicValueV2, magicPosition);
  buffer.writeInt16BE(attributesOf(batch, compressionType), attributesPosition);
  buffer.writeInt32BE(plan.offsetDeltas[recordCount - 1], lastOffsetDeltaPosition);
  buffer.writeBigInt64BE(plan.baseTimestampMs, baseTimestampPosition);
  buffer.writeBigInt64BE(batch.logAppendTimeMs ?? plan.maxTimestampMs, maxTimestampPosition);
  buffer.writeBigInt64BE(batch.producerId ?? noProducerId, producerIdPosition);
  buffer.writeInt16BE(batch.producerEpoch ?? noProducerEpoch, producerEpochPosition);
  buffer.writeInt32BE(batch.baseSequence ?? noSequence, baseSequencePosition);
  buffer.writeInt32BE(recordCount, recordCountPosition);
  buffer.writeUInt32BE(crc32c(buffer, attributesPosition, buffer.length), crcPosition);
}

/** Encodes one batch. Field values outside their integer widths throw a RangeError. */
export function encodeRecordBatch(batch: RecordBatchInput): Buffer {
  const compressionType = batch.compressionType ?? CompressionType.None;
  const codec = compressionCodecFor(compressionType);
  const plan = planRecords(batch.records);
  let buffer: Buffer;
  if (compressionType === CompressionType.None) {
    buffer = Buffer.allocUnsafe(recordBatchHeaderSizeBytes + plan.recordsSizeBytes);
    writeRecords(buffer, recordBatchHeaderSizeBytes, batch.records, plan);
  } else {
    const records = Buffer.allocUnsafe(plan.recordsSizeBytes);
    writeRecords(records, 0, batch.records, plan);
    const compressed = codec.compress(records);
    buffer = Buffer.allocUnsafe(recordBatchHeaderSizeBytes + compressed.length);
    compressed.copy(buffer, recordBatchHeaderSizeBytes);
  }
  if (buffer.length - logOverheadSizeBytes > int32Max) {
    throw invalidInput(`the batch would be ${buffer.length} bytes, beyond batchLength's range`);
  }
  writeHeader(buffer, batch, compressionType, plan);
  return buffer;
}
