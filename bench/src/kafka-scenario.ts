/**
 * Scenario 9 (`--only kafka`, and part of the full run): Kafka's own ProducerPerformance and
 * ConsumerPerformance (Apache Kafka 4.4.0's tools, unmodified, their default client settings but
 * acks) against Spool's Kafka listener and against Apache Kafka 4.4.0 on the same machine in the
 * same run, beside the SDK's figures on the same Spool cluster (`spool bench produce|consume`):
 * 100 B records, 6 partitions,
 *
 *   RF1 acks=1:   one storage node, and one Kafka broker
 *   RF3 acks=all: three storage nodes, and three Kafka brokers
 *
 * Each Spool row carries the CPU seconds per GB of the storage nodes and the gateway, so the Kafka
 * path's cost (the listener) reads against the gRPC path's (the SDK) in the same cluster; Kafka's
 * rows carry its brokers' CPU seconds per GB in the storage column. The comparisons (Kafka's tools
 * on Spool vs on Kafka, Spool's CPU per GB on the Kafka path vs the gRPC path) are in the report.
 * Every row's CPU is charged over the interval its client measured its records in (measureRun's
 * cpuWindow `records`): a JVM's start and a consumer group's join took 5-10 s on a loaded
 * machine against a Node.js command's second, and the idle cluster's CPU over them made up most
 * of the Kafka path's consume cost at the counts `--quick` runs.
 */
import { kafkaBootstrapAddress, log, startCluster, type BenchCluster } from './cluster';
import { createTopic, runKafkaToolTimed, startKafkaCluster, type TimedOutput } from './kafka-tools';
import type { BenchOptions } from './options';
import {
  measure,
  measureRun,
  type BenchFigures,
  type ClusterMemory,
  type Result,
  type ScenarioResult,
} from './scenarios';

const scenario = 9;
const partitions = 6;
const recordSizeBytes = 100;
/** ConsumerPerformance gives up when no record comes for this long. */
const consumerIdleTimeoutMs = 30_000;

/** One configuration: the cluster size, replication factor and acks. */
interface KafkaSetting {
  readonly name: string;
  readonly nodes: number;
  readonly replicationFactor: number;
  readonly acks: '1' | 'all';
}

const settings: readonly KafkaSetting[] = [
  { name: 'RF1 acks=1', nodes: 1, replicationFactor: 1, acks: '1' },
  { name: 'RF3 acks=all', nodes: 3, replicationFactor: 3, acks: 'all' },
];

/** The figures set side by side for one setting (indexes into the results). */
export interface KafkaComparison {
  readonly setting: string;
  readonly sdkProduce: ScenarioResult;
  readonly spoolProduce: ScenarioResult;
  readonly kafkaProduce: ScenarioResult;
  readonly sdkConsume: ScenarioResult;
  readonly spoolConsume: ScenarioResult;
  readonly kafkaConsume: ScenarioResult;
}

/**
 * ProducerPerformance's summary line: "N records sent, R records/sec (M MB/sec), A ms avg
 * latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th." The tool
 * prints it as it ends, its rate being N over the time from its first send to then: the
 * measured interval is that long and ends when the line arrived.
 */
export function producerPerformanceFigures(output: TimedOutput): BenchFigures {
  const pattern =
    /^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th\.$/;
  const line = output.lines.find(({ text }) => pattern.test(text));
  if (line === undefined) {
    throw new Error(`no ProducerPerformance summary in:\n${output.stdout.slice(-2_000)}`);
  }
  const [records, rate, mbPerSec, avgMs, maxMs, p50Ms, p95Ms, p99Ms, p999Ms] = pattern
    .exec(line.text)!
    .slice(1)
    .map(Number) as [number, number, number, number, number, number, number, number, number];
  return {
    mode: 'produce',
    bytes: records * recordSizeBytes,
    recordsPerSec: Math.round(rate),
    mbPerSec,
    avgMs,
    p50Ms,
    p95Ms,
    p99Ms,
    p999Ms,
    maxMs,
    startedAtEpochMs: Math.round(line.atEpochMs - (records / rate) * 1000),
    endedAtEpochMs: line.atEpochMs,
  };
}

/** ConsumerPerformance's times: "yyyy-MM-dd HH:mm:ss:SSS" in the JVM's (and so this) time zone. */
function consumerPerformanceTime(text: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}):(\d{3})$/.exec(text);
  if (match === null) throw new Error(`ConsumerPerformance printed the time "${text}"`);
  const [year, month, day, hours, minutes, seconds, milliseconds] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return new Date(year, month - 1, day, hours, minutes, seconds, milliseconds).getTime();
}

