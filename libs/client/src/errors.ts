import { CommonErrorCode, SpoolError, isCodedError } from '@spool/common';
import { isRetriable } from '@spool/errors';
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

/** An error the SDK raises itself; whether it is retriable is the catalog's word on `code`. */
export function clientError(
  code: string,
  message: string,
  options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
): SpoolError {
  return new SpoolError(code, message, options);
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

/** A per-partition or per-topic error from a gateway response, naming what it is about. */
export function fromProtoError(error: ProtoError, subject: string): SpoolError {
  const message = error.message === '' ? error.code : error.message;
  return new SpoolError(error.code, `${subject}: ${message}`, {
    // As Kafka's clients, the SDK decides by the code (the catalog), not by the flag an answer
    // carries; a code the catalog does not know keeps the answer's flag.
    retriable: isRetriable(error.code, error.retriable),
  });
}

/**
 * Any error that reaches an SDK boundary, as a SpoolError: SpoolErrors pass unchanged, coded
 * errors of the protocol and record-batch libs keep their code, anything else becomes
 * UNKNOWN_SERVER_ERROR with the original as its cause. `subject` prefixes the message when the
 * error does not name it already.
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
