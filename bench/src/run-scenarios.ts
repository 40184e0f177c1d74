/**
 * `npm run bench [-- --quick] [-- --scale F] [-- --only 2,3]`: Spool's standard benchmark
 * scenarios (issue 11, listed in scenarios.ts), each group on a fresh `spool dev` cluster, with
 * figures written to bench/results/<date>.json, a markdown table (<date>.md) and an SVG chart
 * (<date>.svg). Benchmarks print figures; nothing here passes or fails on them.
 *
 * Besides each scenario's figures: the CPU seconds every service process used during it (from
 * /proc/<pid>/stat), hence CPU seconds per GB on the storage node and gateway, and the peak RSS
 * of every service process (VmHWM in /proc/<pid>/status) per cluster.
 *
 * Needs a build first (`npx nx run-many -t build`, which builds this too). Linux only (/proc).
 */
import { readFileSync } from 'node:fs';
import { log } from './cluster';
import { kafkaScenario, type KafkaComparison } from './kafka-scenario';
import {
  isKafkaWanted,
  isPartitionsWanted,
  isRecordsWanted,
  isWanted,
  parseOptions,
  usage,
  type BenchOptions,
} from './options';
import { recordsScenario } from './record-scenario';
import { writeReport } from './report';
import {
  endToEndGroup,
  partitionsScenario,
  scenarioOne,
  singleNodeGroup,
  threeNodeGroup,
  type ClusterMemory,
  type Result,
} from './scenarios';

async function runScenarios(options: BenchOptions): Promise<void> {
  const startedAt = new Date().toISOString();
  const results: Result[] = [];
  const memory: ClusterMemory[] = [];
  const wanted = (scenario: number): boolean => isWanted(options, scenario);
  if (wanted(1)) results.push(await scenarioOne(options));
  if ([2, 5, 7].some(wanted)) await singleNodeGroup(options, results, memory);
  if ([3, 4, 6].some(wanted)) {
    const maximum = await threeNodeGroup(options, results, memory);
    if (wanted(6) && maximum !== undefined) {
      await endToEndGroup(options, maximum, results, memory);
    }
  }
  let kafka: KafkaComparison[] = [];
  if (isKafkaWanted(options)) {
    // Scenario 9 needs Java and Kafka's jars: without them the other scenarios' figures are
    // still written, and the run exits 1 naming what failed.
    try {
      kafka = await kafkaScenario(options, results, memory);
    } catch (error) {
      log(`scenario 9 failed: ${(error as Error).message}`);
      process.exitCode = 1;
    }
  }
  if (isRecordsWanted(options)) await recordsScenario(options, results);
  const partitions = isPartitionsWanted(options) ? await partitionsScenario(options) : undefined;
  const cpus = readFileSync('/proc/cpuinfo', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('processor')).length;
  writeReport({
    startedAt,
    quick: options.quick,
    machine:
      `${cpus} CPUs, node ${process.version}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} at the end` +
      (options.tls ? ', TLS and mTLS on every port (--tls: spool dev --secure)' : ', plaintext'),
    results,
    memory,
    kafka,
    ...(partitions === undefined ? {} : { partitions }),
  });
}

function main(): void {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  if (options.help) {
    process.stdout.write(usage);
    return;
  }
  runScenarios(options).catch((error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}

main();
