/**
 * The scenarios of issue 11, grouped by the cluster they run on:
 *
 *   1. segment-store append vs raw sequential write of the same bytes (npx nx run segment-store:bench)
 *   2. 1 storage node, replication factor 1, acks=1, 100-byte records (16 KiB and 1 MiB batches)
 *   3. 3 storage nodes, replication factor 3, acks=all, 100-byte records
 *   4. the same with 1 KiB records, and with 1 KiB records and zstd
 *   5. consume N records from the beginning (10 million; fewer with --quick)
 *   6. end-to-end latency at half of the maximum throughput measured in 3, on a cluster of its own
 *   7. read-by-offset latency at a small and a large log
 *   partitions: `spool bench partitions` (issue 20), only when named: `--only partitions`, as it
 *      grows its own cluster to 20,000 partitions (--quick: 300) for many minutes
 *   9. Kafka's own ProducerPerformance and ConsumerPerformance on Spool's Kafka listener and on
 *      Apache Kafka 4.4.0, beside the SDK (kafka-scenario.ts; `--only kafka` alone)
 *   records (8): the record-level API beside the raw path (issue 27, record-scenario.ts), only
 *      when named: `--only records`
 *
 * Besides each scenario's figures: the CPU seconds every service process used during it, hence
 * CPU seconds per GB on the storage node and gateway.
 */
import {
  lastJsonLine,
  log,
  run,
  runSpool,
  startCluster,
  workspaceRoot,
  type BenchCluster,
} from './cluster';
import { isWanted, type BenchOptions } from './options';

const gigabyte = 1024 ** 3;

/** What `spool bench produce|consume|e2e|seek --json` prints (apps/cli/src/bench-report.ts). */
export interface BenchFigures {
  readonly mode: string;
  readonly bytes: number;
  readonly recordsPerSec: number;
  readonly mbPerSec: number;
  /** Latencies; null where the load generator measures none (Kafka's ConsumerPerformance). */
  readonly avgMs: number | null;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
  readonly p999Ms: number | null;
  readonly maxMs: number | null;
  /**
   * The interval the load generator measured its records over, in milliseconds since the epoch
   * (`spool bench` prints it; Kafka's tools' own timings give it in kafka-scenario.ts): from its
   * first record to its last, without its process's start, connection or group join.
   */
  readonly startedAtEpochMs?: number;
  readonly endedAtEpochMs?: number;
}

/**
 * Which interval a row's CPU seconds cover: the whole load generator's run (`run`: its start,
 * connection and group join included, as every scenario but 9 measures), or only the interval it
 * measured its records over (`records`: scenario 9, which sets clients beside each other whose
 * start-up differs by seconds, a JVM's and a group's join against a Node.js command's).
 */
export type CpuWindow = 'run' | 'records';

/** One measured scenario: its figures and what the services' processes spent on it. */
export interface ScenarioResult extends BenchFigures {
  readonly scenario: number;
  readonly label: string;
  readonly cpuSeconds: Record<string, number>;
  readonly cpuWindow: CpuWindow;
  /** How long the interval the CPU seconds cover lasted, and the load generator's whole run. */
  readonly cpuWindowSeconds: number;
  readonly runSeconds: number;
  /** With cpuWindow `records`: each process's CPU seconds over the whole run, for comparison. */
  readonly runCpuSeconds?: Record<string, number>;
  readonly storageCpuSecondsPerGb: number | null;
  readonly gatewayCpuSecondsPerGb: number | null;
}

/** Scenario 1: the segment store's own benchmark, outside any cluster. */
export interface SegmentStoreResult {
  readonly scenario: 1;
  readonly label: string;
  readonly segmentStore: unknown;
}

export type Result = ScenarioResult | SegmentStoreResult;

export interface ClusterMemory {
  readonly cluster: string;
  readonly peakRssMb: Record<string, number>;
}

/** Runs one bench command; returns its result with the CPU each service used meanwhile. */
export function measure(
  cluster: BenchCluster,
  scenario: number,
  label: string,
  args: readonly string[],
  cpuWindow: CpuWindow = 'run',
): Promise<ScenarioResult> {
  return measureRun(
    cluster,
    scenario,
    label,
    async () => lastJsonLine<BenchFigures>(await runSpool(['bench', ...args])),
    cpuWindow,
  );
}

/** How often measureRun reads the processes' CPU while a load runs with cpuWindow `records`. */
const cpuSampleIntervalMs = 50;

interface CpuSample {
  readonly atEpochMs: number;
  readonly cpuSeconds: Record<string, number>;
}

