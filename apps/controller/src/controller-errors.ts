import { SpoolError } from '@spool/common';

/**
 * The controller's operating errors, under Kafka's error names so the CLI and SDK print what a
 * Kafka operator already knows. Each code says once whether a retry of the same request can work.
 */
const retriableByCode = {
  // The topic name breaks Kafka's rules (characters, length, "." or "..").
  INVALID_TOPIC_EXCEPTION: false,
  // A partition count that is not a positive integer, or a decrease.
  INVALID_PARTITIONS: false,
  // More replicas than live brokers, or a factor below 1.
  INVALID_REPLICATION_FACTOR: false,
  // An unknown topic config, or a value outside its range.
  INVALID_CONFIG: false,
  // A request field is missing or malformed.
  INVALID_REQUEST: false,
  // An API this controller does not serve.
  UNSUPPORTED_VERSION: false,
  TOPIC_ALREADY_EXISTS: false,
  UNKNOWN_TOPIC_OR_PARTITION: false,
  // This controller is a standby; the message names the active one.
  NOT_CONTROLLER: true,
  // The broker is fenced or its epoch is stale: it must register again.
  STALE_BROKER_EPOCH: false,
  // Another live process holds this broker id.
  DUPLICATE_BROKER_REGISTRATION: false,
  // An AlterPartition built on an old view of the partition.
  INVALID_UPDATE_VERSION: false,
  FENCED_LEADER_EPOCH: false,
  NOT_LEADER_OR_FOLLOWER: true,
  // An AlterPartition whose ISR names a replica that is not eligible.
  INELIGIBLE_REPLICA: false,
  // The metadata store is unreachable or refused the write.
  UNAVAILABLE: true,
  // Something that should not run out did (every producer id was handed out).
  UNKNOWN_SERVER_ERROR: false,
} as const satisfies Record<string, boolean>;

export type ControllerErrorCode = keyof typeof retriableByCode;

export class ControllerError extends SpoolError {
  constructor(
    code: ControllerErrorCode,
    message: string,
    options: { cause?: unknown; details?: Readonly<Record<string, string>> } = {},
  ) {
    super(code, message, { retriable: retriableByCode[code], ...options });
    this.name = 'ControllerError';
  }
}
