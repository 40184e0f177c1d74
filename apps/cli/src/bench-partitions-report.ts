import type { StorageStartupReport } from './bench-partitions-cluster';
import { formatTable, toJsonLine } from './output';

/**
 * What `spool bench partitions` reports: one JSON line with --json (bench/src/scenarios.ts reads
 * it), otherwise a table per measurement. Times in milliseconds from the event named, CPU as a
 * percentage of one core, memory in MB (2^20 bytes).
 */

export interface CreateFigures {
  readonly partitions: number;
  readonly topics: number;
  /** existingPartitions: partitions the benchmark had created before this one. */
  readonly existingPartitions: number;
  /** createMs: the CreateTopics call through the gateway, until its answer. */
  readonly createMs: number;
  /** leadersMs: from the call until the metadata names a leader for every new partition. */
  readonly leadersMs: number;
  /** inSyncMs: from the call until every new partition has all its replicas in the ISR. */
  readonly inSyncMs: number;
}

export interface ProcessIdleFigures {
  readonly name: string;
  readonly pid: number;
  readonly cpuPercent: number;
  readonly rssMb: number;
}

export interface StorageNodeFileFigures {
  readonly name: string;
  /** openDescriptors: every descriptor in /proc/<pid>/fd (logs, sockets, pipes, epoll...). */
  readonly openDescriptors: number;
  /** logOpenFiles, logOpenFilesMax: the node's own gauges; null when it exports none. */
  readonly logOpenFiles: number | null;
  readonly logOpenFilesMax: number | null;
}

export interface IdleFigures {
  readonly partitions: number;
  /** partitionsInCluster: with the internal topics (__consumer_offsets). */
  readonly partitionsInCluster: number;
  readonly windowSeconds: number;
  /** clusterCpuPercent: the services together, spool dev's supervisor left out. */
  readonly clusterCpuPercent: number;
  readonly processes: readonly ProcessIdleFigures[];
  /** supervisor: spool dev itself, which reads every service's output. */
  readonly supervisor: ProcessIdleFigures;
  readonly storageNodes: readonly StorageNodeFileFigures[];
}

export interface FailoverFigures {
  readonly partitions: number;
  readonly brokerId: number;
  /** partitionsLed: what the killed node led; each is timed until another leader is named. */
  readonly partitionsLed: number;
  readonly partitionsMoved: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** fencedMs: until the metadata showed the broker fenced; null if it never did in time. */
  readonly fencedMs: number | null;
}

export interface RestartFigures {
  readonly brokerId: number;
  readonly signal: 'SIGTERM' | 'SIGKILL';
  /** stopMs: from the signal until the process was gone (the controlled shutdown for SIGTERM). */
  readonly stopMs: number;
  /** backoffMs: from the process gone until spool dev started it again (its restart back-off). */
  readonly backoffMs: number;
  /** startedMs: from the new process's start until it served (logs open, registered, listening). */
  readonly startedMs: number;
  /** inSyncMs: from the new process's start until it was in the ISR of every partition it holds. */
  readonly inSyncMs: number;
  /** report: what the node said it did on start-up; null if no such line was read. */
  readonly report: StorageStartupReport | null;
}

export interface StartupFigures {
  readonly partitions: number;
  /** clusterInSyncMs: a new spool dev on the same data until every partition was in sync. */
  readonly clusterInSyncMs: number;
  /** nodes: each storage node's report of that start (they start at the same time). */
  readonly nodes: readonly ({ readonly brokerId: number } & StorageStartupReport)[];
  readonly afterCleanStop: RestartFigures | null;
  readonly afterKill: RestartFigures | null;
}

export interface PartitionsBenchResult {
  readonly mode: 'partitions';
  readonly settings: {
    readonly nodes: number;
    readonly replicationFactor: number;
    readonly topicPartitionsMax: number;
    readonly idleSeconds: number;
    readonly settleSeconds: number;
  };
  readonly create: readonly CreateFigures[];
  readonly idle: readonly IdleFigures[];
  readonly failover: FailoverFigures | null;
  readonly startup: StartupFigures | null;
  /** errors: a step that failed, and why; the steps after it that depended on it are absent. */
  readonly errors: readonly string[];
}

