import { status as GrpcStatus } from '@grpc/grpc-js';
import { isRetriable } from '@spool/errors';
import { isAssertionFailure } from './assertion-failure';

/**
 * Operating errors: bad input, a peer down, a disk full. Every one has a stable `code` from the
 * error catalog (@spool/errors, Kafka's codes and Spool's own), whether the same request may
 * succeed later (`retriable`, which the catalog decides for the code), and the `cause`. This
 * file holds the base class and the one table that maps codes to gRPC status codes for the wire.
 */
export class SpoolError extends Error {
  readonly code: string;
  readonly retriable: boolean;
  /**
   * Facts a client acts on, travelling with the error (as `spool-detail-<name>` metadata), such
   * as `activeController` on NOT_CONTROLLER or `leader` on NOT_LEADER_OR_FOLLOWER.
   */
  readonly details: Readonly<Record<string, string>>;

  constructor(
    code: string,
    message: string,
    options: {
      /**
       * Left out, the catalog's classification of the code (false for a code it does not know).
       * Given, it overrides it for this one failure: the flag a peer sent over the wire, or a
       * failure its raiser knows to be final whatever the code (a batch that must not be sent
       * twice, a wait that already used its deadline).
       */
      retriable?: boolean;
      cause?: unknown;
      details?: Readonly<Record<string, string>>;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SpoolError';
    this.code = code;
    this.retriable = options.retriable ?? isRetriable(code);
    this.details = options.details ?? {};
  }
}

/** Codes of the runtime itself; services add their own in their errors.ts. */
export const CommonErrorCode = {
  InvalidConfig: 'INVALID_CONFIG',
  InvalidRequest: 'INVALID_REQUEST',
  RequestTimedOut: 'REQUEST_TIMED_OUT',
  Unavailable: 'UNAVAILABLE',
  ShuttingDown: 'SHUTTING_DOWN',
  /** A listener could not bind its address at start-up (the port is taken, or not ours). */
  ListenFailed: 'LISTEN_FAILED',
  Unknown: 'UNKNOWN_SERVER_ERROR',
} as const;

/** An error that carries a code, from any lib (libs that depend on nothing of ours duck-type it). */
export interface CodedError {
  readonly code: string;
  readonly message: string;
  readonly retriable: boolean;
}

export function isCodedError(error: unknown): error is CodedError & Error {
  return (
    error instanceof Error &&
    typeof (error as Partial<CodedError>).code === 'string' &&
    typeof (error as Partial<CodedError>).retriable === 'boolean'
  );
}

/**
 * Any thrown error as the `{ code, message, retriable }` a response carries per partition, topic
 * or group: a coded error keeps its code and flag, anything else is UNKNOWN_SERVER_ERROR.
 * `prefix` goes before the message (what the error is about, when the error does not say). A
 * failed assertion is rethrown, never answered.
 */
export function wireErrorOf(
  error: unknown,
  prefix = '',
): { code: string; message: string; retriable: boolean } {
  // A failed assertion is no answer: it goes on up to the handler's wrapper, which stops.
  if (isAssertionFailure(error)) throw error;
  const coded = error as { code?: unknown; retriable?: unknown };
  if (error instanceof Error && typeof coded.code === 'string') {
    return {
      code: coded.code,
      message: `${prefix}${error.message}`,
      retriable: coded.retriable === true,
    };
  }
  return {
    code: CommonErrorCode.Unknown,
    message: `${prefix}${error instanceof Error ? error.message : String(error)}`,
    retriable: false,
  };
}

/**
 * The gRPC status a code travels under. Clients act on the status (retry, refresh metadata) and
 * read the Kafka code from the trailing metadata, so the mapping only needs to be right about
 * the class of failure.
 */
const grpcStatusByCode: Readonly<Record<string, GrpcStatus>> = {
  INVALID_CONFIG: GrpcStatus.INVALID_ARGUMENT,
  INVALID_REQUEST: GrpcStatus.INVALID_ARGUMENT,
  INVALID_TOPIC_EXCEPTION: GrpcStatus.INVALID_ARGUMENT,
  INVALID_PARTITIONS: GrpcStatus.INVALID_ARGUMENT,
  INVALID_REPLICATION_FACTOR: GrpcStatus.INVALID_ARGUMENT,
  INVALID_REPLICA_ASSIGNMENT: GrpcStatus.INVALID_ARGUMENT,
  NO_REASSIGNMENT_IN_PROGRESS: GrpcStatus.FAILED_PRECONDITION,
  INVALID_RECORD: GrpcStatus.INVALID_ARGUMENT,
  CORRUPT_MESSAGE: GrpcStatus.INVALID_ARGUMENT,
  MESSAGE_TOO_LARGE: GrpcStatus.INVALID_ARGUMENT,
  UNSUPPORTED_VERSION: GrpcStatus.INVALID_ARGUMENT,
  UNSUPPORTED_COMPRESSION_TYPE: GrpcStatus.INVALID_ARGUMENT,
  TOPIC_ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  UNKNOWN_TOPIC_OR_PARTITION: GrpcStatus.NOT_FOUND,
  GROUP_ID_NOT_FOUND: GrpcStatus.NOT_FOUND,
  BROKER_ID_NOT_REGISTERED: GrpcStatus.NOT_FOUND,
  OFFSET_OUT_OF_RANGE: GrpcStatus.OUT_OF_RANGE,
  NOT_LEADER_OR_FOLLOWER: GrpcStatus.FAILED_PRECONDITION,
  NOT_CONTROLLER: GrpcStatus.FAILED_PRECONDITION,
  NOT_COORDINATOR: GrpcStatus.FAILED_PRECONDITION,
  FENCED_LEADER_EPOCH: GrpcStatus.FAILED_PRECONDITION,
  INVALID_PRODUCER_EPOCH: GrpcStatus.FAILED_PRECONDITION,
  OUT_OF_ORDER_SEQUENCE_NUMBER: GrpcStatus.FAILED_PRECONDITION,
  NOT_ENOUGH_REPLICAS: GrpcStatus.UNAVAILABLE,
  KAFKA_STORAGE_ERROR: GrpcStatus.UNAVAILABLE,
  UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  SHUTTING_DOWN: GrpcStatus.UNAVAILABLE,
  REQUEST_TIMED_OUT: GrpcStatus.DEADLINE_EXCEEDED,
  TOPIC_AUTHORIZATION_FAILED: GrpcStatus.PERMISSION_DENIED,
  CLUSTER_AUTHORIZATION_FAILED: GrpcStatus.PERMISSION_DENIED,
  GROUP_AUTHORIZATION_FAILED: GrpcStatus.PERMISSION_DENIED,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: GrpcStatus.PERMISSION_DENIED,
  SECURITY_DISABLED: GrpcStatus.FAILED_PRECONDITION,
  SASL_AUTHENTICATION_FAILED: GrpcStatus.UNAUTHENTICATED,
  UNKNOWN_SERVER_ERROR: GrpcStatus.INTERNAL,
};

export function grpcStatusForCode(code: string, retriable: boolean): GrpcStatus {
  return grpcStatusByCode[code] ?? (retriable ? GrpcStatus.UNAVAILABLE : GrpcStatus.UNKNOWN);
}

/** gRPC statuses a client may retry without knowing more: the server did not act on them. */
export const retriableGrpcStatuses: ReadonlySet<GrpcStatus> = new Set([
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);
