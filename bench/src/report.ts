/**
 * The benchmark's report: the JSON of every figure, a markdown table (also printed on stdout) and
 * an SVG chart, written to bench/results/<date>.{json,md,svg}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { log, workspaceRoot } from './cluster';
import { kafkaMarkdown, type KafkaComparison } from './kafka-scenario';
import type {
  ClusterMemory,
  PartitionsResult,
  Result,
  ScenarioResult,
  SegmentStoreResult,
} from './scenarios';

const resultsDirectory = path.join(workspaceRoot, 'bench', 'results');

export interface BenchReport {
  readonly startedAt: string;
  readonly quick: boolean;
  readonly machine: string;
  readonly results: readonly Result[];
  readonly memory: readonly ClusterMemory[];
  /** Scenario 9's comparisons, one per setting; empty when it did not run. */
  readonly kafka: readonly KafkaComparison[];
  readonly partitions?: PartitionsResult;
}

function partitionsMarkdown(result: PartitionsResult): string[] {
  const seconds = (milliseconds: number): string => (milliseconds / 1000).toFixed(2);
  const lines = [
    '',
    `## Partition scale (RF${result.settings.replicationFactor} on ${result.settings.nodes} storage nodes)`,
    '',
    '| create partitions | topics | on top of | call s | all led s | all in sync s |',
    '|---|---|---|---|---|---|',
    ...result.create.map(
      (create) =>
        `| ${create.partitions} | ${create.topics} | ${create.existingPartitions} | ` +
        `${seconds(create.createMs)} | ${seconds(create.leadersMs)} | ${seconds(create.inSyncMs)} |`,
    ),
  ];
  for (const idle of result.idle) {
    lines.push(
      '',
      `Idle at ${idle.partitions} partitions, CPU over ${idle.windowSeconds} s: the cluster ` +
        `${idle.clusterCpuPercent} % of one core.`,
      '',
      '| process | CPU % | RSS MB | open fds | log files open / max |',
      '|---|---|---|---|---|',
    );
    const files = new Map(idle.storageNodes.map((node) => [node.name, node]));
    for (const process of [...idle.processes, idle.supervisor]) {
      const node = files.get(process.name);
      lines.push(
        `| ${process.name} | ${process.cpuPercent} | ${process.rssMb} | ` +
          `${node?.openDescriptors ?? ''} | ${node === undefined ? '' : `${node.logOpenFiles} / ${node.logOpenFilesMax}`} |`,
      );
    }
  }
  const { failover, startup } = result;
  if (failover !== null) {
    lines.push(
      '',
      `Failover at ${failover.partitions} partitions: kill -9 of storage-node-${failover.brokerId}, ` +
        `leader of ${failover.partitionsLed}; ${failover.partitionsMoved} with a new leader, ` +
        `p50 ${seconds(failover.p50Ms)} s, p99 ${seconds(failover.p99Ms)} s, max ${seconds(failover.maxMs)} s.`,
    );
  }
  if (startup !== null) {
    lines.push(
      '',
      `Start-up at ${startup.partitions} partitions: the whole cluster in sync after ` +
        `${seconds(startup.clusterInSyncMs)} s; logs opened in ` +
        startup.nodes
          .map(
            (node) =>
              `${seconds(node.durationMs)} s (storage-node-${node.brokerId}, ` +
              `${node.cleanShutdown ? 'clean' : `crash, ${node.logsRecovered} recovered`})`,
          )
          .join(', ') +
        '.',
    );
    for (const restart of [startup.afterCleanStop, startup.afterKill]) {
      if (restart === null) continue;
      lines.push(
        '',
        `storage-node-${restart.brokerId} after ${restart.signal}: serving ${seconds(restart.startedMs)} s ` +
          `after its start, in sync after ${seconds(restart.inSyncMs)} s.`,
      );
    }
  }
  for (const error of result.errors) lines.push('', `Error: ${error}`);
  return lines;
}