/** The value at quantile `q` (0 < q <= 1) of ascending `sorted`, by nearest rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function formatPartitionsResult(result: PartitionsBenchResult, json: boolean): string {
  if (json) return `${toJsonLine(result)}\n`;
  const { settings } = result;
  const sections = [
    `bench partitions: ${settings.nodes} storage nodes, replication factor ` +
      `${settings.replicationFactor}, topics of at most ${settings.topicPartitionsMax} partitions\n`,
  ];
  if (result.create.length > 0) {
    sections.push(
      formatTable(
        ['create partitions', 'topics', 'on top of', 'call', 'all led', 'all in sync'],
        result.create.map((figures) => [
          figures.partitions,
          figures.topics,
          figures.existingPartitions,
          seconds(figures.createMs),
          seconds(figures.leadersMs),
          seconds(figures.inSyncMs),
        ]),
      ),
    );
  }
  for (const idle of result.idle) sections.push(formatIdle(idle));
  if (result.failover !== null) sections.push(formatFailover(result.failover));
  if (result.startup !== null) sections.push(formatStartup(result.startup));
  for (const error of result.errors) sections.push(`error: ${error}\n`);
  return sections.join('\n');
}

function formatIdle(idle: IdleFigures): string {
  const files = new Map(idle.storageNodes.map((node) => [node.name, node]));
  const rows = [...idle.processes, idle.supervisor].map((process) => {
    const node = files.get(process.name);
    return [
      process.name,
      process.cpuPercent.toFixed(1),
      process.rssMb,
      node?.openDescriptors ?? '',
      node === undefined ? '' : `${node.logOpenFiles ?? '-'} / ${node.logOpenFilesMax ?? '-'}`,
    ];
  });
  rows.push(['cluster (without spool dev)', idle.clusterCpuPercent.toFixed(1), '', '', '']);
  return (
    `idle at ${idle.partitions} partitions (${idle.partitionsInCluster} with internal topics), ` +
    `CPU over ${idle.windowSeconds} s:\n` +
    formatTable(['process', 'CPU % of a core', 'RSS MB', 'open fds', 'log files open / max'], rows)
  );
}

function formatFailover(failover: FailoverFigures): string {
  return formatTable(
    [`failover at ${failover.partitions} partitions`, ''],
    [
      ['killed (kill -9)', `storage-node-${failover.brokerId}`],
      ['partitions it led', failover.partitionsLed],
      ['with a new leader', failover.partitionsMoved],
      [
        'p50 / p99 / max',
        `${seconds(failover.p50Ms)} / ${seconds(failover.p99Ms)} / ${seconds(failover.maxMs)}`,
      ],
      ['broker fenced after', failover.fencedMs === null ? '-' : seconds(failover.fencedMs)],
    ],
  );
}

function formatStartup(startup: StartupFigures): string {
  const lines = [
    `start-up at ${startup.partitions} partitions: the whole cluster again, every partition in ` +
      `sync after ${seconds(startup.clusterInSyncMs)}\n`,
    formatTable(
      [
        'storage node',
        'after',
        'logs',
        'recovered',
        'segments scanned',
        'bytes cut',
        'logs open in',
      ],
      startup.nodes.map((node) => [
        `storage-node-${node.brokerId}`,
        node.cleanShutdown ? 'clean stop' : 'crash',
        node.logsLoaded,
        node.logsRecovered,
        node.segmentsRecovered,
        node.bytesTruncated,
        seconds(node.durationMs),
      ]),
    ),
  ];
  const restarts = [startup.afterCleanStop, startup.afterKill].filter(
    (restart): restart is RestartFigures => restart !== null,
  );
  if (restarts.length > 0) {
    lines.push(
      '\none node restarted while the others run:\n',
      formatTable(
        ['storage node', 'signal', 'stop', 'back-off', 'serving', 'in sync', 'recovered logs'],
        restarts.map((restart) => [
          `storage-node-${restart.brokerId}`,
          restart.signal,
          seconds(restart.stopMs),
          seconds(restart.backoffMs),
          seconds(restart.startedMs),
          seconds(restart.inSyncMs),
          restart.report === null
            ? '-'
            : `${restart.report.logsRecovered} of ${restart.report.logsLoaded}` +
              ` (${restart.report.cleanShutdown ? 'clean' : 'crash'})`,
        ]),
      ),
    );
  }
  return lines.join('');
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(milliseconds < 10_000 ? 3 : 1)} s`;
}
