// FETCH (apiKey 1) of the data port: consumer and replica fetches. Byte layout in
// data-port-layout.ts. The response puts every partition header before any records, so the
// server writes the headers in one write (encodeFetchResponseHeader) and then moves each
// partition's records from the segment files with sendfile.
//
// Version 0 is sessionless: every request names every partition and every response answers
// each. Version 1 adds Kafka's incremental fetch sessions (KIP-227): a request carries a session
// id and epoch, names only the partitions whose fetch position changed and the partitions to
// forget, and the response names only partitions with records, an error, or a new high
// watermark or log start offset. A request with a session is written as v1, one without as v0.
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

/** The versions of FETCH: v0 sessionless, v1 with fetch sessions (KIP-227). */
export const fetchApiVersionSessionless = 0;
export const fetchApiVersionWithSessions = 1;

/** sessionId of no session: a full, sessionless fetch, or the answer "no session was made". */
export const fetchSessionIdNone = 0;
/** sessionEpoch that asks for a full fetch and a new session (Kafka's INITIAL_EPOCH). */
export const fetchSessionEpochInitial = 0;
/** sessionEpoch that closes the session, or asks for no session (Kafka's FINAL_EPOCH). */
export const fetchSessionEpochFinal = -1;

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

/** A partition, by topic and number. */
export interface DataPortTopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** The fetch-session fields of a v1 request (Kafka's FetchRequest v7+). */
export interface DataPortFetchSessionRequest {
  /** fetchSessionIdNone with sessionEpochInitial asks for a new session. */
  readonly sessionId: number;
  /**
   * fetchSessionEpochInitial (0) for a full fetch that opens a session; then 1, 2, ... one per
   * request of the session (after 2^31 − 1 comes 1); fetchSessionEpochFinal (−1) closes it.
   */
  readonly sessionEpoch: number;
  /** Partitions to drop from the session (no longer followed, or backing off an error). */
  readonly forgottenPartitions: readonly DataPortTopicPartition[];
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
  /**
   * With a session, only partitions new to it or whose fetchOffset, currentLeaderEpoch,
   * logStartOffset or partitionMaxBytes changed; the session remembers the others.
   */
  readonly partitions: readonly DataPortFetchPartition[];
  /** Present for a v1 request. */
  readonly session?: DataPortFetchSessionRequest;
}

/** The fetch-session fields of a v1 response. */
export interface DataPortFetchSessionResponse {
  /**
   * Empty for none; FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH when the session
   * is unknown or out of step: the response then has no partitions and the fetcher starts over
   * with a full fetch.
   */
  readonly errorCode: string;
  readonly errorMessage: string;
  /** The session the next request continues, fetchSessionIdNone when there is none. */
  readonly sessionId: number;
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
  /** Present for a v1 response. */
  readonly session?: DataPortFetchSessionResponse;
}

/** topic length, partition, fetchOffset, currentLeaderEpoch, logStartOffset, partitionMaxBytes. */
const requestPartitionBytesMin = 2 + 4 + 8 + 4 + 8 + 4;
/** topic length, partition. */
const forgottenPartitionBytesMin = 2 + 4;
/** topic, errorCode and errorMessage lengths, partition, three offsets, recordsSizeBytes. */
const responsePartitionHeaderBytesMin = 2 + 2 + 2 + 4 + 8 + 8 + 8 + 4;
/** Kafka's longest topic name (249) rounded up: bounds headers of partitions a request omits. */
const topicNameBytesMaxForBound = 255;
/** v1's session fields in a response: errorCode, errorMessage (longest), sessionId. */
const responseSessionBytesMax = 2 + errorCodeBytesMax + 2 + errorMessageBytesMax + 4;

/** The version a request is written in: v1 exactly when it carries session fields. */
export function fetchApiVersionOf(request: Pick<DataPortFetchRequest, 'session'>): number {
  return request.session === undefined ? fetchApiVersionSessionless : fetchApiVersionWithSessions;
}

export function encodeFetchRequest(correlationId: number, request: DataPortFetchRequest): Buffer {
  const writer = startRequestFrame(DataPortApiKey.Fetch, fetchApiVersionOf(request), correlationId)
    .i32(request.replicaId)
    .i64(request.brokerEpoch)
    .i32(request.maxWaitMs)
    .i32(request.minBytes)
    .i32(request.maxBytes);
  if (request.session !== undefined) {
    writer.i32(request.session.sessionId).i32(request.session.sessionEpoch);
  }
  writer.u32(request.partitions.length);
  for (const partition of request.partitions) {
    writer
      .string(partition.topic, stringBytesMax)
      .i32(partition.partition)
      .i64(partition.fetchOffset)
      .i32(partition.currentLeaderEpoch)
      .i64(partition.logStartOffset)
      .i32(partition.partitionMaxBytes);
  }
  if (request.session !== undefined) {
    writer.u32(request.session.forgottenPartitions.length);
    for (const forgotten of request.session.forgottenPartitions) {
      writer.string(forgotten.topic, stringBytesMax).i32(forgotten.partition);
    }
  }
  return writer.finish();
}

/**
 * Reads the body of a FETCH request of `apiVersion`, from right after its header to the frame's
 * end.
 */
export function readFetchRequestBody(
  reader: FrameReader,
  apiVersion = fetchApiVersionSessionless,
): DataPortFetchRequest {
  const replicaId = reader.i32AtLeast('replicaId', -1);
  const brokerEpoch = reader.i64('brokerEpoch');
  const maxWaitMs = reader.i32AtLeast('maxWaitMs', 0);
  const minBytes = reader.i32AtLeast('minBytes', 0);
  const maxBytes = reader.i32AtLeast('maxBytes', 0);
  const withSession = apiVersion >= fetchApiVersionWithSessions;
  const sessionId = withSession ? reader.i32AtLeast('sessionId', 0) : fetchSessionIdNone;
  const sessionEpoch = withSession
    ? reader.i32AtLeast('sessionEpoch', fetchSessionEpochFinal)
    : fetchSessionEpochFinal;
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
  const request = { replicaId, brokerEpoch, maxWaitMs, minBytes, maxBytes, partitions };
  if (!withSession) {
    reader.ensureEnd();
    return request;
  }
  const forgottenCount = reader.count(
    'forgottenPartitions',
    forgottenPartitionBytesMin,
    dataPortPartitionsMax,
  );
  const forgottenPartitions: DataPortTopicPartition[] = [];
  for (let index = 0; index < forgottenCount; index++) {
    const field = `forgottenPartitions[${index}]`;
    forgottenPartitions.push({
      topic: reader.string(`${field}.topic`, stringBytesMax),
      partition: reader.i32AtLeast(`${field}.partition`, 0),
    });
  }
  reader.ensureEnd();
  return { ...request, session: { sessionId, sessionEpoch, forgottenPartitions } };
}

/**
 * The response frame up to the first record: header and every partition header, with a
 * sizeBytes that counts the records the caller sends right after it (sum of recordsSizeBytes).
 * Error messages longer than errorMessageBytesMax are cut. With `session` it is a v1 response
 * (the answer to a v1 request), without one a v0 response.
 */
export function encodeFetchResponseHeader(
  correlationId: number,
  partitions: readonly DataPortFetchPartitionHeader[],
  session?: DataPortFetchSessionResponse,
): Buffer {
  const writer = startResponseFrame(correlationId, DataPortApiKey.Fetch);
  if (session !== undefined) {
    writer
      .string(session.errorCode, errorCodeBytesMax)
      .string(truncateUtf8(session.errorMessage, errorMessageBytesMax), errorMessageBytesMax)
      .i32(session.sessionId);
  }
  writer.u32(partitions.length);
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
    response.session,
  );
  return Buffer.concat([header, ...response.partitions.map((partition) => partition.records)]);
}

