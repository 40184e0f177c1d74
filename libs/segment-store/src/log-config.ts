/**
 * The per-log settings, under Kafka's topic-config names. Defaults are Kafka's, so a topic
 * created without configs behaves as it would in Kafka.
 */
import { SegmentStoreError } from './errors';

export interface LogConfig {
  /** segment.bytes: roll the active segment before it would pass this size. */
  readonly segmentBytes: number;
  /** segment.ms: roll the active segment once its first batch is this old. */
  readonly segmentMs: number;
  /** segment.index.bytes: the largest an offset or time index may grow; full rolls the segment. */
  readonly segmentIndexBytes: number;
  /** index.interval.bytes: log bytes between two offset-index entries. */
  readonly indexIntervalBytes: number;
  /** retention.ms: delete closed segments whose newest record is older; -1 keeps forever. */
  readonly retentionMs: number;
  /** retention.bytes: delete the oldest closed segments while the log is larger; -1 unlimited. */
  readonly retentionBytes: number;
  /** max.message.bytes: the largest record batch accepted, header included. */
  readonly maxMessageBytes: number;
  /** flush.messages: fdatasync after this many appended records. */
  readonly flushMessages: number;
  /** flush.ms: fdatasync when unflushed data is this old. */
  readonly flushMs: number;
  /** message.timestamp.type: keep the producer's CreateTime or stamp LogAppendTime. */
  readonly messageTimestampType: 'CreateTime' | 'LogAppendTime';
  /**
   * cleanup.policy: which of Kafka's retention modes apply. `delete` removes old segments by
   * retention.ms and retention.bytes; `compact` keeps the latest record of every key for ever, so
   * a log without `delete` never loses a segment to time or size; the log cleaner
   * (cleaner/log-cleaner.ts) removes a key's older records from the log's closed segments.
   */
  readonly cleanupPolicy: readonly CleanupPolicy[];
  /**
   * min.cleanable.dirty.ratio: the cleaner takes a compacted log only once the part written since
   * its last cleaning (the dirty section) is at least this share of the cleanable bytes.
   */
  readonly minCleanableDirtyRatio: number;
  /** min.compaction.lag.ms: a record stays uncompacted at least this long after it was written. */
  readonly minCompactionLagMs: number;
  /**
   * max.compaction.lag.ms: a record is compacted at most this long after it was written, whatever
   * the dirty ratio (Number.MAX_SAFE_INTEGER, Kafka's Long.MAX_VALUE, is never).
   */
  readonly maxCompactionLagMs: number;
  /**
   * delete.retention.ms: a tombstone (a record with a null value) stays readable this long after
   * its segment's newest record, so a consumer reading from the start within it sees the delete.
   */
  readonly deleteRetentionMs: number;
}

export type CleanupPolicy = 'delete' | 'compact';

/** The largest batch any configuration may allow; also the bound recovery trusts a length to. */
export const batchSizeBytesLimit = 64 * 1024 * 1024;

export const defaultLogConfig: LogConfig = {
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentIndexBytes: 10 * 1024 * 1024,
  indexIntervalBytes: 4096,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  maxMessageBytes: 1024 * 1024 + 12,
  flushMessages: Number.MAX_SAFE_INTEGER,
  flushMs: Number.MAX_SAFE_INTEGER,
  messageTimestampType: 'CreateTime',
  cleanupPolicy: ['delete'],
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  deleteRetentionMs: 24 * 60 * 60 * 1000,
};

interface Bound {
  readonly key: keyof LogConfig;
  readonly name: string;
  readonly min: number;
  readonly max: number;
}

/** Kafka's names and the ranges Spool accepts for each numeric setting. */
const numericSettings: readonly Bound[] = [
  { key: 'segmentBytes', name: 'segment.bytes', min: 14, max: 2 ** 31 - 1 },
  { key: 'segmentMs', name: 'segment.ms', min: 1, max: Number.MAX_SAFE_INTEGER },
  { key: 'segmentIndexBytes', name: 'segment.index.bytes', min: 4096, max: 2 ** 31 - 1 },
  { key: 'indexIntervalBytes', name: 'index.interval.bytes', min: 0, max: 2 ** 31 - 1 },
  { key: 'retentionMs', name: 'retention.ms', min: -1, max: Number.MAX_SAFE_INTEGER },
  { key: 'retentionBytes', name: 'retention.bytes', min: -1, max: Number.MAX_SAFE_INTEGER },
  { key: 'maxMessageBytes', name: 'max.message.bytes', min: 0, max: batchSizeBytesLimit },
  { key: 'flushMessages', name: 'flush.messages', min: 1, max: Number.MAX_SAFE_INTEGER },
  { key: 'flushMs', name: 'flush.ms', min: 0, max: Number.MAX_SAFE_INTEGER },
  {
    key: 'minCompactionLagMs',
    name: 'min.compaction.lag.ms',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
  },
  {
    key: 'maxCompactionLagMs',
    name: 'max.compaction.lag.ms',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },
  { key: 'deleteRetentionMs', name: 'delete.retention.ms', min: 0, max: Number.MAX_SAFE_INTEGER },
];

