import { SpoolError } from '@spool/common';

/**
 * Kafka's rules for topic creation, with Kafka's error names: a name of `[a-zA-Z0-9._-]`, at most
 * 249 characters, never `.` or `..`; at least one partition; a replication factor from 1 to the
 * number of live brokers.
 */
export const topicNameLengthMax = 249;
/** A bound on partitions per topic: enough for any real topic, small enough to stay sane. */
export const partitionCountMax = 10_000;
const legalTopicName = /^[a-zA-Z0-9._-]+$/;

export function validateTopicName(name: string): void {
  if (name === '') throw new SpoolError('INVALID_TOPIC_EXCEPTION', 'topic name is empty');
  if (name === '.' || name === '..') {
    throw new SpoolError('INVALID_TOPIC_EXCEPTION', `topic name cannot be "${name}"`);
  }
  if (name.length > topicNameLengthMax) {
    throw new SpoolError(
      'INVALID_TOPIC_EXCEPTION',
      `topic name is ${name.length} characters long; the most allowed is ${topicNameLengthMax}`,
    );
  }
  if (name.startsWith('__')) {
    throw new SpoolError(
      'INVALID_TOPIC_EXCEPTION',
      `topic name "${name}" is reserved: names starting with "__" are internal topics`,
    );
  }
  if (!legalTopicName.test(name)) {
    throw new SpoolError(
      'INVALID_TOPIC_EXCEPTION',
      `topic name "${name}" is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'`,
    );
  }
}

/** Kafka warns that '.' and '_' collide in metric names; Spool refuses the collision outright. */
export function metricNameOf(topic: string): string {
  return topic.replace(/\./g, '_');
}

export function validatePartitionCount(count: number, field = 'num_partitions'): void {
  if (!Number.isInteger(count) || count < 1 || count > partitionCountMax) {
    throw new SpoolError(
      'INVALID_PARTITIONS',
      `${field} is ${count}; a topic needs from 1 to ${partitionCountMax} partitions`,
    );
  }
}

export function validateReplicationFactor(factor: number, liveBrokers: number): void {
  if (!Number.isInteger(factor) || factor < 1) {
    throw new SpoolError(
      'INVALID_REPLICATION_FACTOR',
      `replication_factor is ${factor}; it must be at least 1`,
    );
  }
  if (factor > liveBrokers) {
    throw new SpoolError(
      'INVALID_REPLICATION_FACTOR',
      `replication_factor ${factor} is larger than the ${liveBrokers} live broker(s)`,
    );
  }
}
