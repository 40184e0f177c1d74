import { CommonErrorCode, SpoolError, isCodedError } from '@spool/common';
import type { ProtoError } from '@spool/protocol';

/**
 * The SDK's operating errors. Everything the SDK throws or rejects with is a `SpoolError` (from
 * @spool/common) with a Kafka-style `code`, a `retriable` flag and a message that names the topic
 * and partition it is about. Codes the gateway and the storage nodes answer pass through as they
 * came (NOT_LEADER_OR_FOLLOWER, TOPIC_ALREADY_EXISTS, ...); the codes below are the ones the SDK
 * decides itself.
 */
export const ClientErrorCode = {
  /** A setting of Spool, a producer, a consumer or the admin has a bad value. */
  InvalidConfig: CommonErrorCode.InvalidConfig,
  /** An argument of a call is malformed (a message without a value field, a negative offset). */
  InvalidRequest: CommonErrorCode.InvalidRequest,
  /** A feature the cluster does not offer yet. */
  UnsupportedFeature: 'UNSUPPORTED_FEATURE',
  /** No coordinator serves the group right now (none registered, or one is taking over). */
  CoordinatorNotAvailable: 'COORDINATOR_NOT_AVAILABLE',
  /** The coordinator asked is not the group's: the gateway finds the right one on a retry. */
  NotCoordinator: 'NOT_COORDINATOR',
  /** The group's coordinator is still replaying its share of __consumer_offsets. */
  CoordinatorLoadInProgress: 'COORDINATOR_LOAD_IN_PROGRESS',
  /** The member's epoch is behind the coordinator's: its partitions may be someone else's. */
  FencedMemberEpoch: 'FENCED_MEMBER_EPOCH',
  /** The coordinator does not know the member (evicted after its session timed out). */
  UnknownMemberId: 'UNKNOWN_MEMBER_ID',
  /** A commit carried an older member epoch than the member's current one (KIP-848). */
  StaleMemberEpoch: 'STALE_MEMBER_EPOCH',
  /** Another running member uses the same groupInstanceId. */
  UnreleasedInstanceId: 'UNRELEASED_INSTANCE_ID',
  /** The group does not exist. */
  GroupIdNotFound: 'GROUP_ID_NOT_FOUND',
  /** The group still has members: it cannot be deleted or have its offsets reset. */
  NonEmptyGroup: 'NON_EMPTY_GROUP',
  /** The producer's buffer stayed full for maxBlockMs (Kafka's BufferExhaustedException). */
  BufferExhausted: 'BUFFER_EXHAUSTED',
  /** One record is larger than the producer's buffer or its request size bound. */
  MessageTooLarge: 'MESSAGE_TOO_LARGE',
  /** The topic does not exist, or the partition is outside its partition count. */
  UnknownTopicOrPartition: 'UNKNOWN_TOPIC_OR_PARTITION',
  /** A consumer position is outside the partition's log and the reset policy is `none`. */
  OffsetOutOfRange: 'OFFSET_OUT_OF_RANGE',
  /** A partition has no position and the reset policy is `none` (NoOffsetForPartition). */
  NoOffsetForPartition: 'NO_OFFSET_FOR_PARTITION',
  /** A call on a producer, consumer or admin after its close. */
  ClientClosed: 'CLIENT_CLOSED',
  RequestTimedOut: CommonErrorCode.RequestTimedOut,
  Unknown: CommonErrorCode.Unknown,
} as const;

/** Codes that are retriable when the SDK raises them itself. */
const retriableClientCodes: ReadonlySet<string> = new Set([
  ClientErrorCode.CoordinatorNotAvailable,
  ClientErrorCode.NotCoordinator,
  ClientErrorCode.CoordinatorLoadInProgress,
  // Kafka's BufferExhaustedException is a TimeoutException: the buffer drains as batches land.
  ClientErrorCode.BufferExhausted,
  ClientErrorCode.RequestTimedOut,
]);

export function clientError(
  code: string,
  message: string,
  options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
): SpoolError {
  return new SpoolError(code, message, { retriable: retriableClientCodes.has(code), ...options });
}

/** `topic[partition]`, the way every partition is named in the SDK's messages. */
export function partitionName(topic: string, partition: number): string {
  return `${topic}[${partition}]`;
}

