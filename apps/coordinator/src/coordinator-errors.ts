import { SpoolError } from '@spool/common';

/**
 * The coordinator's operating errors, under Kafka's names. The group state machine throws its own
 * (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, ...) as SpoolErrors; these are the
 * ones the runtime around it decides.
 */
const retriableByCode = {
  // This coordinator does not own the group's shard (any more): find the coordinator again.
  NOT_COORDINATOR: true,
  // The group's shard is being replayed from __consumer_offsets; retry in a moment.
  COORDINATOR_LOAD_IN_PROGRESS: true,
  // No coordinator can serve right now (a write to __consumer_offsets failed, no controller).
  COORDINATOR_NOT_AVAILABLE: true,
  // DeleteGroup or ResetOffsets on a group that still has members.
  NON_EMPTY_GROUP: false,
  GROUP_ID_NOT_FOUND: false,
  // A commit for a topic or partition that does not exist.
  UNKNOWN_TOPIC_OR_PARTITION: false,
  // The commit's metadata string is longer than offsetMetadataBytesMax.
  OFFSET_METADATA_TOO_LARGE: false,
  // An OffsetCommit whose member is not in the group.
  UNKNOWN_MEMBER_ID: false,
  INVALID_REQUEST: false,
  // The partition leader did not answer a ListOffsets or Append in time.
  REQUEST_TIMED_OUT: true,
  LEADER_NOT_AVAILABLE: true,
} as const satisfies Record<string, boolean>;

export type CoordinatorErrorCode = keyof typeof retriableByCode;

export class CoordinatorError extends SpoolError {
  constructor(
    code: CoordinatorErrorCode,
    message: string,
    options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
  ) {
    super(code, message, { retriable: retriableByCode[code], ...options });
    this.name = 'CoordinatorError';
  }
}

/** Any thrown error as the Error message of a response. */
export function protoErrorOf(error: unknown): {
  code: string;
  message: string;
  retriable: boolean;
} {
  const coded = error as { code?: unknown; retriable?: unknown };
  if (error instanceof Error && typeof coded.code === 'string') {
    return { code: coded.code, message: error.message, retriable: coded.retriable === true };
  }
  return {
    code: 'UNKNOWN_SERVER_ERROR',
    message: error instanceof Error ? error.message : String(error),
    retriable: false,
  };
}
