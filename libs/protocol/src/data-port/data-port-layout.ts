// The data port: the storage node's plain TCP protocol for consumer fetches (from the gateway)
// and replica fetches (from followers), so record bytes go from segment files to sockets with
// sendfile(2) and never through gRPC. This file is the byte layout; the codecs beside it follow it.
//
// Every integer is big-endian (network order). Primitive types:
//   u16, u32        unsigned 16/32-bit integers
//   i32             signed 32-bit integer: epochs, ids, partition numbers, sizes, waits
//   i64             signed 64-bit integer, a bigint in TypeScript: offsets, broker epochs
//   string          u16 byte length, then that many bytes of UTF-8 (at most stringBytesMax)
//   array of T      u32 count, then count × T
//
// Request frame, client → server:
//   0   sizeBytes      u32   bytes after this field (8 + body), at most dataPortRequestBytesMax
//   4   apiKey         u16
//   6   apiVersion     u16
//   8   correlationId  u32   chosen by the client, echoed in the response
//   12  body
//
// Response frame, server → client, one per request, in the order the requests arrived:
//   0   sizeBytes      u32   bytes after this field (6 + body)
//   4   correlationId  u32
//   8   apiKey         u16   the request's, or 0xFFFF for an ERROR response
//   10  body
//
// API_VERSIONS (apiKey 0) v0: which APIs and versions the server speaks, as Kafka's ApiVersions.
//   request body:  (empty)
//   response body: apis: array of { apiKey u16, minVersion u16, maxVersion u16 }
//
// FETCH (apiKey 1) v0: records of several partitions from their leader (Kafka's Fetch).
//   request body:
//     replicaId i32 (-1 for a consumer, the follower's broker id for replication)
//     brokerEpoch i64 (the follower's, -1 for a consumer)
//     maxWaitMs i32, minBytes i32, maxBytes i32 (all ≥ 0)
//     partitions: array of {
//       topic string, partition i32 (≥ 0), fetchOffset i64,
//       currentLeaderEpoch i32 (-1 = unknown),
//       logStartOffset i64 (the follower's, -1 for a consumer),
//       partitionMaxBytes i32 (≥ 0) }
//   response body:
//     partitions: array of {
//       topic string, partition i32,
//       errorCode string (at most errorCodeBytesMax; empty = none; Kafka's names:
//                         NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH, ...),
//       errorMessage string (at most errorMessageBytesMax),
//       highWatermark i64, logStartOffset i64, logEndOffset i64,
//       recordsSizeBytes i32 (≥ 0) }
//     then, after ALL partition headers, the records of each partition (RecordBatch v2 bytes,
//     recordsSizeBytes of them) concatenated in the order of the headers, up to the frame end.
//   Headers first lets the server write them in one write and then sendfile each partition's
//   slices; the records are never in the server's memory.
//
// FETCH (apiKey 1) v1: v0 with Kafka's incremental fetch sessions (KIP-227), for replica fetches.
//   request body:
//     replicaId i32, brokerEpoch i64, maxWaitMs i32, minBytes i32, maxBytes i32 (as v0)
//     sessionId i32 (≥ 0; 0 = none), sessionEpoch i32 (≥ -1; 0 = full fetch opening a session,
//                                                     -1 = close the session / no session)
//     partitions: array of the v0 request partition (only those new to the session or whose
//                 fetchOffset, currentLeaderEpoch, logStartOffset or partitionMaxBytes changed)
//     forgottenPartitions: array of { topic string, partition i32 (≥ 0) }
//   response body:
//     errorCode string (empty, FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH),
//     errorMessage string, sessionId i32 (≥ 0; 0 = no session)
//     then the v0 response body: partitions (only those with records, an error, or a high
//     watermark or log start offset the session has not sent yet), then their records.
//
// OFFSET_FOR_LEADER_EPOCH (apiKey 2) v0: where a leader epoch ends on the leader, so a follower
// truncates a divergent tail before fetching (Kafka's OffsetsForLeaderEpoch, KIP-101/279).
//   request body:
//     replicaId i32
//     partitions: array of { topic string, partition i32, currentLeaderEpoch i32,
//                            leaderEpoch i32 }
//   response body:
//     partitions: array of { topic string, partition i32, errorCode string,
//                            errorMessage string, leaderEpoch i32, endOffset i64 }
//
// ERROR (apiKey 0xFFFF): the answer to a frame the server cannot serve (malformed, over its size
// bound, an unknown apiKey or version). The server closes that connection right after it.
//   response body: errorCode string, errorMessage string
//   correlationId is the request's when its header could be read, else unknownCorrelationId.
//
// Decoders check every read against the frame's end and every count against the bytes left, and
// throw a ProtocolError that names the field and its byte position in the frame (position 0 is
// the first byte of sizeBytes). Bytes left over after the body are an error too.

