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

/**
 * The flags of `spool bench produce|consume|e2e|seek`, parsed and checked in one place. Names
 * follow Kafka's perf tools where they have one (--num-records is --records here, --throughput is
 * records per second with -1 for unlimited, as in kafka-producer-perf-test).
 */
export const benchUsage =
  'spool bench produce|consume|e2e|seek --topic T [--records N] [--record-size B] ' +
  '[--throughput R|-1] [--acks 0|1|all] [--batch-size B] [--linger-ms MS] ' +
  '[--compression none|gzip|snappy|lz4|zstd] [--partitions P [--replication-factor R]] ' +
  '[--producers N] [--max-in-flight N] [--keys] [--from-beginning] [--group G] [--reads N] ' +
  '[--warmup-seconds S] [--json]';

export const benchModes = ['produce', 'consume', 'e2e', 'seek'] as const;
export type BenchMode = (typeof benchModes)[number];

const acksChoices = ['0', '1', 'all'] as const;
const compressionChoices = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
const int32Max = 0x7fffffff;

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
  const parsed = parseCommandArgs(
    argv,
    {
      topic: { type: 'string' },
      records: { type: 'string' },
      'record-size': { type: 'string' },
      throughput: { type: 'string' },
      acks: { type: 'string' },
      'batch-size': { type: 'string' },
      'linger-ms': { type: 'string' },
      compression: { type: 'string' },
      partitions: { type: 'string' },
      'replication-factor': { type: 'string' },
      producers: { type: 'string' },
      'max-in-flight': { type: 'string' },
      keys: { type: 'boolean', default: false },
      'from-beginning': { type: 'boolean', default: false },
      group: { type: 'string' },
      reads: { type: 'string' },
      'warmup-seconds': { type: 'string' },
    },
    environment,
  );
  const [mode] = requirePositionals(parsed.positionals, ['MODE'], benchUsage);
  if (!benchModes.includes(mode as BenchMode)) {
    throw new UsageError(`bench mode must be one of ${benchModes.join('|')}, got "${mode}"`);
  }
  const values = parsed.values;
  const topic = values.topic as string | undefined;
  if (topic === undefined || topic === '')
    throw new UsageError(`--topic is required; ${benchUsage}`);
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
  if (warmupSeconds !== undefined && mode !== 'e2e') {
    throw new UsageError('--warmup-seconds is a flag of bench e2e only');
  }
  const acks = choiceFlag(values, 'acks', acksChoices) ?? 'all';
  const group = values.group as string | undefined;
  if (group !== undefined && mode !== 'consume') {
    throw new UsageError('--group is a flag of bench consume only');
  }
  return {
    parsed,
    settings: {
      mode: mode as BenchMode,
      topic,
      records:
        integerFlag(values, 'records', { min: 1, max: Number.MAX_SAFE_INTEGER }) ?? 1_000_000,
      recordSizeBytes: recordSizeBytes ?? 100,
      throughputRecordsPerSec: throughput === undefined || throughput < 0 ? undefined : throughput,
      acks: acks === 'all' ? 'all' : acks === '1' ? 1 : 0,
      batchSizeBytes: integerFlag(values, 'batch-size', { min: 1, max: int32Max }),
      lingerMs: integerFlag(values, 'linger-ms', { min: 0, max: int32Max }),
      compression: choiceFlag(values, 'compression', compressionChoices) ?? 'none',
      partitions: integerFlag(values, 'partitions', { min: 1, max: int32Max }),
      replicationFactor: integerFlag(values, 'replication-factor', { min: 1, max: 0x7fff }) ?? 1,
      producers: integerFlag(values, 'producers', { min: 1, max: 64 }) ?? 1,
      // Kafka's max.in.flight.requests.per.connection default: one batch per round trip would
      // make the benchmark measure the round trip, not the log.
      maxInFlight: integerFlag(values, 'max-in-flight', { min: 1, max: 1_000 }) ?? 5,
      keys: values.keys === true,
      fromBeginning: values['from-beginning'] === true,
      group,
      reads: integerFlag(values, 'reads', { min: 1, max: 10_000_000 }) ?? 1_000,
      warmupSeconds: warmupSeconds ?? 0,
    },
  };
}
