// FETCH (apiKey 1) v0 of the data port: consumer and replica fetches. Byte layout in
// data-port-layout.ts. The response puts every partition header before any records, so the
// server writes the headers in one write (encodeFetchResponseHeader) and then moves each
// partition's records from the segment files with sendfile.
import {
  DataPortApiKey,
  dataPortPartitionsMax,
  errorCodeBytesMax,
  errorMessageBytesMax,
  frameSizeFieldBytes,
  recordBatchBytesMax,
  responseHeaderBytes,
  stringBytesMax,
} from './data-port-layout';
import type { FrameReader } from './frame-reader';
import { startRequestFrame, startResponseFrame, truncateUtf8 } from './frame-writer';

/** The version of FETCH this codec writes and reads. */
export const fetchApiVersion = 0;

/** One partition to fetch from, as Kafka's FetchRequest.FetchPartition. */
export interface DataPortFetchPartition {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  /** The fetcher's view of the leader epoch, -1 when unknown (no fencing check). */
  readonly currentLeaderEpoch: number;
  /** The follower's log start offset, -1 for a consumer. */
  readonly logStartOffset: bigint;
  readonly partitionMaxBytes: number;
}

export interface DataPortFetchRequest {
  /** -1 for a consumer, the follower's broker id for replication. */
  readonly replicaId: number;
  /** The follower's broker epoch, -1 for a consumer. */
  readonly brokerEpoch: bigint;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  /**
   * Records in the whole response; the first batch of the first non-empty partition comes whole
   * even when larger (Kafka's KIP-74), so a fetch always makes progress.
   */
  readonly maxBytes: number;
  readonly partitions: readonly DataPortFetchPartition[];
}

/** What a response says about one partition, besides its records. */
export interface DataPortFetchPartitionHeader {
  readonly topic: string;
  readonly partition: number;
  /** Empty for none; else Kafka's name (NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE, ...). */
  readonly errorCode: string;
  readonly errorMessage: string;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  readonly recordsSizeBytes: number;
}

/** A partition of a decoded response: its header fields and its records (RecordBatch v2 bytes). */
export interface DataPortFetchedPartition extends Omit<
  DataPortFetchPartitionHeader,
  'recordsSizeBytes'
> {
  readonly records: Buffer;
}

export interface DataPortFetchResponse {
  readonly partitions: readonly DataPortFetchedPartition[];
}

/** topic length, partition, fetchOffset, currentLeaderEpoch, logStartOffset, partitionMaxBytes. */
const requestPartitionBytesMin = 2 + 4 + 8 + 4 + 8 + 4;
/** topic, errorCode and errorMessage lengths, partition, three offsets, recordsSizeBytes. */
const responsePartitionHeaderBytesMin = 2 + 2 + 2 + 4 + 8 + 8 + 8 + 4;

export function encodeFetchRequest(correlationId: number, request: DataPortFetchRequest): Buffer {
  const writer = startRequestFrame(DataPortApiKey.Fetch, fetchApiVersion, correlationId)
    .i32(request.replicaId)
    .i64(request.brokerEpoch)
    .i32(request.maxWaitMs)
    .i32(request.minBytes)
    .i32(request.maxBytes)
    .u32(request.partitions.length);
  for (const partition of request.partitions) {
    writer
      .string(partition.topic, stringBytesMax)
      .i32(partition.partition)
      .i64(partition.fetchOffset)
      .i32(partition.currentLeaderEpoch)
      .i64(partition.logStartOffset)
      .i32(partition.partitionMaxBytes);
  }
  return writer.finish();
}

/** Reads the body of a FETCH request, from right after its header to the frame's end. */
export function readFetchRequestBody(reader: FrameReader): DataPortFetchRequest {
  const replicaId = reader.i32AtLeast('replicaId', -1);
  const brokerEpoch = reader.i64('brokerEpoch');
  const maxWaitMs = reader.i32AtLeast('maxWaitMs', 0);
  const minBytes = reader.i32AtLeast('minBytes', 0);
  const maxBytes = reader.i32AtLeast('maxBytes', 0);
  const count = reader.count('partitions', requestPartitionBytesMin, dataPortPartitionsMax);
  const partitions: DataPortFetchPartition[] = [];
  for (let index = 0; index < count; index++) {
    const field = `partitions[${index}]`;
    partitions.push({
      topic: reader.string(`${field}.topic`, stringBytesMax),
      partition: reader.i32AtLeast(`${field}.partition`, 0),
      fetchOffset: reader.i64(`${field}.fetchOffset`),
      currentLeaderEpoch: reader.i32AtLeast(`${field}.currentLeaderEpoch`, -1),
      logStartOffset: reader.i64(`${field}.logStartOffset`),
      partitionMaxBytes: reader.i32AtLeast(`${field}.partitionMaxBytes`, 0),
    });
  }
  reader.ensureEnd();
  return { replicaId, brokerEpoch, maxWaitMs, minBytes, maxBytes, partitions };
}