/**
 * ConsumerPerformance's line: "start.time, end.time, data.consumed.in.MB, MB.sec,
 * data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
 * fetch.nMsg.sec". The rates are the fetch rates (the group's join excluded), as the tool's
 * fetch.* columns give them, and so is the measured interval: from start.time plus the join's
 * rebalance.time.ms to end.time. It measures no latency.
 */
export function consumerPerformanceFigures(stdout: string): BenchFigures & { rebalanceMs: number } {
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((candidate) => /^\d{4}-/.test(candidate));
  if (line === undefined) throw new Error(`no ConsumerPerformance figures in:\n${stdout}`);
  const fields = line.split(', ');
  const records = Number(fields[4]);
  const rebalanceMs = Number(fields[6]);
  return {
    mode: 'consume',
    bytes: records * recordSizeBytes,
    recordsPerSec: Math.round(Number(fields[9])),
    mbPerSec: Math.round(Number(fields[8]) * 10) / 10,
    avgMs: null,
    p50Ms: null,
    p95Ms: null,
    p99Ms: null,
    p999Ms: null,
    maxMs: null,
    rebalanceMs,
    startedAtEpochMs: consumerPerformanceTime(fields[0]!) + rebalanceMs,
    endedAtEpochMs: consumerPerformanceTime(fields[1]!),
  };
}

function producerPerformance(bootstrap: string, topic: string, records: number, acks: string) {
  return async (): Promise<BenchFigures> =>
    producerPerformanceFigures(
      await runKafkaToolTimed('producerPerformance', [
        '--topic',
        topic,
        '--num-records',
        String(records),
        '--record-size',
        String(recordSizeBytes),
        '--throughput',
        '-1',
        // One flag, several properties (a second --command-property replaces the first).
        '--command-property',
        `bootstrap.servers=${bootstrap}`,
        `acks=${acks}`,
      ]),
    );
}

function consumerPerformance(bootstrap: string, topic: string, records: number) {
  return async (): Promise<BenchFigures> => {
    const figures = consumerPerformanceFigures(
      (
        await runKafkaToolTimed('consumerPerformance', [
          '--bootstrap-server',
          bootstrap,
          '--topic',
          topic,
          '--num-records',
          String(records),
          '--timeout',
          String(consumerIdleTimeoutMs),
        ])
      ).stdout,
    );
    if (figures.bytes !== records * recordSizeBytes) {
      throw new Error(`ConsumerPerformance read ${figures.bytes / recordSizeBytes} of ${records}`);
    }
    return figures;
  };
}

/** The SDK and Kafka's tools on one Spool cluster of `setting.nodes` storage nodes. */
async function onSpool(
  setting: KafkaSetting,
  records: number,
  memory: ClusterMemory[],
): Promise<ScenarioResult[]> {
  const cluster: BenchCluster = await startCluster(setting.nodes);
  const rf = String(setting.replicationFactor);
  try {
    const sdkProduce = await measure(
      cluster,
      scenario,
      `SDK produce ${setting.name} 100 B, 6 partitions`,
      [
        'produce',
        '--topic',
        'kafka-sdk',
        '--records',
        String(records),
        '--partitions',
        String(partitions),
        '--replication-factor',
        rf,
        '--acks',
        setting.acks,
        '--record-size',
        String(recordSizeBytes),
      ],
      'records',
    );
    const sdkConsume = await measure(
      cluster,
      scenario,
      `SDK consume ${setting.name}`,
      ['consume', '--topic', 'kafka-sdk', '--records', String(records), '--from-beginning'],
      'records',
    );
    await createTopic(kafkaBootstrapAddress, 'kafka-tools', partitions, setting.replicationFactor);
    const spoolProduce = await measureRun(
      cluster,
      scenario,
      `ProducerPerformance on Spool ${setting.name}`,
      producerPerformance(kafkaBootstrapAddress, 'kafka-tools', records, setting.acks),
      'records',
    );
    const spoolConsume = await measureRun(
      cluster,
      scenario,
      `ConsumerPerformance on Spool ${setting.name}`,
      consumerPerformance(kafkaBootstrapAddress, 'kafka-tools', records),
      'records',
    );
    return [sdkProduce, sdkConsume, spoolProduce, spoolConsume];
  } finally {
    memory.push({
      cluster: `${setting.nodes} storage node(s) (scenario 9)`,
      peakRssMb: cluster.peakRssMb(),
    });
    await cluster.stop();
  }
}

