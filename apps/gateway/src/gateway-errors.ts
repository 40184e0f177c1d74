import { SpoolError } from '@spool/common';
import type { ProtoError } from '@spool/protocol';

/**
 * The gateway's operating errors, under Kafka's names. Errors of the leaders (storage nodes), the
 * controller and the record format pass through with their own codes; these are the ones the
 * gateway decides itself.
 */
const retriableByCode = {
  // The topic is not in the gateway's metadata, or the partition number is out of its range.
  // Retriable as in Kafka: the topic or partition may be about to appear.
  UNKNOWN_TOPIC_OR_PARTITION: true,
  // The partition has no live leader right now, or its leader's endpoint is not known yet.
  LEADER_NOT_AVAILABLE: true,
  // A produce would take this client connection over produceInFlightBytesMax, or a Consume
  // stream over consumeStreamsMax: the bound on what one gateway holds at once. Kafka's name for
  // a quota violation; the client backs off and sends again.
  THROTTLING_QUOTA_EXCEEDED: true,
  // One produce request carries more record bytes than produceInFlightBytesMax allows at all.
  RECORD_LIST_TOO_LARGE: false,
  // No coordinator owns the group's shard, or none answered, before the call's deadline.
  COORDINATOR_NOT_AVAILABLE: true,
  // acks is not ACKS_NONE, ACKS_LEADER or ACKS_ALL.
  INVALID_REQUIRED_ACKS: false,
  INVALID_REQUEST: false,
  // Every attempt to reach the partition's leaders failed before the request's timeout.
  REQUEST_TIMED_OUT: true,
  // The connection to a leader's data port failed.
  NETWORK_EXCEPTION: true,
} as const satisfies Record<string, boolean>;

export type GatewayErrorCode = keyof typeof retriableByCode;

export class GatewayError extends SpoolError {
  constructor(
    code: GatewayErrorCode,
    message: string,
    options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
  ) {
    super(code, message, { retriable: retriableByCode[code], ...options });
    this.name = 'GatewayError';
  }
}

/**
 * Codes a leader answers for a partition when the request went to the wrong place or the leader
 * is changing: the gateway waits for newer metadata and sends that partition again (Kafka's
 * InvalidMetadataException family, plus a leader that cannot be reached at all).
 */
export const rerouteCodes: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_LEADER_EPOCH',
  'FENCED_LEADER_EPOCH',
  'NETWORK_EXCEPTION',
  'UNAVAILABLE',
  'SHUTTING_DOWN',
]);

/**
 * Whether a code a data port reports per partition may succeed if fetched again. The data port
 * carries only the code; this is Kafka's classification of the ones a fetch can get.
 */
const retriableFetchCodes: ReadonlySet<string> = new Set([
  ...rerouteCodes,
  'KAFKA_STORAGE_ERROR',
  'REQUEST_TIMED_OUT',
  'CORRUPT_MESSAGE',
  'IN_FLIGHT_REQUESTS_FULL',
]);

export function isRetriableFetchCode(code: string): boolean {
  return retriableFetchCodes.has(code);
}

/** Any thrown error as the per-partition Error message of a response. */
export function protoErrorOf(error: unknown, prefix = ''): ProtoError {
  const coded = error as { code?: unknown; message?: unknown; retriable?: unknown };
  if (error instanceof Error && typeof coded.code === 'string') {
    return {
      code: coded.code,
      message: `${prefix}${error.message}`,
      retriable: coded.retriable === true,
    };
  }
  return {
    code: 'UNKNOWN_SERVER_ERROR',
    message: `${prefix}${error instanceof Error ? error.message : String(error)}`,
    retriable: false,
  };
}
