import type { AcksSetting, CompressionName } from '@spool/client';
import { endToEndValueBytesMin } from './bench-e2e-consumer';
import { UsageError } from './cli-errors';
import {
  choiceFlag,
  integerFlag,
  parseCommandArgs,
  requirePositionals,
  type ParsedCommand,
} from './cli-options';
import {
  declared,
  type CommandHelp,
  type FlagDeclaration,
  type FlagDeclarations,
} from './command-help';

/**
 * The flags of `spool bench produce|consume|e2e|seek`, declared once with the modes each
 * applies to, parsed and checked in one place. Names follow Kafka's perf tools where they have
 * one (--num-records is --records here, --throughput is records per second with -1 for
 * unlimited, as in kafka-producer-perf-test).
 */
export const benchModes = ['produce', 'consume', 'e2e', 'seek'] as const;
export type BenchMode = (typeof benchModes)[number];

const acksChoices = ['0', '1', 'all'] as const;
const compressionChoices = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
const int32Max = 0x7fffffff;

interface BenchFlag extends FlagDeclaration {
  readonly modes: readonly BenchMode[];
}

const producing: readonly BenchMode[] = ['produce', 'e2e'];

const benchFlags: Readonly<Record<string, BenchFlag>> = {
  topic: { type: 'string', valueName: 'T', description: 'the topic (required)', modes: benchModes },
  records: {
    type: 'string',
    valueName: 'N',
    default: '1000000',
    description: 'records to produce (produce, e2e) or to consume (consume)',
    modes: ['produce', 'consume', 'e2e'],
  },
  'record-size': {
    type: 'string',
    valueName: 'B',
    default: '100',
    description: "bytes of each record's value (seek: of the records read, for MB/s)",
    modes: ['produce', 'e2e', 'seek'],
  },
  throughput: {
    type: 'string',
    valueName: 'R',
    default: '-1',
    description: 'records per second to hold, -1 for as fast as possible (e2e needs a rate)',
    modes: producing,
  },
  acks: {
    type: 'string',
    valueName: '0|1|all',
    default: 'all',
    description: 'acknowledgements each batch waits for',
    modes: producing,
  },
  'batch-size': {
    type: 'string',
    valueName: 'B',
    defaultText: "16384, the SDK's",
    description: 'bytes of a batch before it is sent (batch.size)',
    modes: producing,
  },
  'linger-ms': {
    type: 'string',
    valueName: 'MS',
    defaultText: "5, the SDK's",
    description: 'how long a batch waits for more records (linger.ms)',
    modes: producing,
  },
  compression: {
    type: 'string',
    valueName: 'none|gzip|snappy|lz4|zstd',
    default: 'none',
    description: 'the codec of every batch',
    modes: producing,
  },
  partitions: {
    type: 'string',
    valueName: 'P',
    defaultText: 'none: the topic must exist',
    description: 'create the topic with P partitions if it does not exist',
    modes: benchModes,
  },
  'replication-factor': {
    type: 'string',
    valueName: 'R',
    default: '1',
    description: 'the replication factor of a topic --partitions creates',
    modes: benchModes,
  },
  producers: {
    type: 'string',
    valueName: 'N',
    default: '1',
    description: 'producers sending at once, each its share of the records',
    modes: producing,
  },
  'max-in-flight': {
    type: 'string',
    valueName: 'N',
    // Kafka's max.in.flight.requests.per.connection default: one batch per round trip would
    // make the benchmark measure the round trip, not the log.
    default: '5',
    description: "batches of one partition in flight at once (Kafka's default)",
    modes: producing,
  },
  keys: { type: 'boolean', description: 'give each record a key', modes: producing },
  'from-beginning': {
    type: 'boolean',
    description: 'start at the log start offset, not the end',
    modes: ['consume'],
  },
  group: {
    type: 'string',
    valueName: 'G',
    defaultText: 'none: every partition, no group',
    description: 'consume as a member of this consumer group',
    modes: ['consume'],
  },
  reads: {
    type: 'string',
    valueName: 'N',
    default: '1000',
    description: 'random reads by offset to time',
    modes: ['seek'],
  },
  'warmup-seconds': {
    type: 'string',
    valueName: 'S',
    default: '0',
    description: 'send at the rate this long first, unmeasured',
    modes: ['e2e'],
  },
};

const modeSummaries: Readonly<Record<BenchMode, string>> = {
  produce: 'Records/s, MB/s and the latency from send to acknowledgement.',
  consume: 'Records/s, MB/s and the wait for each batch, reading a topic.',
  e2e:
    'Produce at --throughput R and consume in this process: the latency from the time each ' +
    'record was due to its arrival.',
  seek: 'Read-by-offset latency: --reads random offsets, each the time from seek to its record.',
};

const modeExamples: Readonly<Record<BenchMode, string>> = {
  produce: 'spool bench produce --topic bench --partitions 6 --records 1000000 --throughput -1',
  consume: 'spool bench consume --topic bench --records 1000000 --from-beginning',
  e2e: 'spool bench e2e --topic bench --throughput 10000 --records 100000 --warmup-seconds 5',
  seek: 'spool bench seek --topic bench --reads 1000',
};

function flagsOf(mode: BenchMode): FlagDeclarations {
  return Object.fromEntries(
    Object.entries(benchFlags)
      .filter(([, flag]) => flag.modes.includes(mode))
      .map(([name, { modes: _modes, ...flag }]) => [name, flag]),
  );
}

function usageOf(mode: BenchMode): string {
  return `spool bench ${mode} --topic T ${Object.entries(flagsOf(mode))
    .filter(([name]) => name !== 'topic')
    .map(([name, flag]) => `[--${name}${flag.type === 'string' ? ` ${flag.valueName}` : ''}]`)
    .join(' ')}`;
}

