import { UsageError } from './cli-errors';
import {
  integerFlag,
  parseCommandArgs,
  requirePositionals,
  type ParsedCommand,
} from './cli-options';
import { declared, type CommandHelp } from './command-help';
import { planPartitionsSteps, type PartitionsStep } from './bench-partitions-plan';

/**
 * `spool bench partitions`'s command line: one table of flags for the parser and `--help`, and
 * the checked settings the benchmark runs with (bench-partitions.ts).
 */

/** The most partitions a topic may have: the controller's validation bound (Kafka has none). */
const topicPartitionsMaxLimit = 10_000;
/** Bounds that keep a run on one machine: spool dev's own bound on storage nodes. */
const storageNodeCountMax = 16;
/** A run bigger than this would not fit one machine's descriptors or memory anyway. */
const partitionCountMax = 1_000_000;

export const benchPartitionsHelp: CommandHelp = {
  path: ['bench', 'partitions'],
  usage:
    'spool bench partitions [--create N,N] [--partitions N,N] [--nodes N] ' +
    '[--replication-factor R] [--topic-partitions N] [--idle-seconds S] [--settle-seconds S] ' +
    '[--timeout-seconds S]',
  summary:
    'Partition scale on a spool dev cluster of its own: create time, idle CPU and RSS per ' +
    'process, open descriptors, leader failover and storage node start-up.',
  details: [
    '',
    'Starts `spool dev --restart never` in a new temporary folder (removed at the end) and:',
    '  1. creates partitions up to each --partitions size, timing each --create size on the way',
    '     (create call, every partition led, every partition in sync);',
    '  2. at each --partitions size, once in sync and settled: the CPU % of one core of every',
    '     process over --idle-seconds (/proc/<pid>/stat), its RSS, and per storage node its',
    '     open descriptors (/proc/<pid>/fd) and spool_log_open_files;',
    '  3. at the largest size: kill -9 of the storage node leading the most partitions, and per',
    '     partition it led the time until the metadata names a new leader (p50, p99, max);',
    "  4. stops that cluster and starts it again with --restart always: each storage node's",
    '     start-up report (the killed one recovers from the crash), then one node stopped with',
    '     SIGTERM and one killed with SIGKILL, each timed until it runs and until it is back in',
    '     the ISR of all its partitions.',
    'Topics are of at most --topic-partitions partitions; the output says how many topics.',
    'Needs Linux (/proc). Figures from one run on a shared machine; nothing passes or fails.',
  ],
  flags: {
    create: {
      type: 'string',
      valueName: 'N,N',
      default: '1000,10000',
      description:
        'partition counts whose creation is timed (they add up to at most the largest --partitions)',
    },
    partitions: {
      type: 'string',
      valueName: 'N,N',
      default: '2000,20000',
      description: 'partition counts measured idle; failover and start-up at the largest',
    },
    nodes: {
      type: 'string',
      valueName: 'N',
      default: '3',
      description: `storage nodes of the cluster, 2 to ${storageNodeCountMax} (a failover needs another)`,
    },
    'replication-factor': {
      type: 'string',
      valueName: 'R',
      default: '3',
      description: 'replicas of every partition created, 2 to --nodes',
    },
    'topic-partitions': {
      type: 'string',
      valueName: 'N',
      default: String(topicPartitionsMaxLimit),
      description: 'the most partitions of one topic; larger counts are several topics',
    },
    'idle-seconds': {
      type: 'string',
      valueName: 'S',
      default: '10',
      description: 'the window over which idle CPU is measured',
    },
    'settle-seconds': {
      type: 'string',
      valueName: 'S',
      default: '5',
      description: 'the wait between every partition in sync and the idle window',
    },
    'timeout-seconds': {
      type: 'string',
      valueName: 'S',
      default: '600',
      description: 'how long any one step (a create, in sync, a failover, a start) may take',
    },
  },
  examples: [
    'spool bench partitions',
    'spool bench partitions --create 100 --partitions 300 --idle-seconds 5 --json',
  ],
};

export interface BenchPartitionsSettings {
  /** createSizes: partition counts whose creation is timed, ascending. */
  readonly createSizes: readonly number[];
  /** partitionSizes: partition counts measured idle, ascending; the last is the largest. */
  readonly partitionSizes: readonly number[];
  /** steps: the creations and idle measurements in order (bench-partitions-plan.ts). */
  readonly steps: readonly PartitionsStep[];
  readonly storageNodeCount: number;
  readonly replicationFactor: number;
  readonly topicPartitionsMax: number;
  readonly idleSeconds: number;
  readonly settleSeconds: number;
  readonly stepTimeoutMs: number;
  readonly json: boolean;
}

/** The checked settings, or a UsageError naming the flag and the value. */
export function parseBenchPartitionsArgs(
  argv: readonly string[],
  environment: NodeJS.ProcessEnv,
): BenchPartitionsSettings {
  const parsed = parseCommandArgs(argv, benchPartitionsHelp.flags, environment);
  requirePositionals(parsed.positionals, [], benchPartitionsHelp.usage);
  if (parsed.given.has('gateway')) {
    throw new UsageError('bench partitions starts a cluster of its own; --gateway does not apply');
  }
  const values = parsed.values;
  const storageNodeCount = declared(
    integerFlag(values, 'nodes', { min: 2, max: storageNodeCountMax }),
  );
  const createSizes = sizesFlag(values, 'create');
  const partitionSizes = sizesFlag(values, 'partitions');
  const topicPartitionsMax = declared(
    integerFlag(values, 'topic-partitions', { min: 1, max: topicPartitionsMaxLimit }),
  );
  const { steps, unplaced } = planPartitionsSteps(createSizes, partitionSizes, topicPartitionsMax);
  if (unplaced.length > 0) {
    throw new UsageError(
      `--create ${unplaced.join(',')} does not fit under the --partitions sizes ` +
        `${partitionSizes.join(',')}: the partitions created are those measured idle, so each ` +
        'timed create must fit between one size and the next (creates placed in order, smallest first)',
    );
  }
  return {
    createSizes,
    partitionSizes,
    steps,
    storageNodeCount,
    replicationFactor: declared(
      integerFlag(values, 'replication-factor', { min: 2, max: storageNodeCount }),
    ),
    topicPartitionsMax,
    idleSeconds: declared(integerFlag(values, 'idle-seconds', { min: 1, max: 3_600 })),
    settleSeconds: declared(integerFlag(values, 'settle-seconds', { min: 0, max: 3_600 })),
    stepTimeoutMs:
      declared(integerFlag(values, 'timeout-seconds', { min: 1, max: 24 * 3_600 })) * 1_000,
    json: parsed.global.json,
  };
}

/** `--flag 1000,10000`: positive integers, ascending, each at most partitionCountMax. */
function sizesFlag(values: ParsedCommand['values'], name: string): number[] {
  const raw = values[name] as string;
  const sizes = raw.split(',').map((item) => item.trim());
  const numbers = sizes.map(Number);
  const valid = sizes.every(
    (item, index) =>
      /^\d+$/.test(item) && numbers[index]! >= 1 && numbers[index]! <= partitionCountMax,
  );
  if (!valid) {
    throw new UsageError(
      `--${name} must be partition counts from 1 to ${partitionCountMax} separated by commas, ` +
        `got "${raw}"`,
    );
  }
  return numbers.sort((left, right) => left - right);
}