export function markdown(report: BenchReport): string {
  const lines = [
    `# Spool benchmark ${report.startedAt}${report.quick ? ' (quick)' : ''}`,
    '',
    `Machine: ${report.machine}. Figures from one run on a shared machine; compare runs, not absolutes.`,
    '',
    '| # | scenario | records/s | MB/s | avg ms | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | storage CPU s/GB | gateway CPU s/GB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const result of report.results) {
    if (!('recordsPerSec' in result)) continue;
    lines.push(
      `| ${result.scenario} | ${result.label} | ${result.recordsPerSec} | ${result.mbPerSec} | ${result.avgMs ?? '—'} | ` +
        `${result.p50Ms ?? '—'} | ${result.p95Ms ?? '—'} | ${result.p99Ms ?? '—'} | ${result.p999Ms ?? '—'} | ${result.maxMs ?? '—'} | ` +
        `${result.storageCpuSecondsPerGb} | ${result.gatewayCpuSecondsPerGb} |`,
    );
  }
  const segmentStore = report.results.find(
    (result): result is SegmentStoreResult => result.scenario === 1,
  );
  if (segmentStore !== undefined) {
    lines.push(
      '',
      '## Scenario 1: segment store',
      '',
      '```json',
      JSON.stringify(segmentStore.segmentStore, null, 2),
      '```',
    );
  }
  if (report.kafka.length > 0) lines.push(...kafkaMarkdown(report.kafka));
  if (report.partitions !== undefined) lines.push(...partitionsMarkdown(report.partitions));
  lines.push('', '## Peak RSS (MB, VmHWM)', '');
  for (const { cluster, peakRssMb } of report.memory) {
    lines.push(
      `- ${cluster}: ${Object.entries(peakRssMb)
        .map(([name, mb]) => `${name} ${mb}`)
        .join(', ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Two horizontal bar charts: throughput, and p50/p99/p99.9 latency, one row per scenario. */
export function svgChart(report: BenchReport): string {
  const rows = report.results.filter((result): result is ScenarioResult => result.scenario !== 1);
  const escape = (text: string): string =>
    String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const rowHeight = 34;
  const labelWidth = 330;
  const barWidth = 420;
  const chartHeight = 40 + rows.length * rowHeight;
  const height = chartHeight * 2 + 40;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + barWidth + 140}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  const maxRate = Math.max(1, ...rows.map((row) => row.recordsPerSec));
  parts.push(`<text x="10" y="20" font-size="14" font-weight="bold">Throughput (records/s)</text>`);
  rows.forEach((row, index) => {
    const y = 34 + index * rowHeight;
    const width = (row.recordsPerSec / maxRate) * barWidth;
    parts.push(
      `<text x="10" y="${y + 14}">${escape(`${row.scenario}. ${row.label}`)}</text>`,
      `<rect x="${labelWidth}" y="${y}" width="${width.toFixed(1)}" height="20" fill="#4878a8"/>`,
      `<text x="${labelWidth + width + 6}" y="${y + 14}">${row.recordsPerSec.toLocaleString('en')}</text>`,
    );
  });
  const top = chartHeight + 20;
  const maxLatency = Math.max(0.001, ...rows.map((row) => row.p999Ms ?? 0));
  const colours = { p50Ms: '#8fbc8f', p99Ms: '#e8a33d', p999Ms: '#c0504d' } as const;
  parts.push(
    `<text x="10" y="${top + 20}" font-size="14" font-weight="bold">Latency (ms): p50 green, p99 orange, p99.9 red</text>`,
  );
  rows.forEach((row, index) => {
    const y = top + 34 + index * rowHeight;
    parts.push(`<text x="10" y="${y + 14}">${escape(`${row.scenario}. ${row.label}`)}</text>`);
    (Object.entries(colours) as [keyof typeof colours, string][]).forEach(([key, colour], band) => {
      const width = ((row[key] ?? 0) / maxLatency) * barWidth;
      parts.push(
        `<rect x="${labelWidth}" y="${y + band * 7}" width="${width.toFixed(1)}" height="6" fill="${colour}"/>`,
      );
    });
    parts.push(
      `<text x="${labelWidth + barWidth + 6}" y="${y + 14}">${row.p50Ms} / ${row.p99Ms} / ${row.p999Ms}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Writes the report's three files and prints its markdown on stdout. */
export function writeReport(report: BenchReport): void {
  mkdirSync(resultsDirectory, { recursive: true });
  const stem = path.join(resultsDirectory, report.startedAt.replace(/[:.]/g, '-'));
  writeFileSync(`${stem}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${stem}.md`, markdown(report));
  writeFileSync(`${stem}.svg`, svgChart(report));
  process.stdout.write(markdown(report));
  log(`wrote ${stem}.json, .md and .svg`);
}
