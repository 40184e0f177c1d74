import { SpoolError } from '@spool/common';

/**
 * The storage node's operating errors, under Kafka's names. Errors of the log itself come from
 * the segment store (KAFKA_STORAGE_ERROR, OFFSET_OUT_OF_RANGE, ...) and the record format from
 * the protocol library (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...); they pass through unchanged.
 */
const retriableByCode = {
  // This node does not lead the partition (or does not host it yet); details name the leader.
  NOT_LEADER_OR_FOLLOWER: true,
  UNKNOWN_TOPIC_OR_PARTITION: true,
  // The request's leader epoch is older than this replica's.
  FENCED_LEADER_EPOCH: false,
  // The request's leader epoch is newer: this replica has not seen the change yet.
  UNKNOWN_LEADER_EPOCH: true,
  // acks=all while the ISR is smaller than min.insync.replicas.
  NOT_ENOUGH_REPLICAS: true,
  // acks=all written, but the ISR shrank below min.insync.replicas before it was replicated.
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: true,
  REQUEST_TIMED_OUT: true,
  INVALID_REQUEST: false,
  INVALID_REQUIRED_ACKS: false,
  // The data directory is held by another live process.
  DATA_DIRECTORY_LOCKED: false,
  // The node is stopping; the client retries against the new leader.
  SHUTTING_DOWN: true,
  // Idempotent producers (producer-state-manager.ts). None is retriable as sent: the producer
  // must bump its epoch (a newer instance fenced this one, or its sequences cannot continue).
  INVALID_PRODUCER_EPOCH: false,
  OUT_OF_ORDER_SEQUENCE_NUMBER: false,
  UNKNOWN_PRODUCER_ID: false,
  INVALID_RECORD: false,
} as const satisfies Record<string, boolean>;

export type StorageErrorCode = keyof typeof retriableByCode;

export class StorageError extends SpoolError {
  constructor(
    code: StorageErrorCode,
    message: string,
    options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
  ) {
    super(code, message, { retriable: retriableByCode[code], ...options });
    this.name = 'StorageError';
  }
}
