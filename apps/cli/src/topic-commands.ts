import type { TopicDescription } from '@spool/client';
import { UsageError } from './cli-errors';
import { integerFlag, keyValueFlags, requirePositionals, type ParsedCommand } from './cli-options';
import { runAdminSubcommand, subcommandHelps, type AdminSubcommands } from './admin-subcommands';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { formatIds, formatTable, toJsonDocument } from './output';

/**
 * `spool topic create|list|describe|delete|alter-config`: the admin client's topic calls. Errors
 * the controller answers (INVALID_REPLICATION_FACTOR, TOPIC_ALREADY_EXISTS, ...) reach the user
 * with their Kafka names.
 */
/** Partition counts and replication factors are Kafka's int32 and int16. */
const partitionCountMax = 0x7fffffff;
const replicationFactorMax = 0x7fff;

const subcommands: AdminSubcommands = {
  create: {
    help: {
      path: ['topic', 'create'],
      usage:
        'spool topic create NAME [--partitions N] [--replication-factor R] [--config key=value]...',
      summary: 'Create a topic (TOPIC_ALREADY_EXISTS, exit 1, if it exists).',
      flags: {
        partitions: {
          type: 'string',
          valueName: 'N',
          defaultText: "the controller's num.partitions, 1",
          description: 'partitions of the topic',
        },
        'replication-factor': {
          type: 'string',
          valueName: 'R',
          defaultText: "the controller's default.replication.factor, 1",
          description: 'replicas of each partition, at most the number of storage nodes',
        },
        config: {
          type: 'string',
          multiple: true,
          valueName: 'key=value',
          description: 'a topic config such as retention.ms=86400000; repeat for more',
        },
      },
      examples: ['spool topic create orders --partitions 6 --replication-factor 3'],
    },
    run: async (admin, parsed, context) => {
      const [name] = requirePositionals(
        parsed.positionals,
        ['NAME'],
        subcommands.create!.help.usage,
      );
      const created = await admin.createTopics({
        topics: [
          {
            topic: name!,
            numPartitions: integerFlag(parsed.values, 'partitions', {
              min: 1,
              max: partitionCountMax,
            }),
            replicationFactor: integerFlag(parsed.values, 'replication-factor', {
              min: 1,
              max: replicationFactorMax,
            }),
            configEntries: keyValueFlags(parsed.values, 'config'),
          },
        ],
      });
      // The SDK, as KafkaJS, resolves false on TOPIC_ALREADY_EXISTS; a script must see it fail.
      if (!created) {
        throw Object.assign(new Error(`create topics: topic ${name} already exists`), {
          code: 'TOPIC_ALREADY_EXISTS',
        });
      }
      writeResult(context, parsed, { topic: name, created: true }, `created topic ${name}\n`);
      return 0;
    },
  },
  list: {
    help: {
      path: ['topic', 'list'],
      usage: 'spool topic list',
      summary: "The topics' names, one a line, sorted.",
      flags: {},
      examples: ['spool topic list --json'],
    },
    run: async (admin, parsed, context) => {
      requirePositionals(parsed.positionals, [], subcommands.list!.help.usage);
      const names = (await admin.listTopics()).sort();
      const text = names.map((name) => `${name}\n`).join('');
      writeResult(context, parsed, { topics: names }, text);
      return 0;
    },
  },
  describe: {
    help: {
      path: ['topic', 'describe'],
      usage: 'spool topic describe NAME',
      summary:
        "A topic's partitions (leader, epoch, replicas, ISR, state, a reassignment in progress), " +
        'its configs set apart from the defaults, and for a compacted topic its log cleaner ' +
        'state per partition and replica (each replica cleans its own log: its first dirty ' +
        'offset, dirty ratio, uncleanable reason).',
      flags: {},
      examples: ['spool topic describe orders'],
    },
    run: async (admin, parsed, context) => {
      const [name] = requirePositionals(
        parsed.positionals,
        ['NAME'],
        subcommands.describe!.help.usage,
      );
      const [topic] = await admin.describeTopics({ topics: [name!] });
      writeResult(context, parsed, topic, formatTopicDescription(topic!));
      return 0;
    },
  },
  delete: {
    help: {
      path: ['topic', 'delete'],
      usage: 'spool topic delete NAME',
      summary: 'Delete a topic and its records.',
      flags: {},
      examples: ['spool topic delete orders'],
    },
    run: async (admin, parsed, context) => {
      const [name] = requirePositionals(
        parsed.positionals,
        ['NAME'],
        subcommands.delete!.help.usage,
      );
      await admin.deleteTopics({ topics: [name!] });
      writeResult(context, parsed, { topic: name, deleted: true }, `deleted topic ${name}\n`);
      return 0;
    },
  },
  'alter-config': {
    help: {
      path: ['topic', 'alter-config'],
      usage: 'spool topic alter-config NAME [--config key=value]... [--delete-config key]...',
      summary: 'Set or remove topic configs (at least one of the two flags); others keep theirs.',
      flags: {
        config: {
          type: 'string',
          multiple: true,
          valueName: 'key=value',
          description: 'a config to set; repeat for more',
        },
        'delete-config': {
          type: 'string',
          multiple: true,
          valueName: 'key',
          description: 'a config to return to its default; repeat for more',
        },
      },
      examples: ['spool topic alter-config orders --config retention.ms=86400000'],
    },
    run: async (admin, parsed, context) => {
      const usage = subcommands['alter-config']!.help.usage;
      const [name] = requirePositionals(parsed.positionals, ['NAME'], usage);
      const set = keyValueFlags(parsed.values, 'config');
      const deleted = (parsed.values['delete-config'] as string[] | undefined) ?? [];
      if (set.length === 0 && deleted.length === 0) {
        throw new UsageError(`--config or --delete-config is needed; usage: ${usage}`);
      }
      await admin.alterConfigs({ topics: [{ topic: name!, set, delete: deleted }] });
      writeResult(
        context,
        parsed,
        { topic: name, set, deleted },
        `altered the config of topic ${name}\n`,
      );
      return 0;
    },
  },
};

