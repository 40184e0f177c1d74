import { createReadStream } from 'node:fs';
import * as readline from 'node:readline';
import type { AcksSetting, CompressionName, Message, Producer } from '@spool/client';
import { UsageError } from './cli-errors';
import {
  choiceFlag,
  connectReachableSpool,
  parseCommandArgs,
  requirePositionals,
} from './cli-options';
import { declared, type CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { isTerminal } from './output';

/**
 * `spool produce TOPIC`: one record per input line, from stdin or --file. Memory stays bounded
 * however long the input: lines are sent in chunks, one chunk is in flight while the next fills,
 * and readline's iterator stops reading while the loop waits for the chunk in flight.
 *
 * Why only one `send` at a time: concurrent sends interleave their records in the producer's
 * batches (each send awaits buffer space per record), so two lines with the same key could land
 * out of input order. One send in flight, and maxInFlight 1 below, keep every key's order.
 * The first failed send stops reading; its error is reported once the send in flight settled.
 */
export const produceHelp: CommandHelp = {
  path: ['produce'],
  usage:
    'spool produce TOPIC [--file F] [--key-separator SEP] [--acks 0|1|all] ' +
    '[--compression none|gzip|snappy|lz4|zstd]',
  summary:
    'Send each line of stdin (or --file) as one record, in order; prints a summary on stderr.',
  flags: {
    file: {
      type: 'string',
      valueName: 'F',
      defaultText: 'stdin',
      description: 'read lines from F',
    },
    'key-separator': {
      type: 'string',
      valueName: 'SEP',
      defaultText: 'none: no keys',
      description: 'what precedes the first SEP of a line is its key, the rest its value',
    },
    acks: {
      type: 'string',
      valueName: '0|1|all',
      default: 'all',
      description: 'acknowledgements each batch waits for',
    },
    compression: {
      type: 'string',
      valueName: 'none|gzip|snappy|lz4|zstd',
      default: 'none',
      description: 'the codec of every batch',
    },
  },
  examples: ["printf 'k1:hello\\nk2:world\\n' | spool produce orders --key-separator :"],
};

const produceUsage = produceHelp.usage;

/** Records per `send` call: large enough to amortise a round trip, small enough to stream. */
const recordsPerSendMax = 2_000;
/** How often the progress line on a terminal is redrawn. */
const progressIntervalMs = 500;

const acksChoices = ['0', '1', 'all'] as const;
const compressionChoices = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

export interface ProduceSettings {
  readonly topic: string;
  readonly file: string | undefined;
  readonly keySeparator: string | undefined;
  readonly acks: AcksSetting;
  readonly compression: CompressionName;
}

export function parseProduceArgs(
  argv: readonly string[],
  environment: NodeJS.ProcessEnv,
): { settings: ProduceSettings; parsed: ReturnType<typeof parseCommandArgs> } {
  const parsed = parseCommandArgs(argv, produceHelp.flags, environment);
  const [topic] = requirePositionals(parsed.positionals, ['TOPIC'], produceUsage);
  const acks = declared(choiceFlag(parsed.values, 'acks', acksChoices));
  const keySeparator = parsed.values['key-separator'] as string | undefined;
  if (keySeparator === '') {
    throw new UsageError('--key-separator must not be empty');
  }
  return {
    parsed,
    settings: {
      topic: topic!,
      file: parsed.values.file as string | undefined,
      keySeparator,
      acks: acks === 'all' ? 'all' : acks === '1' ? 1 : 0,
      compression: declared(choiceFlag(parsed.values, 'compression', compressionChoices)),
    },
  };
}

/** A line as a record: with a separator, what precedes its first occurrence is the key. */
export function lineToMessage(line: string, keySeparator: string | undefined): Message {
  if (keySeparator === undefined) return { value: line };
  const index = line.indexOf(keySeparator);
  if (index < 0) return { key: null, value: line };
  return { key: line.slice(0, index), value: line.slice(index + keySeparator.length) };
}

export function formatProduceSummary(records: number, elapsedMs: number): string {
  const seconds = Math.max(elapsedMs, 1) / 1000;
  return `produced ${records} records in ${seconds.toFixed(2)} s (${Math.round(records / seconds)} records/s)`;
}

export async function runProduceCommand(context: CommandContext): Promise<number> {
  const { settings, parsed } = parseProduceArgs(context.argv, context.env ?? process.env);
  const spool = await connectReachableSpool(parsed.global);
  const input =
    settings.file === undefined
      ? (context.stdin ?? process.stdin)
      : createReadStream(settings.file);
  const producer = spool.producer({
    acks: settings.acks,
    compression: settings.compression,
    // One batch per partition in flight keeps each key's records in the order of the input.
    maxInFlight: 1,
  });
  const startedAtMs = Date.now();
  let producedRecords = 0;
  const progress = isTerminal(context.stderr)
    ? setInterval(() => {
        context.stderr.write(
          `\r${formatProduceSummary(producedRecords, Date.now() - startedAtMs)}`,
        );
      }, progressIntervalMs)
    : undefined;
  try {
    await streamLines(input, producer, settings, (records) => {
      producedRecords += records;
    });
  } finally {
    if (progress !== undefined) {
      clearInterval(progress);
      context.stderr.write('\r\x1b[K');
    }
    await producer.disconnect().catch(() => {});
  }
  // Only on success: a failure is reported as its one error line.
  context.stderr.write(`${formatProduceSummary(producedRecords, Date.now() - startedAtMs)}\n`);
  return 0;
}

/** Sends every line in order, or rejects with the first failure once the send in flight settled. */
async function streamLines(
  input: NodeJS.ReadableStream,
  producer: Producer,
  settings: ProduceSettings,
  onAcknowledged: (records: number) => void,
): Promise<void> {
  let inFlight: Promise<void> = Promise.resolve();
  let firstFailure: { error: unknown } | undefined;
  const send = (messages: Message[]): Promise<void> =>
    producer.send({ topic: settings.topic, messages }).then(
      () => onAcknowledged(messages.length),
      (error: unknown) => {
        firstFailure ??= { error };
      },
    );
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  let chunk: Message[] = [];
  try {
    for await (const line of lines) {
      chunk.push(lineToMessage(line, settings.keySeparator));
      if (chunk.length < recordsPerSendMax) continue;
      await inFlight;
      if (firstFailure !== undefined) break;
      inFlight = send(chunk);
      chunk = [];
    }
    await inFlight;
    if (chunk.length > 0 && firstFailure === undefined) await send(chunk);
  } finally {
    lines.close();
  }
  if (firstFailure !== undefined) throw firstFailure.error;
}
