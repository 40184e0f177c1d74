import { SpoolError } from '@spool/common';

/**
 * The topic configs Spool knows, with Kafka's names, defaults and validation. Anything else is
 * refused by name, so a typo never silently does nothing.
 */
type ConfigType =
  | { readonly type: 'long'; readonly min: number; readonly max?: number }
  | { readonly type: 'int'; readonly min: number; readonly max?: number }
  | { readonly type: 'double'; readonly min: number; readonly max: number }
  | { readonly type: 'boolean' }
  | { readonly type: 'list'; readonly choices: readonly string[] }
  | { readonly type: 'string'; readonly choices: readonly string[] }
  | { readonly type: 'replicas' };

interface TopicConfigDefinition {
  readonly default: string;
  readonly kind: ConfigType;
}

const int32Max = 2_147_483_647;

export const topicConfigDefinitions: Readonly<Record<string, TopicConfigDefinition>> = {
  'retention.ms': { default: '604800000', kind: { type: 'long', min: -1 } },
  'retention.bytes': { default: '-1', kind: { type: 'long', min: -1 } },
  'segment.bytes': { default: '1073741824', kind: { type: 'int', min: 14, max: int32Max } },
  'segment.ms': { default: '604800000', kind: { type: 'long', min: 1 } },
  'cleanup.policy': { default: 'delete', kind: { type: 'list', choices: ['delete', 'compact'] } },
  'min.insync.replicas': { default: '1', kind: { type: 'int', min: 1, max: int32Max } },
  'max.message.bytes': { default: '1048588', kind: { type: 'int', min: 0, max: 64 * 1024 * 1024 } },
  'unclean.leader.election.enable': { default: 'false', kind: { type: 'boolean' } },
  'message.timestamp.type': {
    default: 'CreateTime',
    kind: { type: 'string', choices: ['CreateTime', 'LogAppendTime'] },
  },
  'flush.messages': { default: '9223372036854775807', kind: { type: 'long', min: 1 } },
  'flush.ms': { default: '9223372036854775807', kind: { type: 'long', min: 0 } },
  'index.interval.bytes': { default: '4096', kind: { type: 'int', min: 0, max: int32Max } },
  // Log compaction (cleanup.policy=compact), with Kafka's defaults.
  'min.cleanable.dirty.ratio': { default: '0.5', kind: { type: 'double', min: 0, max: 1 } },
  'min.compaction.lag.ms': { default: '0', kind: { type: 'long', min: 0 } },
  'max.compaction.lag.ms': { default: '9223372036854775807', kind: { type: 'long', min: 1 } },
  'delete.retention.ms': { default: '86400000', kind: { type: 'long', min: 0 } },
  // The replicas Kafka's reassignment throttles hold (kafka-reassign-partitions --throttle sets
  // them, --verify and --cancel delete them): "*" or partition:brokerId pairs. The storage nodes
  // throttle the out-of-sync replicas listed, and every replica a reassignment adds
  // (apps/storage-node/src/replica/throttled-replicas.ts).
  'leader.replication.throttled.replicas': { default: '', kind: { type: 'replicas' } },
  'follower.replication.throttled.replicas': { default: '', kind: { type: 'replicas' } },
};

/** Checks one config and returns its normalized value; throws INVALID_CONFIG naming it. */
export function validateTopicConfig(name: string, value: string): string {
  const definition = topicConfigDefinitions[name];
  if (definition === undefined) {
    throw new SpoolError('INVALID_CONFIG', `unknown topic config "${name}"`);
  }
  const bad = (allowed: string): never => {
    throw new SpoolError(
      'INVALID_CONFIG',
      `invalid value "${value}" for topic config ${name}: ${allowed}`,
    );
  };
  const trimmed = value.trim();
  const { kind } = definition;
  switch (kind.type) {
    case 'long':
    case 'int': {
      if (!/^-?\d+$/.test(trimmed)) return bad('expected an integer');
      const number = BigInt(trimmed);
      const max = kind.max === undefined ? 9_223_372_036_854_775_807n : BigInt(kind.max);
      if (number < BigInt(kind.min) || number > max) {
        return bad(`expected an integer from ${kind.min} to ${max}`);
      }
      return number.toString();
    }
    case 'double': {
      const number = Number(trimmed);
      if (trimmed === '' || !Number.isFinite(number)) return bad('expected a number');
      if (number < kind.min || number > kind.max) {
        return bad(`expected a number from ${kind.min} to ${kind.max}`);
      }
      return String(number);
    }
    case 'boolean': {
      const lower = trimmed.toLowerCase();
      if (lower !== 'true' && lower !== 'false') return bad('expected true or false');
      return lower;
    }
    case 'list': {
      const items = trimmed.split(',').map((item) => item.trim());
      if (items.length === 0 || items.some((item) => !kind.choices.includes(item))) {
        return bad(`expected a comma-separated list of ${kind.choices.join(', ')}`);
      }
      return items.join(',');
    }
    case 'string':
      if (!kind.choices.includes(trimmed)) return bad(`expected one of ${kind.choices.join(', ')}`);
      return trimmed;
    case 'replicas': {
      // Kafka's ThrottledReplicaListValidator: the literal "*", or a list whose items are each
      // partitionId:brokerId (empty items, and so the empty list, allowed).
      if (trimmed === '*') return trimmed;
      const items = trimmed
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
      if (items.some((item) => !/^\d{1,10}:\d{1,10}$/.test(item))) {
        return bad(
          'expected the literal "*" or a list of replicas in the format ' +
            '[partitionId]:[brokerId],[partitionId]:[brokerId],...',
        );
      }
      return items.map((item) => item.split(':').map(Number).join(':')).join(',');
    }
  }
}

/** Validates a set of configs, refusing duplicates; returns the normalized map. */
export function validateTopicConfigs(
  entries: ReadonlyArray<{ name: string; value: string }>,
): Record<string, string> {
  const configs: Record<string, string> = {};
  for (const entry of entries) {
    if (entry.name in configs) {
      throw new SpoolError('INVALID_CONFIG', `topic config ${entry.name} is given twice`);
    }
    configs[entry.name] = validateTopicConfig(entry.name, entry.value);
  }
  return configs;
}

/**
 * Checks settings that constrain each other, on a topic's whole set of configs (after an
 * AlterConfigs merged its changes): Kafka's LogConfig.validate refuses a min.compaction.lag.ms
 * above max.compaction.lag.ms.
 */
export function validateTopicConfigCombination(configs: Readonly<Record<string, string>>): void {
  const minLag = BigInt(effectiveTopicConfig(configs, 'min.compaction.lag.ms'));
  const maxLag = BigInt(effectiveTopicConfig(configs, 'max.compaction.lag.ms'));
  if (minLag > maxLag) {
    throw new SpoolError(
      'INVALID_CONFIG',
      `conflict topic config setting min.compaction.lag.ms (${minLag}) > max.compaction.lag.ms (${maxLag})`,
    );
  }
}

/** Every known config with the topic's value or the default, as DescribeConfigs answers. */
export function describeTopicConfigs(
  configs: Readonly<Record<string, string>>,
): Array<{ name: string; value: string; isDefault: boolean }> {
  return Object.entries(topicConfigDefinitions).map(([name, definition]) => ({
    name,
    value: configs[name] ?? definition.default,
    isDefault: !(name in configs),
  }));
}

export function effectiveTopicConfig(
  configs: Readonly<Record<string, string>>,
  name: string,
): string {
  const definition = topicConfigDefinitions[name];
  if (definition === undefined) throw new Error(`no topic config named ${name}`);
  return configs[name] ?? definition.default;
}