export const topicHelp: CommandHelp = {
  path: ['topic'],
  usage: 'spool topic <create|list|describe|delete|alter-config> [flags]',
  summary: 'Create, list, describe, delete topics and alter their configs.',
  flags: {},
  examples: ['spool topic create orders --partitions 6 --replication-factor 3', 'spool topic list'],
};

export const topicSubcommandHelps = subcommandHelps(subcommands);

/** Runs `spool topic <subcommand> ...`; resolves with the exit code or throws to be reported. */
export function runTopicCommand(context: CommandContext): Promise<number> {
  return runAdminSubcommand('topic', subcommands, context);
}

export function formatTopicDescription(topic: TopicDescription): string {
  const header = `topic ${topic.name}  id ${topic.topicId}  partitions ${topic.partitions.length}\n`;
  // The reassignment column only while some partition moves, so the usual table stays as it was.
  const moving = topic.partitions.some(
    (partition) => partition.addingReplicas.length + partition.removingReplicas.length > 0,
  );
  const table = formatTable(
    ['PARTITION', 'LEADER', 'EPOCH', 'REPLICAS', 'ISR', 'STATE', ...(moving ? ['MOVING'] : [])],
    topic.partitions.map((partition) => [
      partition.partition,
      partition.leaderId,
      partition.leaderEpoch,
      formatIds(partition.replicas),
      formatIds(partition.isr),
      partitionState(partition),
      ...(moving ? [formatMove(partition)] : []),
    ]),
  );
  const configs = topic.configEntries.filter((entry) => !entry.isDefault);
  const configText =
    configs.length === 0
      ? ''
      : `configs: ${configs.map((entry) => `${entry.name}=${entry.value}`).join(', ')}\n`;
  return `${header}${table}${configText}${formatCleanerStates(topic)}`;
}

/**
 * A compacted topic's cleaner state per partition and replica, as each replica last reported it
 * (the leader's first): where the dirty section starts, its share of the cleanable bytes, and why
 * a log is uncleanable. Nothing for a topic without reports (not compacted, or no heartbeat since
 * a cleaner looked).
 */
function formatCleanerStates(topic: TopicDescription): string {
  const rows = topic.partitions.flatMap((partition) =>
    partition.replicaCleaners.map((cleaner) => [
      partition.partition,
      cleaner.brokerId,
      cleaner.brokerId === partition.leaderId ? 'leader' : 'follower',
      cleaner.firstDirtyOffset.toString(),
      cleaner.dirtyRatio.toFixed(3),
      cleaner.uncleanableReason ?? '-',
    ]),
  );
  if (rows.length === 0) return '';
  const table = formatTable(
    ['PARTITION', 'BROKER', 'ROLE', 'FIRST-DIRTY-OFFSET', 'DIRTY-RATIO', 'UNCLEANABLE-REASON'],
    rows,
  );
  return `log cleaner:\n${table}`;
}

/** A move in progress as `adding 4 removing 1`, or `-`. */
function formatMove(partition: {
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}): string {
  const parts = [
    ...(partition.addingReplicas.length > 0
      ? [`adding ${formatIds(partition.addingReplicas)}`]
      : []),
    ...(partition.removingReplicas.length > 0
      ? [`removing ${formatIds(partition.removingReplicas)}`]
      : []),
  ];
  return parts.length === 0 ? '-' : parts.join(' ');
}

export type PartitionState = 'online' | 'offline' | 'under-replicated';

/** Offline: no leader; under-replicated: the ISR lacks a replica; else online. */
export function partitionState(partition: {
  readonly leaderId: number;
  readonly offline: boolean;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}): PartitionState {
  if (partition.offline || partition.leaderId < 0) return 'offline';
  if (partition.isr.length < partition.replicas.length) return 'under-replicated';
  return 'online';
}

function writeResult(
  context: CommandContext,
  parsed: ParsedCommand,
  json: unknown,
  text: string,
): void {
  context.stdout.write(parsed.global.json ? toJsonDocument(json) : text);
}
