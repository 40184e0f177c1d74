import type * as grpc from '@grpc/grpc-js';
import { createLogger, type Logger, type LogLevel } from '@spool/common';
import {
  channelCredentialsOf,
  type SpoolSaslOptions,
  type SpoolSslOptions,
} from './client-security';
import { Acks as ProtoAcks } from '@spool/protocol';
import { CompressionType } from '@spool/record-batch';
import type { ClientRegistry } from './client-registry';
import { ClientErrorCode, clientError } from './errors';

/**
 * Every setting of the SDK, its default and its check, in one place: a bad value stops the call
 * that was given it (`new Spool`, `spool.producer`, `spool.consumer`, `spool.admin`) with an
 * INVALID_CONFIG error that names the setting and the value. Defaults are Kafka's where Kafka has
 * the setting, so a Kafka user finds the behaviour they expect.
 */

export interface SpoolConfig {
  /** brokers: gateway addresses `host:port`; the SDK moves to the next one when one is down. */
  readonly brokers?: readonly string[];
  /** clientId: sent with every call (metadata `spool-client-id`) so gateway logs can name it. */
  readonly clientId?: string;
  /** logger: a pino logger for the SDK's own logs; one is made at `logLevel` if absent. */
  readonly logger?: Logger;
  /** logLevel: the level of the logger the SDK makes; `warn` by default. */
  readonly logLevel?: LogLevel;
  /**
   * ssl: TLS to the gateways (client-security.ts): true for the system's CAs, or PEM contents
   * `{ ca, cert, key }` (KafkaJS's names); plaintext when absent or false.
   */
  readonly ssl?: boolean | SpoolSslOptions;
  /**
   * sasl: the user this client authenticates as (KafkaJS's shape; `spool user create`). Sent
   * with every call over TLS only (`ssl` is required), checked by the gateway against the
   * user's stored SCRAM credential (client-security.ts).
   */
  readonly sasl?: SpoolSaslOptions;
}

export interface ResolvedSpoolConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
  /** What every connection to a gateway is opened with: TLS for `ssl`, else plaintext. */
  readonly channelCredentials: grpc.ChannelCredentials;
  /** The Spool's clients, which `spool.close()` closes; absent for a client made alone. */
  readonly registry?: ClientRegistry;
}

export const brokersDefault: readonly string[] = ['localhost:9090'];
const clientIdDefault = 'spool-client';

export type AcksSetting = 0 | 1 | -1 | 'all';
export type CompressionName = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

export interface ProducerOptions {
  /** acks: 0 (no wait), 1 (the leader's write), -1 or 'all' (the ISR); 'all' by default. */
  readonly acks?: AcksSetting;
  /** lingerMs: how long a batch waits for more records before it is sent (Kafka's linger.ms). */
  readonly lingerMs?: number;
  /** batchSizeBytes: a batch is sent once its records reach this size (Kafka's batch.size). */
  readonly batchSizeBytes?: number;
  /** compression: the codec of every batch (Kafka's compression.type). */
  readonly compression?: CompressionName;
  /**
   * maxInFlight: batches of one partition in flight at once. With more than 1, a retried batch
   * can land after a later one: Kafka's reordering without idempotence.
   */
  readonly maxInFlight?: number;
  /** bufferMemoryBytes: records waiting to be sent, at most (Kafka's buffer.memory). */
  readonly bufferMemoryBytes?: number;
  /** maxBlockMs: how long `send` waits for buffer space or topic metadata (max.block.ms). */
  readonly maxBlockMs?: number;
  /**
   * retries: further attempts of a batch that failed with a retriable error (Kafka's retries):
   * 2147483647 by default, so deliveryTimeoutMs is the bound that matters.
   */
  readonly retries?: number;
  /**
   * deliveryTimeoutMs: how long a batch may take, from its first record to its acknowledgement,
   * retries included (Kafka's delivery.timeout.ms, 120 s). A retriable error (a leader moving, a
   * timeout) is retried until it passes; then the batch's sends fail REQUEST_TIMED_OUT. At least
   * lingerMs + requestTimeoutMs; left unset, it grows to that sum if the two are larger.
   */
  readonly deliveryTimeoutMs?: number;
  /** retryBackoffMs: the first backoff before a retry; it doubles up to retryBackoffMaxMs. */
  readonly retryBackoffMs?: number;
  /** retryBackoffMaxMs: the longest backoff between two attempts. */
  readonly retryBackoffMaxMs?: number;
  /** requestTimeoutMs: how long one Produce request may take (Kafka's request.timeout.ms). */
  readonly requestTimeoutMs?: number;
  /** maxRequestSizeBytes: the record bytes of one Produce request, at most (max.request.size). */
  readonly maxRequestSizeBytes?: number;
  /** metadataMaxAgeMs: partition counts are described again after this long. */
  readonly metadataMaxAgeMs?: number;
  /**
   * enableIdempotence: exactly once into each partition (Kafka's enable.idempotence): the
   * producer gets a producer id, numbers its batches per partition, and the leaders drop a
   * retried batch they already wrote, so a retry never writes a record twice nor out of order.
   * Needs acks 'all', maxInFlight at most 5 and retries above 0. On by default, as in Kafka 3:
   * left unset, it is off when one of those settings conflicts; set to true, a conflict is an
   * INVALID_CONFIG error.
   */
  readonly enableIdempotence?: boolean;
}