/** The APIs of the data port, by apiKey. */
export const DataPortApiKey = {
  ApiVersions: 0,
  Fetch: 1,
  OffsetForLeaderEpoch: 2,
} as const;

export type DataPortApiKey = (typeof DataPortApiKey)[keyof typeof DataPortApiKey];

/** The apiKey of an ERROR response; never sent in a request. */
export const dataPortErrorApiKey = 0xffff;

/** The names of the APIs, for logs and metric labels. */
export const dataPortApiNames: Readonly<Record<DataPortApiKey, string>> = {
  [DataPortApiKey.ApiVersions]: 'ApiVersions',
  [DataPortApiKey.Fetch]: 'Fetch',
  [DataPortApiKey.OffsetForLeaderEpoch]: 'OffsetForLeaderEpoch',
};

/** One API and the versions of it a server speaks (both ends included). */
export interface DataPortApiVersion {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** What this code speaks: the server answers API_VERSIONS with it and refuses anything else. */
export const dataPortSupportedApiVersions: readonly DataPortApiVersion[] = [
  { apiKey: DataPortApiKey.ApiVersions, minVersion: 0, maxVersion: 0 },
  { apiKey: DataPortApiKey.Fetch, minVersion: 0, maxVersion: 1 },
  { apiKey: DataPortApiKey.OffsetForLeaderEpoch, minVersion: 0, maxVersion: 0 },
];

/** Bytes of the sizeBytes field that starts every frame. */
export const frameSizeFieldBytes = 4;
/** Bytes of a request header after sizeBytes: apiKey, apiVersion, correlationId. */
export const requestHeaderBytes = 8;
/** Bytes of a response header after sizeBytes: correlationId, apiKey. */
export const responseHeaderBytes = 6;

/** Requests carry offsets and names, never records: 1 MiB holds thousands of partitions. */
export const dataPortRequestBytesMax = 1024 * 1024;
/** Partitions in one request or response; more is a runaway caller, not a real fetch. */
export const dataPortPartitionsMax = 10_000;
/** Kafka's STRING: an int16 length, so no longer than 32,767 bytes. */
export const stringBytesMax = 32_767;
/** Error codes are Kafka's names, the longest about 40 bytes. */
export const errorCodeBytesMax = 64;
/** Error messages explain, they do not carry data; longer ones are cut when encoded. */
export const errorMessageBytesMax = 1024;
/**
 * The largest single batch a response may carry beyond its maxBytes: as Kafka (KIP-74), the
 * first batch is returned whole even when larger, so a fetch always makes progress. Matches the
 * segment store's limit on one batch (max.message.bytes at most 64 MiB).
 */
export const recordBatchBytesMax = 64 * 1024 * 1024;

/** replicaId of a consumer's fetch: not a broker. */
export const consumerReplicaId = -1;
/** currentLeaderEpoch when the fetcher does not know it: the leader skips the epoch check. */
export const unknownLeaderEpoch = -1;
/** The correlationId of an ERROR response to a frame whose header could not be read. */
export const unknownCorrelationId = 0xffffffff;

/** The errorCode of a partition without error. */
export const noErrorCode = '';