/**
 * Reads the body of a FETCH response of `apiVersion` (the request's): every partition header,
 * then each partition's records, which must fill the rest of the frame exactly. Records are
 * views into the frame.
 */
export function readFetchResponseBody(
  reader: FrameReader,
  apiVersion = fetchApiVersionSessionless,
): DataPortFetchResponse {
  const session =
    apiVersion >= fetchApiVersionWithSessions
      ? {
          errorCode: reader.string('errorCode', errorCodeBytesMax),
          errorMessage: reader.string('errorMessage', errorMessageBytesMax),
          sessionId: reader.i32AtLeast('sessionId', 0),
        }
      : undefined;
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
  return session === undefined ? { partitions } : { partitions, session };
}

/**
 * The largest response frame a client accepts for `request`: every partition header at its
 * largest, maxBytes of records, and one batch more (the KIP-74 exception above). Anything larger
 * is a broken server or a broken stream, and is refused before a byte of it is buffered.
 */
export function fetchResponseBytesMax(
  request: DataPortFetchRequest,
  sessionPartitionsMax = 0,
): number {
  let headersBytes = frameSizeFieldBytes + responseHeaderBytes + 4;
  for (const partition of request.partitions) {
    headersBytes += responsePartitionHeaderBytesMax(partition.topic);
  }
  if (request.session !== undefined) {
    headersBytes += responseSessionBytesMax;
    // A session answers for partitions it holds that this request does not name.
    headersBytes +=
      sessionPartitionsMax * responsePartitionHeaderBytesMax('x'.repeat(topicNameBytesMaxForBound));
  }
  return headersBytes + request.maxBytes + recordBatchBytesMax;
}

function responsePartitionHeaderBytesMax(topic: string): number {
  return (
    responsePartitionHeaderBytesMin +
    Buffer.byteLength(topic, 'utf8') +
    errorCodeBytesMax +
    errorMessageBytesMax
  );
}
