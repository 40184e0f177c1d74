// OFFSET_FOR_LEADER_EPOCH (apiKey 2) v0 of the data port: a follower asks the leader where a
// leader epoch ends, and truncates its log there before fetching (Kafka's OffsetsForLeaderEpoch,
// KIP-101 and KIP-279). Byte layout in data-port-layout.ts.
import {
  DataPortApiKey,
  dataPortPartitionsMax,
  errorCodeBytesMax,
  errorMessageBytesMax,
  stringBytesMax,
} from './data-port-layout';
import type { FrameReader } from './frame-reader';
import { startRequestFrame, startResponseFrame, truncateUtf8 } from './frame-writer';

/** The version of OFFSET_FOR_LEADER_EPOCH this codec writes and reads. */
export const offsetForLeaderEpochApiVersion = 0;

export interface DataPortOffsetForLeaderEpochPartition {
  readonly topic: string;
  readonly partition: number;
  /** The follower's view of the current leader epoch, -1 when unknown (no fencing check). */
  readonly currentLeaderEpoch: number;
  /** The epoch whose end offset the follower asks for: the last epoch in its own log. */
  readonly leaderEpoch: number;
}

export interface DataPortOffsetForLeaderEpochRequest {
  /** The follower's broker id; -1 for a tool that is not a replica. */
  readonly replicaId: number;
  readonly partitions: readonly DataPortOffsetForLeaderEpochPartition[];
}

export interface DataPortEpochEndOffset {
  readonly topic: string;
  readonly partition: number;
  /** Empty for none; else Kafka's name (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...). */
  readonly errorCode: string;
  readonly errorMessage: string;
  /** The largest epoch ≤ the requested one that the leader knows, -1 if none. */
  readonly leaderEpoch: number;
  /** The first offset after that epoch on the leader (its log end offset for the latest), -1 if none. */
  readonly endOffset: bigint;
}

export interface DataPortOffsetForLeaderEpochResponse {
  readonly partitions: readonly DataPortEpochEndOffset[];
}

/** topic length, partition, currentLeaderEpoch, leaderEpoch. */
const requestPartitionBytesMin = 2 + 4 + 4 + 4;
/** topic, errorCode and errorMessage lengths, partition, leaderEpoch, endOffset. */
const responsePartitionBytesMin = 2 + 2 + 2 + 4 + 4 + 8;

export function encodeOffsetForLeaderEpochRequest(
  correlationId: number,
  request: DataPortOffsetForLeaderEpochRequest,
): Buffer {
  const writer = startRequestFrame(
    DataPortApiKey.OffsetForLeaderEpoch,
    offsetForLeaderEpochApiVersion,
    correlationId,
  )
    .i32(request.replicaId)
    .u32(request.partitions.length);
  for (const partition of request.partitions) {
    writer
      .string(partition.topic, stringBytesMax)
      .i32(partition.partition)
      .i32(partition.currentLeaderEpoch)
      .i32(partition.leaderEpoch);
  }
  return writer.finish();
}

export function readOffsetForLeaderEpochRequestBody(
  reader: FrameReader,
): DataPortOffsetForLeaderEpochRequest {
  const replicaId = reader.i32AtLeast('replicaId', -1);
  const count = reader.count('partitions', requestPartitionBytesMin, dataPortPartitionsMax);
  const partitions: DataPortOffsetForLeaderEpochPartition[] = [];
  for (let index = 0; index < count; index++) {
    const field = `partitions[${index}]`;
    partitions.push({
      topic: reader.string(`${field}.topic`, stringBytesMax),
      partition: reader.i32AtLeast(`${field}.partition`, 0),
      currentLeaderEpoch: reader.i32AtLeast(`${field}.currentLeaderEpoch`, -1),
      leaderEpoch: reader.i32AtLeast(`${field}.leaderEpoch`, -1),
    });
  }
  reader.ensureEnd();
  return { replicaId, partitions };
}

/** Error messages longer than errorMessageBytesMax are cut. */
export function encodeOffsetForLeaderEpochResponse(
  correlationId: number,
  response: DataPortOffsetForLeaderEpochResponse,
): Buffer {
  const writer = startResponseFrame(correlationId, DataPortApiKey.OffsetForLeaderEpoch).u32(
    response.partitions.length,
  );
  for (const partition of response.partitions) {
    writer
      .string(partition.topic, stringBytesMax)
      .i32(partition.partition)
      .string(partition.errorCode, errorCodeBytesMax)
      .string(truncateUtf8(partition.errorMessage, errorMessageBytesMax), errorMessageBytesMax)
      .i32(partition.leaderEpoch)
      .i64(partition.endOffset);
  }
  return writer.finish();
}

export function readOffsetForLeaderEpochResponseBody(
  reader: FrameReader,
): DataPortOffsetForLeaderEpochResponse {
  const count = reader.count('partitions', responsePartitionBytesMin, dataPortPartitionsMax);
  const partitions: DataPortEpochEndOffset[] = [];
  for (let index = 0; index < count; index++) {
    const field = `partitions[${index}]`;
    partitions.push({
      topic: reader.string(`${field}.topic`, stringBytesMax),
      partition: reader.i32(`${field}.partition`),
      errorCode: reader.string(`${field}.errorCode`, errorCodeBytesMax),
      errorMessage: reader.string(`${field}.errorMessage`, errorMessageBytesMax),
      leaderEpoch: reader.i32(`${field}.leaderEpoch`),
      endOffset: reader.i64(`${field}.endOffset`),
    });
  }
  reader.ensureEnd();
  return { partitions };
}