/**
 * Each process's CPU seconds at `atEpochMs`, interpolated between the samples around it (linearly:
 * the error is at most the CPU of one sample interval at each end of the window).
 */
function cpuSecondsAt(samples: readonly CpuSample[], atEpochMs: number): Record<string, number> {
  const first = samples[0]!;
  const last = samples.at(-1)!;
  if (
    atEpochMs < first.atEpochMs - cpuSampleIntervalMs ||
    atEpochMs > last.atEpochMs + cpuSampleIntervalMs
  ) {
    throw new Error(
      `the load's measured interval reaches ${new Date(atEpochMs).toISOString()}, outside its run ` +
        `(${new Date(first.atEpochMs).toISOString()} to ${new Date(last.atEpochMs).toISOString()})`,
    );
  }
  const after = samples.findIndex((sample) => sample.atEpochMs >= atEpochMs);
  if (after <= 0) return after === 0 ? first.cpuSeconds : last.cpuSeconds;
  const [left, right] = [samples[after - 1]!, samples[after]!];
  const fraction = (atEpochMs - left.atEpochMs) / (right.atEpochMs - left.atEpochMs);
  return Object.fromEntries(
    Object.keys(right.cpuSeconds).map((name) => [
      name,
      left.cpuSeconds[name]! + (right.cpuSeconds[name]! - left.cpuSeconds[name]!) * fraction,
    ]),
  );
}

/**
 * Runs `load` (a bench command, or another client's load generator) and returns its figures with
 * the CPU each of `cluster`'s processes used meanwhile: storage CPU per GB sums the storage nodes
 * (or Apache Kafka's brokers, `kafka-broker-N`), gateway CPU per GB is the gateway's (null where
 * there is none). With cpuWindow `records` the processes' CPU is sampled every 50 ms during the
 * run and charged over the interval the load measured its records in only (its figures must give
 * startedAtEpochMs and endedAtEpochMs); with `run` (the default) over the whole run.
 */
export async function measureRun(
  cluster: Pick<BenchCluster, 'cpuSeconds'>,
  scenario: number,
  label: string,
  load: () => Promise<BenchFigures>,
  cpuWindow: CpuWindow = 'run',
): Promise<ScenarioResult> {
  log(`scenario ${scenario}: ${label}`);
  const samples: CpuSample[] = [];
  const sample = (): void => {
    samples.push({ atEpochMs: Date.now(), cpuSeconds: cluster.cpuSeconds() });
  };
  sample();
  const sampler = cpuWindow === 'records' ? setInterval(sample, cpuSampleIntervalMs) : undefined;
  let result: BenchFigures;
  try {
    result = await load();
  } finally {
    clearInterval(sampler);
  }
  sample();
  const runStart = samples[0]!;
  const runEnd = samples.at(-1)!;
  let [before, after] = [runStart, runEnd];
  if (cpuWindow === 'records') {
    const { startedAtEpochMs, endedAtEpochMs } = result;
    if (startedAtEpochMs === undefined || endedAtEpochMs === undefined) {
      throw new Error(`${label}: the load gave no measured interval to charge the CPU over`);
    }
    before = { atEpochMs: startedAtEpochMs, cpuSeconds: cpuSecondsAt(samples, startedAtEpochMs) };
    after = { atEpochMs: endedAtEpochMs, cpuSeconds: cpuSecondsAt(samples, endedAtEpochMs) };
  }
  const difference = (from: CpuSample, to: CpuSample): Record<string, number> =>
    Object.fromEntries(
      Object.keys(to.cpuSeconds).map((name) => [
        name,
        Math.round((to.cpuSeconds[name]! - from.cpuSeconds[name]!) * 100) / 100,
      ]),
    );
  const cpuSeconds = difference(before, after);
  const storageCpuSeconds = Object.entries(cpuSeconds)
    .filter(([name]) => name.startsWith('storage-node') || name.startsWith('kafka-broker'))
    .reduce((sum, [, seconds]) => sum + seconds, 0);
  const gigabytes = result.bytes / gigabyte;
  // Per GB only where the bytes are the work (produce, consume); a seek reads one record.
  const perGb = (seconds: number | undefined): number | null =>
    (result.mode === 'produce' || result.mode === 'consume') && seconds !== undefined
      ? Math.round((seconds / gigabytes) * 10) / 10
      : null;
  const seconds = (from: CpuSample, to: CpuSample): number =>
    Math.round(to.atEpochMs - from.atEpochMs) / 1000;
  return {
    scenario,
    label,
    ...result,
    cpuSeconds,
    cpuWindow,
    cpuWindowSeconds: seconds(before, after),
    runSeconds: seconds(runStart, runEnd),
    ...(cpuWindow === 'records' ? { runCpuSeconds: difference(runStart, runEnd) } : {}),
    storageCpuSecondsPerGb: perGb(storageCpuSeconds),
    gatewayCpuSecondsPerGb: perGb(cpuSeconds.gateway),
  };
}