/** Kafka's tools on Apache Kafka with `setting.nodes` brokers. */
async function onKafka(
  setting: KafkaSetting,
  records: number,
  memory: ClusterMemory[],
): Promise<ScenarioResult[]> {
  const kafka = await startKafkaCluster(setting.nodes);
  try {
    await createTopic(kafka.bootstrap, 'kafka-tools', partitions, setting.replicationFactor);
    const produce = await measureRun(
      kafka,
      scenario,
      `ProducerPerformance on Apache Kafka 4.4.0 ${setting.name}`,
      producerPerformance(kafka.bootstrap, 'kafka-tools', records, setting.acks),
      'records',
    );
    const consume = await measureRun(
      kafka,
      scenario,
      `ConsumerPerformance on Apache Kafka 4.4.0 ${setting.name}`,
      consumerPerformance(kafka.bootstrap, 'kafka-tools', records),
      'records',
    );
    return [produce, consume];
  } finally {
    memory.push({
      cluster: `Apache Kafka, ${setting.nodes} broker(s)`,
      peakRssMb: kafka.peakRssMb(),
    });
    await kafka.stop();
  }
}

export async function kafkaScenario(
  options: BenchOptions,
  results: Result[],
  memory: ClusterMemory[],
): Promise<KafkaComparison[]> {
  const records = options.counts.kafka;
  if (options.tls) {
    log("scenario 9 runs its clusters in plaintext: Kafka's tools are not given TLS settings");
  }
  const comparisons: KafkaComparison[] = [];
  for (const setting of settings) {
    const [sdkProduce, sdkConsume, spoolProduce, spoolConsume] = await onSpool(
      setting,
      records,
      memory,
    );
    const [kafkaProduce, kafkaConsume] = await onKafka(setting, records, memory);
    results.push(
      sdkProduce!,
      spoolProduce!,
      kafkaProduce!,
      sdkConsume!,
      spoolConsume!,
      kafkaConsume!,
    );
    comparisons.push({
      setting: setting.name,
      sdkProduce: sdkProduce!,
      spoolProduce: spoolProduce!,
      kafkaProduce: kafkaProduce!,
      sdkConsume: sdkConsume!,
      spoolConsume: spoolConsume!,
      kafkaConsume: kafkaConsume!,
    });
  }
  return comparisons;
}

/** Spool's CPU seconds per GB (storage nodes and gateway together) of one row. */
function spoolCpuPerGb(result: ScenarioResult): number {
  const seconds = (result.storageCpuSecondsPerGb ?? 0) + (result.gatewayCpuSecondsPerGb ?? 0);
  return Math.round(seconds * 10) / 10;
}

/** The report's lines: Kafka's tools on Spool vs on Kafka, and the Kafka path's CPU per GB. */
export function kafkaMarkdown(comparisons: readonly KafkaComparison[]): string[] {
  const ratio = (numerator: number, denominator: number): string =>
    denominator > 0 ? `${(numerator / denominator).toFixed(2)}x` : '—';
  const lines = [
    '',
    "## Scenario 9: Kafka's tools on Spool's Kafka listener and on Apache Kafka 4.4.0",
    '',
    "Throughput: Kafka's tools against Spool divided by the same tools against Apache Kafka (target at least 1x). " +
      "CPU: Spool's storage nodes and gateway, CPU seconds per GB, Kafka's tools (the Kafka path) divided by the SDK (the gRPC path) (target at most 1.3x), " +
      "each over the interval its client measured its records in (not the JVM's start or the group's join).",
    '',
    '| setting | produce records/s Spool / Kafka | consume records/s Spool / Kafka | produce CPU s/GB Kafka path / gRPC path | consume CPU s/GB Kafka path / gRPC path |',
    '|---|---|---|---|---|',
  ];
  for (const comparison of comparisons) {
    lines.push(
      `| ${comparison.setting} | ` +
        `${comparison.spoolProduce.recordsPerSec} / ${comparison.kafkaProduce.recordsPerSec} = ` +
        `${ratio(comparison.spoolProduce.recordsPerSec, comparison.kafkaProduce.recordsPerSec)} | ` +
        `${comparison.spoolConsume.recordsPerSec} / ${comparison.kafkaConsume.recordsPerSec} = ` +
        `${ratio(comparison.spoolConsume.recordsPerSec, comparison.kafkaConsume.recordsPerSec)} | ` +
        `${spoolCpuPerGb(comparison.spoolProduce)} / ${spoolCpuPerGb(comparison.sdkProduce)} = ` +
        `${ratio(spoolCpuPerGb(comparison.spoolProduce), spoolCpuPerGb(comparison.sdkProduce))} | ` +
        `${spoolCpuPerGb(comparison.spoolConsume)} / ${spoolCpuPerGb(comparison.sdkConsume)} = ` +
        `${ratio(spoolCpuPerGb(comparison.spoolConsume), spoolCpuPerGb(comparison.sdkConsume))} |`,
    );
  }
  return lines;
}