/** Fills in defaults and checks every value; throws INVALID_CONFIG naming the Kafka setting. */
export function resolveLogConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  const config = { ...defaultLogConfig, ...overrides };
  for (const bound of numericSettings) {
    const value = config[bound.key] as number;
    if (!Number.isSafeInteger(value) || value < bound.min || value > bound.max) {
      throw new SegmentStoreError(
        'INVALID_CONFIG',
        `${bound.name} must be an integer from ${bound.min} to ${bound.max}, got ${value}`,
      );
    }
  }
  if (
    config.messageTimestampType !== 'CreateTime' &&
    config.messageTimestampType !== 'LogAppendTime'
  ) {
    throw new SegmentStoreError(
      'INVALID_CONFIG',
      `message.timestamp.type must be CreateTime or LogAppendTime, got ${String(config.messageTimestampType)}`,
    );
  }
  if (
    config.cleanupPolicy.length === 0 ||
    config.cleanupPolicy.some((policy) => policy !== 'delete' && policy !== 'compact')
  ) {
    throw new SegmentStoreError(
      'INVALID_CONFIG',
      `cleanup.policy must be delete, compact, or compact,delete, got ${config.cleanupPolicy.join(',')}`,
    );
  }
  const ratio = config.minCleanableDirtyRatio;
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) {
    throw new SegmentStoreError(
      'INVALID_CONFIG',
      `min.cleanable.dirty.ratio must be a number from 0 to 1, got ${String(ratio)}`,
    );
  }
  // Kafka's LogConfig.validate: a record cannot be due for compaction before it may be compacted.
  if (config.minCompactionLagMs > config.maxCompactionLagMs) {
    throw new SegmentStoreError(
      'INVALID_CONFIG',
      `conflict topic config setting min.compaction.lag.ms (${config.minCompactionLagMs}) > max.compaction.lag.ms (${config.maxCompactionLagMs})`,
    );
  }
  return config;
}

/** Reads Kafka-named topic configs (`{ "retention.ms": "60000" }`) into a LogConfig. */
export function logConfigFromTopicConfigs(configs: Readonly<Record<string, string>>): LogConfig {
  const overrides: Record<string, unknown> = {};
  for (const bound of numericSettings) {
    const raw = configs[bound.name];
    if (raw === undefined) continue;
    if (!/^-?\d+$/.test(raw.trim())) {
      throw new SegmentStoreError(
        'INVALID_CONFIG',
        `${bound.name} must be an integer, got "${raw}"`,
      );
    }
    // Kafka writes "never" as Long.MAX_VALUE; anything past 2^53 means the same here.
    const value = BigInt(raw.trim());
    overrides[bound.key] =
      value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
  }
  const timestampType = configs['message.timestamp.type'];
  if (timestampType !== undefined) overrides['messageTimestampType'] = timestampType;
  const ratio = configs['min.cleanable.dirty.ratio'];
  if (ratio !== undefined) {
    if (!/^\s*(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/.test(ratio)) {
      throw new SegmentStoreError(
        'INVALID_CONFIG',
        `min.cleanable.dirty.ratio must be a number from 0 to 1, got "${ratio}"`,
      );
    }
    overrides['minCleanableDirtyRatio'] = Number(ratio);
  }
  const cleanupPolicy = configs['cleanup.policy'];
  if (cleanupPolicy !== undefined) {
    overrides['cleanupPolicy'] = cleanupPolicy
      .split(',')
      .map((policy) => policy.trim())
      .filter((policy) => policy !== '');
  }
  return resolveLogConfig(overrides as Partial<LogConfig>);
}