const produce = (topic: string, records: number, extra: readonly string[]): string[] => [
  'produce',
  '--topic',
  topic,
  '--records',
  String(records),
  ...extra,
];

export async function scenarioOne(options: BenchOptions): Promise<SegmentStoreResult> {
  log('scenario 1: segment-store append vs raw sequential write');
  const args = ['nx', 'run', 'segment-store:bench', '--output-style=static', '--', '--json'];
  if (options.quick) args.push('--quick');
  else args.push('--large-log-gib', '1');
  const result = lastJsonLine(await run('npx', args, { cwd: workspaceRoot }));
  return { scenario: 1, label: 'segment-store append vs raw write', segmentStore: result };
}

/** Scenarios 2, 5 and 7 on one storage node. */
export async function singleNodeGroup(
  options: BenchOptions,
  results: Result[],
  memory: ClusterMemory[],
): Promise<void> {
  const { counts } = options;
  const cluster = await startCluster(1, { tls: options.tls });
  try {
    if (isWanted(options, 2)) {
      // Broker cost per GB at two batch sizes: it must not grow with the records per batch.
      for (const [batchLabel, batchBytes] of [
        ['16 KiB', 16_384],
        ['1 MiB', 1_048_576],
      ] as const) {
        const topic = `s2-${batchBytes}`;
        results.push(
          await measure(
            cluster,
            2,
            `RF1 acks=1 100 B, ${batchLabel} batches`,
            produce(topic, counts.s2, [
              '--partitions',
              '1',
              '--replication-factor',
              '1',
              '--acks',
              '1',
              '--record-size',
              '100',
              '--batch-size',
              String(batchBytes),
              '--linger-ms',
              '5',
            ]),
          ),
        );
      }
    }
    if (isWanted(options, 5) || isWanted(options, 7)) {
      log(`scenarios 5 and 7: writing ${counts.s5} records to read back`);
      await runSpool([
        'bench',
        ...produce('s5', counts.s5, [
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--acks',
          '1',
          '--batch-size',
          '1048576',
        ]),
      ]);
    }
    if (isWanted(options, 5)) {
      results.push(
        await measure(cluster, 5, `consume ${counts.s5} records from the beginning`, [
          'consume',
          '--topic',
          's5',
          '--records',
          String(counts.s5),
          '--from-beginning',
        ]),
      );
    }
    if (isWanted(options, 7)) {
      await runSpool([
        'bench',
        ...produce('s7-small', counts.s7Small, [
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--acks',
          '1',
        ]),
      ]);
      for (const [label, topic, records] of [
        ['small', 's7-small', counts.s7Small],
        ['large', 's5', counts.s5],
      ] as const) {
        results.push(
          await measure(cluster, 7, `read by offset, ${label} log (${records} records)`, [
            'seek',
            '--topic',
            topic,
            '--reads',
            String(counts.reads),
          ]),
        );
      }
    }
  } finally {
    memory.push({ cluster: '1 storage node', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

/**
 * Scenarios 3 and 4 on three storage nodes; returns scenario 3's result, whose throughput sets
 * scenario 6's rate (undefined when neither 3 nor 6 is wanted).
 */
export async function threeNodeGroup(
  options: BenchOptions,
  results: Result[],
  memory: ClusterMemory[],
): Promise<ScenarioResult | undefined> {
  const { counts } = options;
  const cluster = await startCluster(3, { tls: options.tls });
  try {
    const replicated = ['--partitions', '1', '--replication-factor', '3', '--acks', 'all'];
    let maximum: ScenarioResult | undefined;
    if (isWanted(options, 3) || isWanted(options, 6)) {
      maximum = await measure(
        cluster,
        3,
        'RF3 acks=all 100 B',
        produce('s3', counts.s3, [
          ...replicated,
          '--record-size',
          '100',
          '--batch-size',
          '1048576',
        ]),
      );
      if (isWanted(options, 3)) results.push(maximum);
    }
    if (isWanted(options, 4)) {
      for (const [label, extra] of [
        ['1 KiB', []],
        ['1 KiB zstd', ['--compression', 'zstd']],
      ] as const) {
        results.push(
          await measure(
            cluster,
            4,
            `RF3 acks=all ${label}`,
            produce(`s4-${extra.length}`, counts.s4, [
              ...replicated,
              '--record-size',
              '1024',
              '--batch-size',
              '1048576',
              ...extra,
            ]),
          ),
        );
      }
    }
    return maximum;
  } finally {
    memory.push({ cluster: '3 storage nodes', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

/**
 * Scenario 6 on a cluster of its own: its latency is the steady state of one workload, not the
 * tail of scenarios 3 and 4 (their topics on every fetch, their data still being written out).
 */
export async function endToEndGroup(
  options: BenchOptions,
  maximum: ScenarioResult,
  results: Result[],
  memory: ClusterMemory[],
): Promise<void> {
  const { counts } = options;
  const cluster = await startCluster(3, { tls: options.tls });
  try {
    const rate = Math.max(1, Math.floor(maximum.recordsPerSec / 2));
    results.push(
      await measure(cluster, 6, `end to end at ${rate} records/s (half of 3)`, [
        'e2e',
        '--topic',
        's6',
        '--partitions',
        '1',
        '--replication-factor',
        '3',
        '--acks',
        'all',
        '--throughput',
        String(rate),
        '--records',
        String(rate * counts.s6Seconds),
        // As the OpenMessaging benchmark: a warm-up at the same rate, consumed and not measured,
        // so the figures are the steady state and not the first second of a new topic.
        '--warmup-seconds',
        String(counts.s6WarmupSeconds),
        '--linger-ms',
        '1',
        // The producer of scenario 3, whose maximum sets the rate: with 16 KiB batches and 5
        // requests in flight, one partition cannot carry that rate through acks=all round
        // trips at all, and the run measured the producer's queue. The size is a bound, not a
        // wait: a batch leaves after linger.ms, as large as the records that came meanwhile.
        '--batch-size',
        '1048576',
      ]),
    );
  } finally {
    memory.push({ cluster: '3 storage nodes (scenario 6)', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

/**
 * `spool bench partitions` with its own cluster; the full sizes are the command's defaults
 * (creates of 1,000 and 10,000, idle at 2,000 and 20,000, RF3 on 3 nodes).
 */
export async function partitionsScenario(options: BenchOptions): Promise<PartitionsResult> {
  log('scenario partitions: spool bench partitions (its own spool dev cluster)');
  const sizes = options.quick
    ? ['--create', '100', '--partitions', '300', '--idle-seconds', '5', '--settle-seconds', '2']
    : [];
  // Exit code 1 still prints the figures measured before the step that failed, and names it.
  const stdout = await runSpool(['bench', 'partitions', ...sizes], {
    gateway: false,
    failureExitCodeOk: true,
  });
  return lastJsonLine<PartitionsResult>(stdout);
}

/** What `spool bench partitions --json` prints (apps/cli/src/bench-partitions-report.ts). */
export interface PartitionsResult {
  readonly settings: { readonly replicationFactor: number; readonly nodes: number };
  readonly create: readonly {
    readonly partitions: number;
    readonly topics: number;
    readonly existingPartitions: number;
    readonly createMs: number;
    readonly leadersMs: number;
    readonly inSyncMs: number;
  }[];
  readonly idle: readonly {
    readonly partitions: number;
    readonly windowSeconds: number;
    readonly clusterCpuPercent: number;
    readonly processes: readonly { name: string; cpuPercent: number; rssMb: number }[];
    readonly supervisor: { name: string; cpuPercent: number; rssMb: number };
    readonly storageNodes: readonly {
      name: string;
      openDescriptors: number;
      logOpenFiles: number;
      logOpenFilesMax: number;
    }[];
  }[];
  readonly failover: {
    readonly partitions: number;
    readonly brokerId: number;
    readonly partitionsLed: number;
    readonly partitionsMoved: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly maxMs: number;
  } | null;
  readonly startup: {
    readonly partitions: number;
    readonly clusterInSyncMs: number;
    readonly nodes: readonly {
      brokerId: number;
      durationMs: number;
      cleanShutdown: boolean;
      logsRecovered: number;
    }[];
    readonly afterCleanStop: PartitionsRestart | null;
    readonly afterKill: PartitionsRestart | null;
  } | null;
  readonly errors: readonly string[];
}

interface PartitionsRestart {
  readonly brokerId: number;
  readonly signal: string;
  readonly startedMs: number;
  readonly inSyncMs: number;
}