/**
 * Coordinator codes that mean "ask again, maybe elsewhere": the gateway routes each call to the
 * group's coordinator, so a retry after a backoff reaches the new one. Retried whatever the
 * `retriable` flag of the answer says, since only their code is a contract.
 */
export const coordinatorRetriableCodes: ReadonlySet<string> = new Set([
  ClientErrorCode.CoordinatorNotAvailable,
  ClientErrorCode.NotCoordinator,
  ClientErrorCode.CoordinatorLoadInProgress,
]);

/**
 * Whether Kafka's clients retry a code (its exception is a RetriableException), for the codes a
 * produce or fetch can get while a leader dies or moves. The SDK decides by this table rather
 * than by the flag an answer carries, as Kafka's clients decide by the code: a storage node may
 * call FENCED_LEADER_EPOCH final for its own request, while for a client it means "ask again".
 * Codes not in the table keep the answer's flag.
 */
const kafkaRetriableByCode: Readonly<Record<string, boolean>> = {
  // The route was stale: Kafka's InvalidMetadataException family. The metadata is refreshed.
  NOT_LEADER_OR_FOLLOWER: true,
  LEADER_NOT_AVAILABLE: true,
  UNKNOWN_TOPIC_OR_PARTITION: true,
  FENCED_LEADER_EPOCH: true,
  UNKNOWN_LEADER_EPOCH: true,
  KAFKA_STORAGE_ERROR: true,
  // The leader could not be reached, or did not answer in time.
  NETWORK_EXCEPTION: true,
  UNAVAILABLE: true,
  SHUTTING_DOWN: true,
  REQUEST_TIMED_OUT: true,
  // acks=all with too few replicas in sync: the ISR grows back, or the leader moves.
  NOT_ENOUGH_REPLICAS: true,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: true,
  THROTTLING_QUOTA_EXCEEDED: true,
  COORDINATOR_NOT_AVAILABLE: true,
  NOT_COORDINATOR: true,
  COORDINATOR_LOAD_IN_PROGRESS: true,
  // The request itself is wrong, or the producer's sequence cannot go on as sent.
  MESSAGE_TOO_LARGE: false,
  RECORD_LIST_TOO_LARGE: false,
  INVALID_RECORD: false,
  INVALID_REQUIRED_ACKS: false,
  INVALID_REQUEST: false,
  INVALID_PRODUCER_EPOCH: false,
  OUT_OF_ORDER_SEQUENCE_NUMBER: false,
  UNKNOWN_PRODUCER_ID: false,
  OFFSET_OUT_OF_RANGE: false,
  UNKNOWN_SERVER_ERROR: false,
};

/** Kafka's classification of `code`, else the flag the error came with. */
export function isRetriableCode(code: string, retriableAsSent: boolean): boolean {
  return kafkaRetriableByCode[code] ?? retriableAsSent;
}

/**
 * Codes after which the producer refreshes the topic's metadata before its retry (Kafka's
 * InvalidMetadataException family, and a leader that could not be reached).
 */
export const staleMetadataCodes: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'KAFKA_STORAGE_ERROR',
  'NETWORK_EXCEPTION',
]);

/** A per-partition or per-topic error from a gateway response, naming what it is about. */
export function fromProtoError(error: ProtoError, subject: string): SpoolError {
  const message = error.message === '' ? error.code : error.message;
  return new SpoolError(error.code, `${subject}: ${message}`, {
    retriable: isRetriableCode(error.code, error.retriable),
  });
}

/**
 * Any error that reaches an SDK boundary, as a SpoolError: SpoolErrors pass unchanged, coded
 * errors of the protocol lib keep their code, anything else becomes UNKNOWN_SERVER_ERROR with the
 * original as its cause. `subject` prefixes the message when the error does not name it already.
 */
export function toSpoolError(error: unknown, subject?: string): SpoolError {
  if (error instanceof SpoolError) return error;
  const prefix = subject === undefined ? '' : `${subject}: `;
  if (isCodedError(error)) {
    return new SpoolError(error.code, `${prefix}${error.message}`, {
      retriable: error.retriable,
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SpoolError(ClientErrorCode.Unknown, `${prefix}${message}`, { cause: error });
}
