import type { BrokerConfigsDescription } from '@spool/client';
import { UsageError } from './cli-errors';
import { connectSpool, parseCommandArgs, type ParsedCommand } from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { formatTable, toJsonDocument } from './output';

/**
 * `spool broker config describe|set|delete`: the dynamic broker configs the controller keeps
 * (Kafka's `kafka-configs --entity-type brokers`), such as the replication throttles of a
 * reassignment. A broker's own value wins over the cluster-wide default (`--default`, Kafka's
 * `--entity-default`); a name set on neither leaves the node on its static setting.
 *
 * 1. The command line is checked whole before anything is sent: the action, one broker id or
 *    --default, and for set key=value pairs (for delete names), comma-separated, each name once.
 * 2. The controller validates the names and values (an unknown name or a bad value is
 *    INVALID_CONFIG naming it, a static setting INVALID_REQUEST) and applies a change all or
 *    nothing, so a refused command changed nothing.
 */
export const brokerConfigHelp: CommandHelp = {
  path: ['broker', 'config'],
  usage:
    'spool broker config describe [N|--default] | set N|--default key=value[,key=value] | ' +
    'delete N|--default key[,key]',
  summary:
    "Describe, set or delete a broker's dynamic configs (the replication throttles), or the " +
    'cluster-wide default.',
  details: [
    'describe N: the configs in effect on broker N, its own (DYNAMIC_BROKER_CONFIG) and those',
    '  it inherits from the default (DYNAMIC_DEFAULT_BROKER_CONFIG); without N, the default.',
    '  --json: {"broker": N or null for the default, "configs": [{"name", "value", "source"}]}.',
    'set: changes take effect on the node within a heartbeat, no restart.',
    'delete: broker N falls back to the default, then to its static setting.',
    'Dynamic configs: leader.replication.throttled.rate, follower.replication.throttled.rate',
    '  (bytes/s of reassignment traffic per broker, 0 turns a throttle off), and',
    "  replica.alter.log.dirs.io.max.bytes.per.second (Kafka's; kept, throttles nothing: a node",
    '  has one data directory). An unknown name or a bad value is refused, nothing changed.',
  ],
  flags: {
    default: {
      type: 'boolean',
      description:
        "the cluster-wide default of every broker (Kafka's --entity-default) instead of N",
    },
  },
  examples: [
    'spool broker config set 1 leader.replication.throttled.rate=10485760,follower.replication.throttled.rate=10485760',
    'spool broker config describe 1',
    'spool broker config set --default follower.replication.throttled.rate=52428800',
    'spool broker config delete 1 leader.replication.throttled.rate',
  ],
};

const actions = ['describe', 'set', 'delete'] as const;
type Action = (typeof actions)[number];

/** Broker ids are Kafka's int32. */
const brokerIdMax = 0x7fffffff;

interface BrokerConfigCommand {
  readonly action: Action;
  /** undefined: the cluster-wide default. */
  readonly brokerId: number | undefined;
  readonly set: readonly { name: string; value: string }[];
  readonly delete: readonly string[];
}

/** `spool broker config ...` after the word config. */
export async function runBrokerConfigCommand(
  argv: readonly string[],
  context: CommandContext,
): Promise<number> {
  const parsed = parseCommandArgs(argv, brokerConfigHelp.flags, context.env ?? process.env);
  const command = parseBrokerConfigCommand(parsed);
  const admin = connectSpool(parsed.global).admin();
  try {
    if (command.action === 'describe') {
      const described = await admin.describeBrokerConfigs(command.brokerId);
      context.stdout.write(
        parsed.global.json
          ? toJsonDocument({ broker: described.brokerId ?? null, configs: described.configs })
          : formatBrokerConfigs(described),
      );
      return 0;
    }
    await admin.alterBrokerConfigs(command.brokerId, { set: command.set, delete: command.delete });
    const resource = resourceText(command.brokerId);
    context.stdout.write(
      parsed.global.json
        ? toJsonDocument({
            broker: command.brokerId ?? null,
            set: Object.fromEntries(command.set.map(({ name, value }) => [name, value])),
            deleted: command.delete,
          })
        : command.action === 'set'
          ? `set ${command.set.map(({ name, value }) => `${name}=${value}`).join(', ')} on ${resource}\n`
          : `deleted ${command.delete.join(', ')} from ${resource}\n`,
    );
    return 0;
  } finally {
    await admin.disconnect();
  }
}