/**
 * The response frame up to the first record: header and every partition header, with a
 * sizeBytes that counts the records the caller sends right after it (sum of recordsSizeBytes).
 * Error messages longer than errorMessageBytesMax are cut.
 */
export function encodeFetchResponseHeader(
  correlationId: number,
  partitions: readonly DataPortFetchPartitionHeader[],
): Buffer {
  const writer = startResponseFrame(correlationId, DataPortApiKey.Fetch).u32(partitions.length);
  let recordsSizeBytes = 0;
  for (const partition of partitions) {
    writer
      .string(partition.topic, stringBytesMax)
      .i32(partition.partition)
      .string(partition.errorCode, errorCodeBytesMax)
      .string(truncateUtf8(partition.errorMessage, errorMessageBytesMax), errorMessageBytesMax)
      .i64(partition.highWatermark)
      .i64(partition.logStartOffset)
      .i64(partition.logEndOffset)
      .i32(partition.recordsSizeBytes);
    recordsSizeBytes += partition.recordsSizeBytes;
  }
  return writer.finish(recordsSizeBytes);
}

/** The whole response frame with the records in memory: for tests and tools, not the server. */
export function encodeFetchResponse(
  correlationId: number,
  response: DataPortFetchResponse,
): Buffer {
  const header = encodeFetchResponseHeader(
    correlationId,
    response.partitions.map((partition) => ({
      ...partition,
      recordsSizeBytes: partition.records.length,
    })),
  );
  return Buffer.concat([header, ...response.partitions.map((partition) => partition.records)]);
}

/**
 * Reads the body of a FETCH response: every partition header, then each partition's records,
 * which must fill the rest of the frame exactly. Records are views into the frame.
 */
export function readFetchResponseBody(reader: FrameReader): DataPortFetchResponse {
  const count = reader.count('partitions', responsePartitionHeaderBytesMin, dataPortPartitionsMax);
  const headers: DataPortFetchPartitionHeader[] = [];
  let recordsSizeBytes = 0;
  for (let index = 0; index < count; index++) {
    const field = `partitions[${index}]`;
    const header: DataPortFetchPartitionHeader = {
      topic: reader.string(`${field}.topic`, stringBytesMax),
      partition: reader.i32(`${field}.partition`),
      errorCode: reader.string(`${field}.errorCode`, errorCodeBytesMax),
      errorMessage: reader.string(`${field}.errorMessage`, errorMessageBytesMax),
      highWatermark: reader.i64(`${field}.highWatermark`),
      logStartOffset: reader.i64(`${field}.logStartOffset`),
      logEndOffset: reader.i64(`${field}.logEndOffset`),
      recordsSizeBytes: reader.i32AtLeast(`${field}.recordsSizeBytes`, 0),
    };
    headers.push(header);
    recordsSizeBytes += header.recordsSizeBytes;
  }
  if (recordsSizeBytes !== reader.bytesLeft) {
    reader.fail(
      'records',
      reader.position,
      `should be ${recordsSizeBytes} bytes by the partition headers, but ${reader.bytesLeft} ` +
        'bytes follow them',
    );
  }
  const partitions = headers.map(({ recordsSizeBytes: sizeBytes, ...rest }, index) => ({
    ...rest,
    records: reader.bytes(`partitions[${index}].records`, sizeBytes),
  }));
  reader.ensureEnd();
  return { partitions };
}

/**
 * The largest response frame a client accepts for `request`: every partition header at its
 * largest, maxBytes of records, and one batch more (the KIP-74 exception above). Anything larger
 * is a broken server or a broken stream, and is refused before a byte of it is buffered.
 */
export function fetchResponseBytesMax(request: DataPortFetchRequest): number {
  let headersBytes = frameSizeFieldBytes + responseHeaderBytes + 4;
  for (const partition of request.partitions) {
    headersBytes +=
      responsePartitionHeaderBytesMin +
      Buffer.byteLength(partition.topic, 'utf8') +
      errorCodeBytesMax +
      errorMessageBytesMax;
  }
  return headersBytes + request.maxBytes + recordBatchBytesMax;
}