export const benchHelp: CommandHelp = {
  path: ['bench'],
  usage: 'spool bench <produce|consume|e2e|seek> --topic T [flags]',
  summary:
    "Measure throughput and latency, as Kafka's perf tools do; prints figures, never fails on them.",
  flags: {},
  examples: [modeExamples.produce, modeExamples.e2e],
};

export const benchSubcommandHelps: Readonly<Record<string, CommandHelp>> = Object.fromEntries(
  benchModes.map((mode) => [
    mode,
    {
      path: ['bench', mode],
      usage: usageOf(mode),
      summary: modeSummaries[mode],
      flags: flagsOf(mode),
      examples: [modeExamples[mode]],
    } satisfies CommandHelp,
  ]),
);

const allBenchFlags: FlagDeclarations = Object.fromEntries(
  Object.entries(benchFlags).map(([name, { modes: _modes, ...flag }]) => [name, flag]),
);

export interface BenchSettings {
  readonly mode: BenchMode;
  readonly topic: string;
  /** records: how many to produce (produce, e2e) or to consume (consume). */
  readonly records: number;
  /** recordSizeBytes: the value's size; the key (with --keys) comes on top. */
  readonly recordSizeBytes: number;
  /** throughputRecordsPerSec: the rate to hold; undefined for as fast as possible. */
  readonly throughputRecordsPerSec: number | undefined;
  readonly acks: AcksSetting;
  readonly batchSizeBytes: number | undefined;
  readonly lingerMs: number | undefined;
  readonly compression: CompressionName;
  /** partitions: create the topic with this many partitions if it does not exist. */
  readonly partitions: number | undefined;
  readonly replicationFactor: number;
  readonly producers: number;
  readonly maxInFlight: number;
  readonly keys: boolean;
  readonly fromBeginning: boolean;
  readonly group: string | undefined;
  /** reads: random read-by-offset lookups (seek). */
  readonly reads: number;
  /** warmupSeconds: e2e sends this long at the rate first, unmeasured (bench-e2e.ts). */
  readonly warmupSeconds: number;
}

export function parseBenchArgs(
  argv: readonly string[],
  environment: NodeJS.ProcessEnv,
): { settings: BenchSettings; parsed: ParsedCommand } {
  const parsed = parseCommandArgs(argv, allBenchFlags, environment);
  const [mode] = requirePositionals(parsed.positionals, ['MODE'], benchHelp.usage);
  if (!benchModes.includes(mode as BenchMode)) {
    // partitions is dispatched before this parser (bench-command.ts) but is a mode to the user.
    throw new UsageError(
      `bench mode must be one of ${[...benchModes, 'partitions'].join('|')}, got "${mode}"`,
    );
  }
  for (const name of parsed.given) {
    const modes = benchFlags[name]?.modes;
    if (modes !== undefined && !modes.includes(mode as BenchMode)) {
      throw new UsageError(`--${name} is a flag of bench ${modes.join('|')} only`);
    }
  }
  const values = parsed.values;
  const topic = values.topic as string | undefined;
  if (topic === undefined || topic === '') {
    throw new UsageError(`--topic is required; usage: ${usageOf(mode as BenchMode)}`);
  }
  const throughput = integerFlag(values, 'throughput', { min: -1, max: int32Max });
  if (throughput === 0) throw new UsageError('--throughput must be -1 (unlimited) or above 0');
  if (mode === 'e2e' && (throughput === undefined || throughput < 0)) {
    throw new UsageError('bench e2e needs --throughput R: end-to-end latency at a fixed rate');
  }
  const recordSizeBytes = integerFlag(values, 'record-size', { min: 0, max: 64 * 1024 * 1024 });
  if (mode === 'e2e' && recordSizeBytes !== undefined && recordSizeBytes < endToEndValueBytesMin) {
    throw new UsageError(
      `--record-size must be ${endToEndValueBytesMin} or more for e2e: ` +
        'the due time and the warm-up flag are in the value',
    );
  }
  const warmupSeconds = integerFlag(values, 'warmup-seconds', { min: 0, max: 3_600 });
  const acks = declared(choiceFlag(values, 'acks', acksChoices));
  const group = values.group as string | undefined;
  return {
    parsed,
    settings: {
      mode: mode as BenchMode,
      topic,
      records: declared(integerFlag(values, 'records', { min: 1, max: Number.MAX_SAFE_INTEGER })),
      recordSizeBytes: declared(recordSizeBytes),
      throughputRecordsPerSec: throughput === undefined || throughput < 0 ? undefined : throughput,
      acks: acks === 'all' ? 'all' : acks === '1' ? 1 : 0,
      batchSizeBytes: integerFlag(values, 'batch-size', { min: 1, max: int32Max }),
      lingerMs: integerFlag(values, 'linger-ms', { min: 0, max: int32Max }),
      compression: declared(choiceFlag(values, 'compression', compressionChoices)),
      partitions: integerFlag(values, 'partitions', { min: 1, max: int32Max }),
      replicationFactor: declared(
        integerFlag(values, 'replication-factor', { min: 1, max: 0x7fff }),
      ),
      producers: declared(integerFlag(values, 'producers', { min: 1, max: 64 })),
      maxInFlight: declared(integerFlag(values, 'max-in-flight', { min: 1, max: 1_000 })),
      keys: values.keys === true,
      fromBeginning: values['from-beginning'] === true,
      group,
      reads: declared(integerFlag(values, 'reads', { min: 1, max: 10_000_000 })),
      warmupSeconds: declared(warmupSeconds),
    },
  };
}