/** Point 1. */
export function parseBrokerConfigCommand(parsed: ParsedCommand): BrokerConfigCommand {
  const usage = brokerConfigHelp.usage;
  const [action, ...rest] = parsed.positionals;
  if (action === undefined) {
    throw new UsageError(`broker config needs an action (${actions.join(', ')}); usage: ${usage}`);
  }
  if (!isAction(action)) {
    throw new UsageError(
      `unknown broker config action "${action}": expected ${actions.join(', ')}; usage: ${usage}`,
    );
  }
  const toDefault = parsed.values['default'] === true;
  const brokerWord = toDefault ? undefined : rest[0];
  const items = toDefault ? rest : rest.slice(1);
  if (brokerWord === undefined && !toDefault && action !== 'describe') {
    throw new UsageError(`missing N (a broker id) or --default; usage: ${usage}`);
  }
  if (toDefault && rest[0] !== undefined && /^\d+$/.test(rest[0])) {
    throw new UsageError(`give either a broker id or --default, not both; usage: ${usage}`);
  }
  const brokerId = brokerWord === undefined ? undefined : parseBrokerId(brokerWord);
  if (action === 'describe') {
    if (items.length > 0) {
      throw new UsageError(`unexpected argument "${items[0]}"; usage: ${usage}`);
    }
    return { action, brokerId, set: [], delete: [] };
  }
  const words = items
    .flatMap((item) => item.split(','))
    .map((word) => word.trim())
    .filter((word) => word !== '');
  if (words.length === 0) {
    throw new UsageError(
      action === 'set'
        ? `set needs key=value pairs; usage: ${usage}`
        : `delete needs config names; usage: ${usage}`,
    );
  }
  const set = action === 'set' ? words.map(parseKeyValue) : [];
  const names = action === 'set' ? set.map((entry) => entry.name) : words;
  if (action === 'delete') {
    const withValue = names.find((name) => name.includes('='));
    if (withValue !== undefined) {
      throw new UsageError(`delete takes config names, not key=value: "${withValue}"`);
    }
  }
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) throw new UsageError(`config "${repeated}" is named twice`);
  return { action, brokerId, set, delete: action === 'delete' ? names : [] };
}

function isAction(word: string): word is Action {
  return (actions as readonly string[]).includes(word);
}

function parseBrokerId(word: string): number {
  if (!/^\d+$/.test(word) || Number(word) > brokerIdMax) {
    throw new UsageError(`N must be a broker id (0 to ${brokerIdMax}), got "${word}"`);
  }
  return Number(word);
}

function parseKeyValue(word: string): { name: string; value: string } {
  const separator = word.indexOf('=');
  if (separator <= 0) throw new UsageError(`expected key=value, got "${word}"`);
  return { name: word.slice(0, separator), value: word.slice(separator + 1) };
}

function resourceText(brokerId: number | undefined): string {
  return brokerId === undefined ? 'the cluster-wide default' : `broker ${brokerId}`;
}

export function formatBrokerConfigs(described: BrokerConfigsDescription): string {
  if (described.configs.length === 0) {
    return described.brokerId === undefined
      ? 'no cluster-wide default is set: each broker runs on its own configs or static settings\n'
      : `broker ${described.brokerId} has no dynamic configs: it runs on its static settings\n`;
  }
  return formatTable(
    ['NAME', 'VALUE', 'SOURCE'],
    described.configs.map((entry) => [entry.name, entry.value, entry.source]),
  );
}