export interface ProducerConfig {
  readonly acks: ProtoAcks;
  readonly lingerMs: number;
  readonly batchSizeBytes: number;
  readonly compressionType: CompressionType;
  readonly maxInFlight: number;
  readonly bufferMemoryBytes: number;
  readonly maxBlockMs: number;
  readonly retries: number;
  readonly deliveryTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly requestTimeoutMs: number;
  readonly maxRequestSizeBytes: number;
  readonly metadataMaxAgeMs: number;
  readonly enableIdempotence: boolean;
}

/** Kafka's limit for idempotence: the leader remembers the last five batches per producer. */
export const idempotenceMaxInFlightMax = 5;

export type OffsetResetPolicy = 'earliest' | 'latest' | 'none';
export type GroupAssignorName = 'uniform' | 'range';

export interface ConsumerOptions {
  /**
   * groupId: consume as a member of this group (Kafka's group.id): the coordinator assigns
   * partitions among the members and keeps their committed offsets.
   */
  readonly groupId?: string;
  /**
   * groupInstanceId: a static member's stable name (group.instance.id): a member restarting
   * under the same name within the session timeout gets its partitions back without a rebalance.
   */
  readonly groupInstanceId?: string;
  /** groupRemoteAssignor: the coordinator's assignor (group.remote.assignor); its default if absent. */
  readonly groupRemoteAssignor?: GroupAssignorName;
  /**
   * sessionTimeoutMs: the coordinator evicts a member silent this long (session.timeout.ms; the
   * coordinator's own setting decides). The consumer caps a heartbeat's deadline with it and
   * says so in its log when no heartbeat was answered for this long; it keeps its partitions
   * until the coordinator answers that the member is gone, as Kafka's consumer does.
   */
  readonly sessionTimeoutMs?: number;
  /**
   * rebalanceTimeoutMs: how long the member may take to give revoked partitions back
   * (rebalance.timeout.ms, as Kafka's max.poll.interval.ms); the coordinator fences it after.
   */
  readonly rebalanceTimeoutMs?: number;
  /** enableAutoCommit: commit processed offsets every autoCommitIntervalMs (enable.auto.commit). */
  readonly enableAutoCommit?: boolean;
  /** autoCommitIntervalMs: the auto commit period (auto.commit.interval.ms). */
  readonly autoCommitIntervalMs?: number;
  /**
   * commitBeforeProcessing: at-most-once delivery: each chunk's offsets are committed before its
   * messages reach the handler, so a crash mid-chunk skips the rest instead of redelivering it.
   */
  readonly commitBeforeProcessing?: boolean;
  /** autoOffsetReset: where to start when a position is missing or out of range. */
  readonly autoOffsetReset?: OffsetResetPolicy;
  /** maxBytesPerPartition: record bytes the gateway may send for one partition at a time. */
  readonly maxBytesPerPartition?: number;
  /** maxBytes: the credit window: record bytes received but not yet consumed, at most. */
  readonly maxBytes?: number;
  /** requestTimeoutMs: how long a ListOffsets or DescribeTopics call may take. */
  readonly requestTimeoutMs?: number;
  /** retryBackoffMs: the first backoff before the stream is opened again after an error. */
  readonly retryBackoffMs?: number;
  /** retryBackoffMaxMs: the longest backoff between two attempts. */
  readonly retryBackoffMaxMs?: number;
  /** retries: attempts to reopen the stream after retriable errors before the consumer fails. */
  readonly retries?: number;
  /** verifyCrc: check each batch's CRC-32C before decoding it (Kafka's check.crcs). */
  readonly verifyCrc?: boolean;
}

