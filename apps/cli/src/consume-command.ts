import type { ConsumedMessage, OffsetReset, OffsetResetPolicy } from '@spool/client';
import { UsageError } from './cli-errors';
import {
  choiceFlag,
  connectReachableSpool,
  integerFlag,
  parseCommandArgs,
  requirePositionals,
} from './cli-options';
import { declared, type CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { toJsonLine, writeWithBackpressure } from './output';

/**
 * `spool consume TOPIC`: prints each record's value (text) or the whole record as one JSON
 * object per line (json). Without --partition every partition of the topic is consumed (the
 * SDK's subscribe without a group); with it, that partition alone (assign), from --offset if
 * given. It stops after --max-messages or on Ctrl-C. Output waits for stdout to drain, and the
 * SDK's credit window bounds what is fetched ahead, so a slow reader holds back the gateway.
 *
 * With --group the command is a member of that consumer group (the SDK's groupId): the group's
 * coordinator assigns it partitions, it resumes at the group's committed offsets (or, where
 * there are none, at the start with --from-beginning, else at the end), and commits what it
 * printed (auto commit, at-least-once). --max-messages or Ctrl-C commits and leaves the group,
 * so the other members take its partitions over at once.
 *
 * An --offset past the end or before the log start is out of range, as in Kafka: the partition
 * resumes where --reset says (earliest or latest, told on stderr), or with --reset none the
 * command fails with OFFSET_OUT_OF_RANGE naming the valid offsets.
 */
export const consumeHelp: CommandHelp = {
  path: ['consume'],
  usage:
    'spool consume TOPIC [--from-beginning] [--partition P [--offset O]] [--max-messages N] ' +
    '[--format text|json] [--group G] [--reset earliest|latest|none]',
  summary: "Print a topic's records, one a line, until --max-messages or Ctrl-C.",
  flags: {
    'from-beginning': {
      type: 'boolean',
      description: 'start at the log start offset where there is no position, not the end',
    },
    partition: {
      type: 'string',
      valueName: 'P',
      defaultText: 'every partition',
      description: 'consume partition P alone',
    },
    offset: {
      type: 'string',
      valueName: 'O',
      defaultText: 'the end, or the start with --from-beginning',
      description: 'start partition P at offset O (needs --partition)',
    },
    'max-messages': {
      type: 'string',
      valueName: 'N',
      defaultText: 'no limit',
      description: 'stop after N records',
    },
    format: {
      type: 'string',
      valueName: 'text|json',
      default: 'text',
      description: 'text: the value alone; json: the whole record, one object a line',
    },
    group: {
      type: 'string',
      valueName: 'G',
      defaultText: 'none',
      description: "consume as a member of group G, from and committing the group's offsets",
    },
    reset: {
      type: 'string',
      valueName: 'earliest|latest|none',
      defaultText: 'earliest with --from-beginning, else latest',
      description:
        'where a partition resumes when its offset is out of range or it has none ' +
        "(Kafka's auto.offset.reset); none fails instead",
    },
  },
  examples: ['spool consume orders --from-beginning --max-messages 10 --format json'],
};

const consumeUsage = consumeHelp.usage;

const formatChoices = ['text', 'json'] as const;
const resetChoices = ['earliest', 'latest', 'none'] as const;
export type ConsumeFormat = (typeof formatChoices)[number];

export interface ConsumeSettings {
  readonly topic: string;
  readonly fromBeginning: boolean;
  readonly partition: number | undefined;
  readonly offset: bigint | undefined;
  readonly maxMessages: number | undefined;
  readonly format: ConsumeFormat;
  readonly group: string | undefined;
  readonly reset: OffsetResetPolicy;
}

export function parseConsumeArgs(
  argv: readonly string[],
  environment: NodeJS.ProcessEnv,
): { settings: ConsumeSettings; parsed: ReturnType<typeof parseCommandArgs> } {
  const parsed = parseCommandArgs(argv, consumeHelp.flags, environment);
  const [topic] = requirePositionals(parsed.positionals, ['TOPIC'], consumeUsage);
  const partition = integerFlag(parsed.values, 'partition', { min: 0, max: 0x7fffffff });
  const rawOffset = parsed.values.offset as string | undefined;
  if (rawOffset !== undefined && !/^\d+$/.test(rawOffset)) {
    throw new UsageError(`--offset must be an offset of 0 or more, got "${rawOffset}"`);
  }
  if (rawOffset !== undefined && partition === undefined) {
    throw new UsageError('--offset needs --partition');
  }
  const group = parsed.values.group as string | undefined;
  if (group === '') throw new UsageError('--group needs a group name');
  if (group !== undefined && partition !== undefined) {
    throw new UsageError('--group and --partition exclude each other');
  }
  return {
    parsed,
    settings: {
      topic: topic!,
      fromBeginning: parsed.values['from-beginning'] === true,
      partition,
      offset: rawOffset === undefined ? undefined : BigInt(rawOffset),
      maxMessages: integerFlag(parsed.values, 'max-messages', {
        min: 1,
        max: Number.MAX_SAFE_INTEGER,
      }),
      format: declared(choiceFlag(parsed.values, 'format', formatChoices)),
      group,
      reset:
        choiceFlag(parsed.values, 'reset', resetChoices) ??
        (parsed.values['from-beginning'] === true ? 'earliest' : 'latest'),
    },
  };
}

/** One output line: the value alone (text), or the whole record as JSON with strings as UTF-8. */
export function formatConsumedMessage(message: ConsumedMessage, format: ConsumeFormat): string {
  if (format === 'text') return `${message.value?.toString('utf8') ?? ''}\n`;
  return `${toJsonLine({
    topic: message.topic,
    partition: message.partition,
    offset: message.offset,
    key: message.key?.toString('utf8') ?? null,
    value: message.value?.toString('utf8') ?? null,
    timestamp: Number(message.timestamp),
    headers: message.headers.map((header) => ({
      key: header.key,
      value: header.value?.toString('utf8') ?? null,
    })),
  })}\n`;
}

/** `offset 1000 of orders[0] is out of range (valid: 0 to 42); resuming at 42 (latest)`. */
export function formatOffsetReset(reset: OffsetReset): string {
  const range =
    reset.logStartOffset < 0n || reset.highWatermark < 0n
      ? ''
      : ` (valid: ${reset.logStartOffset} to ${reset.highWatermark})`;
  return (
    `offset ${reset.offset} of ${reset.topic}[${reset.partition}] is out of range${range}; ` +
    `resuming at ${reset.resetTo} (${reset.policy})`
  );
}

export async function runConsumeCommand(context: CommandContext): Promise<number> {
  const { settings, parsed } = parseConsumeArgs(context.argv, context.env ?? process.env);
  const consumer = (await connectReachableSpool(parsed.global)).consumer({
    ...(settings.group === undefined ? {} : { groupId: settings.group }),
    autoOffsetReset: settings.reset,
  });
  // Kafka's consumer logs a reset; a user who asked for an offset must learn it was not there.
  consumer.on('offsetReset', (reset) => context.stderr.write(`${formatOffsetReset(reset)}\n`));
  const onSignal = (): void => void consumer.stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let consumed = 0;
  try {
    if (settings.partition === undefined) {
      await consumer.subscribe({ topics: [settings.topic], fromBeginning: settings.fromBeginning });
    } else {
      consumer.assign([
        {
          topic: settings.topic,
          partition: settings.partition,
          ...(settings.offset === undefined ? {} : { offset: settings.offset }),
        },
      ]);
    }
    for await (const message of consumer) {
      await writeWithBackpressure(context.stdout, formatConsumedMessage(message, settings.format));
      consumed += 1;
      if (settings.maxMessages !== undefined && consumed >= settings.maxMessages) break;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await consumer.disconnect().catch(() => {});
  }
  // Only on success (the limit or Ctrl-C): a failure is reported as its one error line.
  context.stderr.write(`consumed ${consumed} messages\n`);
  return 0;
}