export interface ConsumerConfig {
  readonly groupId: string | undefined;
  readonly groupInstanceId: string | undefined;
  readonly groupRemoteAssignor: GroupAssignorName | undefined;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly enableAutoCommit: boolean;
  readonly autoCommitIntervalMs: number;
  readonly commitBeforeProcessing: boolean;
  readonly autoOffsetReset: OffsetResetPolicy;
  readonly maxBytesPerPartition: number;
  readonly maxBytes: number;
  readonly requestTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly retries: number;
  readonly verifyCrc: boolean;
}

export interface AdminOptions {
  /** requestTimeoutMs: how long one admin call may take. */
  readonly requestTimeoutMs?: number;
  /** retries: further attempts of a call that failed with a retriable error. */
  readonly retries?: number;
}

export interface AdminConfig {
  readonly requestTimeoutMs: number;
  readonly retries: number;
}

const int32Max = 0x7fffffff;

function invalid(setting: string, value: unknown, rule: string): never {
  throw clientError(
    ClientErrorCode.InvalidConfig,
    `setting ${setting} must be ${rule}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
  );
}

function integer(
  setting: string,
  value: number | undefined,
  fallback: number,
  min: number,
): number {
  const resolved = value ?? fallback;
  if (!Number.isSafeInteger(resolved) || resolved < min || resolved > int32Max) {
    invalid(setting, resolved, `an integer from ${min} to ${int32Max}`);
  }
  return resolved;
}

function oneOf<T>(setting: string, value: T | undefined, fallback: T, allowed: readonly T[]): T {
  const resolved = value ?? fallback;
  if (!allowed.includes(resolved)) invalid(setting, resolved, `one of ${allowed.join(', ')}`);
  return resolved;
}

export function resolveSpoolConfig(config: SpoolConfig): ResolvedSpoolConfig {
  const brokers = config.brokers ?? brokersDefault;
  if (!Array.isArray(brokers) || brokers.length === 0) {
    invalid('brokers', brokers, 'a non-empty list of host:port addresses');
  }
  for (const broker of brokers) {
    if (
      typeof broker !== 'string' ||
      !/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(broker)
    ) {
      invalid('brokers', broker, 'host:port');
    }
  }
  const clientId = config.clientId ?? clientIdDefault;
  if (typeof clientId !== 'string' || clientId === '') invalid('clientId', clientId, 'a name');
  const logger =
    config.logger ?? createLogger({ service: clientId, level: config.logLevel ?? 'warn' });
  const channelCredentials = channelCredentialsOf(config.ssl, config.sasl);
  return { brokers: [...brokers], clientId, logger, channelCredentials };
}

const acksByName: ReadonlyMap<AcksSetting, ProtoAcks> = new Map<AcksSetting, ProtoAcks>([
  [0, ProtoAcks.ACKS_NONE],
  [1, ProtoAcks.ACKS_LEADER],
  [-1, ProtoAcks.ACKS_ALL],
  ['all', ProtoAcks.ACKS_ALL],
]);

export const compressionTypeByName: Readonly<Record<CompressionName, CompressionType>> = {
  none: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
};

/** Kafka's retries default since 2.1: no count bound, deliveryTimeoutMs bounds the time. */
export const producerRetriesDefault = int32Max;
/** Kafka's delivery.timeout.ms default. */
export const deliveryTimeoutMsDefault = 120_000;

export function resolveProducerConfig(options: ProducerOptions): ProducerConfig {
  const explicitIdempotence =
    options.enableIdempotence === undefined
      ? undefined
      : oneOf('enableIdempotence', options.enableIdempotence, true, [true, false]);
  const acks = acksByName.get(oneOf('acks', options.acks, 'all', [...acksByName.keys()]));
  const compression = oneOf<CompressionName>('compression', options.compression, 'none', [
    'none',
    'gzip',
    'snappy',
    'lz4',
    'zstd',
  ]);
  const retryBackoffMs = integer('retryBackoffMs', options.retryBackoffMs, 100, 0);
  const lingerMs = integer('lingerMs', options.lingerMs, 5, 0);
  const requestTimeoutMs = integer('requestTimeoutMs', options.requestTimeoutMs, 30_000, 1);
  const settings: Omit<ProducerConfig, 'enableIdempotence'> = {
    acks: acks!,
    lingerMs,
    batchSizeBytes: integer('batchSizeBytes', options.batchSizeBytes, 16_384, 1),
    compressionType: compressionTypeByName[compression],
    maxInFlight: integer('maxInFlight', options.maxInFlight, 1, 1),
    bufferMemoryBytes: integer('bufferMemoryBytes', options.bufferMemoryBytes, 32 * 1024 * 1024, 1),
    maxBlockMs: integer('maxBlockMs', options.maxBlockMs, 60_000, 0),
    retries: integer('retries', options.retries, producerRetriesDefault, 0),
    deliveryTimeoutMs: deliveryTimeoutMs(options.deliveryTimeoutMs, lingerMs, requestTimeoutMs),
    retryBackoffMs,
    retryBackoffMaxMs: integer(
      'retryBackoffMaxMs',
      options.retryBackoffMaxMs,
      Math.max(1_000, retryBackoffMs),
      retryBackoffMs,
    ),
    requestTimeoutMs,
    maxRequestSizeBytes: integer(
      'maxRequestSizeBytes',
      options.maxRequestSizeBytes,
      1024 * 1024,
      1,
    ),
    metadataMaxAgeMs: integer('metadataMaxAgeMs', options.metadataMaxAgeMs, 300_000, 0),
  };
  if (explicitIdempotence === true) checkIdempotenceSettings(settings);
  // Kafka 3.2's rule (KAFKA-13598): the default gives way to settings that conflict with it.
  const enableIdempotence = explicitIdempotence ?? idempotenceConflictOf(settings) === undefined;
  return { ...settings, enableIdempotence };
}

/**
 * Kafka's configureDeliveryTimeout: a batch must be allowed its linger and one whole request.
 * A value given below that is an error; the default grows to it.
 */
function deliveryTimeoutMs(
  value: number | undefined,
  lingerMs: number,
  requestTimeoutMs: number,
): number {
  const lingerAndRequestTimeoutMs = Math.min(lingerMs + requestTimeoutMs, int32Max);
  if (value === undefined) return Math.max(deliveryTimeoutMsDefault, lingerAndRequestTimeoutMs);
  const resolved = integer('deliveryTimeoutMs', value, deliveryTimeoutMsDefault, 1);
  if (resolved < lingerAndRequestTimeoutMs) {
    invalid(
      'deliveryTimeoutMs',
      resolved,
      `at least lingerMs + requestTimeoutMs = ${lingerMs} + ${requestTimeoutMs} = ` +
        `${lingerAndRequestTimeoutMs}`,
    );
  }
  return resolved;
}

/**
 * Kafka's rules for enable.idempotence: acks=all (a batch acknowledged by the leader alone can
 * be lost with it, and its retry would not be a duplicate), at most five batches in flight per
 * partition (the leader recognises retries of its last five), and retries (idempotence is what
 * makes them safe). A conflicting setting is an error, never silently changed.
 */
function checkIdempotenceSettings(config: Omit<ProducerConfig, 'enableIdempotence'>): void {
  const conflict = idempotenceConflictOf(config);
  if (conflict !== undefined) throw clientError(ClientErrorCode.InvalidConfig, conflict);
}

/** The first setting that rules idempotence out, as the message that names it. */
function idempotenceConflictOf(
  config: Omit<ProducerConfig, 'enableIdempotence'>,
): string | undefined {
  if (config.acks !== ProtoAcks.ACKS_ALL) {
    return `setting acks must be 'all' (or -1) with enableIdempotence, got ${
      config.acks === ProtoAcks.ACKS_NONE ? 0 : 1
    }`;
  }
  if (config.maxInFlight > idempotenceMaxInFlightMax) {
    return (
      `setting maxInFlight must be at most ${idempotenceMaxInFlightMax} with ` +
      `enableIdempotence, got ${config.maxInFlight}`
    );
  }
  if (config.retries < 1) {
    return `setting retries must be at least 1 with enableIdempotence, got ${config.retries}`;
  }
  return undefined;
}

export function resolveConsumerConfig(options: ConsumerOptions): ConsumerConfig {
  const groupId = options.groupId;
  if (groupId !== undefined && (typeof groupId !== 'string' || groupId === '')) {
    invalid('groupId', groupId, 'a non-empty name');
  }
  const maxBytesPerPartition = integer(
    'maxBytesPerPartition',
    options.maxBytesPerPartition,
    1024 * 1024,
    1,
  );
  const groupInstanceId = options.groupInstanceId;
  if (
    groupInstanceId !== undefined &&
    (typeof groupInstanceId !== 'string' || groupInstanceId === '')
  ) {
    invalid('groupInstanceId', groupInstanceId, 'a non-empty name');
  }
  const groupSettings: readonly (keyof ConsumerOptions)[] = [
    'groupInstanceId',
    'groupRemoteAssignor',
    'enableAutoCommit',
    'autoCommitIntervalMs',
    'commitBeforeProcessing',
  ];
  if (groupId === undefined) {
    const stray = groupSettings.find((setting) => options[setting] !== undefined);
    // Without a group nothing is committed or assigned: a group setting alone is a mistake.
    if (stray !== undefined) invalid(stray, options[stray], 'used with groupId');
  }
  const retryBackoffMs = integer('retryBackoffMs', options.retryBackoffMs, 100, 0);
  const groupRemoteAssignor =
    options.groupRemoteAssignor === undefined
      ? undefined
      : oneOf<GroupAssignorName>('groupRemoteAssignor', options.groupRemoteAssignor, 'uniform', [
          'uniform',
          'range',
        ]);
  return {
    groupId,
    groupInstanceId,
    groupRemoteAssignor,
    sessionTimeoutMs: integer('sessionTimeoutMs', options.sessionTimeoutMs, 45_000, 1),
    rebalanceTimeoutMs: integer('rebalanceTimeoutMs', options.rebalanceTimeoutMs, 300_000, 1),
    enableAutoCommit: oneOf('enableAutoCommit', options.enableAutoCommit, true, [true, false]),
    autoCommitIntervalMs: integer('autoCommitIntervalMs', options.autoCommitIntervalMs, 5_000, 1),
    commitBeforeProcessing: oneOf('commitBeforeProcessing', options.commitBeforeProcessing, false, [
      true,
      false,
    ]),
    autoOffsetReset: oneOf('autoOffsetReset', options.autoOffsetReset, 'latest', [
      'earliest',
      'latest',
      'none',
    ]),
    maxBytesPerPartition,
    maxBytes: integer(
      'maxBytes',
      options.maxBytes,
      Math.max(10 * 1024 * 1024, maxBytesPerPartition),
      1,
    ),
    requestTimeoutMs: integer('requestTimeoutMs', options.requestTimeoutMs, 30_000, 1),
    retryBackoffMs,
    retryBackoffMaxMs: integer(
      'retryBackoffMaxMs',
      options.retryBackoffMaxMs,
      Math.max(1_000, retryBackoffMs),
      retryBackoffMs,
    ),
    retries: integer('retries', options.retries, 10, 0),
    verifyCrc: oneOf('verifyCrc', options.verifyCrc, true, [true, false]),
  };
}

export function resolveAdminConfig(options: AdminOptions): AdminConfig {
  return {
    requestTimeoutMs: integer('requestTimeoutMs', options.requestTimeoutMs, 30_000, 1),
    retries: integer('retries', options.retries, 5, 0),
  };
}
