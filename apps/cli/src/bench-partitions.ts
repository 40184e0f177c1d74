import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Spool, type Admin } from '@spool/client';
import { sleep } from '@spool/common';
import { BenchDevCluster, MetadataWatch } from './bench-partitions-cluster';
import {
  brokerBackInSync,
  busiestLeader,
  clusterInSync,
  describeOutOfSync,
  hasLeader,
  isInSync,
  partitionCount,
  topicsPass,
  replicasAssigned,
} from './bench-partitions-metadata';
import { parseBenchPartitionsArgs, type BenchPartitionsSettings } from './bench-partitions-options';
import type { PartitionsStep } from './bench-partitions-plan';
import {
  cpuSeconds,
  metricValues,
  openDescriptorCount,
  processExists,
  residentBytes,
  scrapeMetrics,
} from './bench-partitions-proc';
import {
  formatPartitionsResult,
  quantile,
  round,
  type CreateFigures,
  type FailoverFigures,
  type IdleFigures,
  type PartitionsBenchResult,
  type RestartFigures,
  type StartupFigures,
} from './bench-partitions-report';
import type { CommandContext } from './commands';
import { processName } from './dev-cluster-layout';

/**
 * `spool bench partitions`: what partition count costs, measured on a `spool dev` cluster of its
 * own (bench-partitions-options.ts has the steps in words). It measures whatever the code does
 * and tunes nothing: the cluster runs with spool dev's defaults.
 *
 * Two clusters on one data folder: the first (--restart never, so a killed node stays down while
 * its leaderships move) is grown, measured idle and loses its busiest leader to kill -9; the
 * second (--restart always) starts on the same data, the killed node recovering from the crash,
 * and restarts one node after SIGTERM and one after SIGKILL to time a lone start-up.
 *
 * Exit codes: 0 with every figure, 1 when a step failed (the figures before it are printed, the
 * error named), 2 for a bad command line.
 */

const bytesPerMegabyte = 1024 * 1024;
/** How often the bench asks the storage nodes how many replicas they host yet. */
const hostedPollIntervalMs = 3_000;

export async function runBenchPartitions(context: CommandContext): Promise<number> {
  const settings = parseBenchPartitionsArgs(context.argv, context.env ?? process.env);
  if (process.platform !== 'linux') {
    throw new Error('bench partitions reads /proc: it runs on Linux only');
  }
  const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-bench-partitions-'));
  const benchmark = new PartitionsBenchmark(settings, path.join(dataDirectory, 'cluster'), (line) =>
    context.stderr.write(`bench partitions: ${line}\n`),
  );
  // Ctrl-C reaches spool dev too (same process group); a SIGTERM is passed on. Either way the
  // cluster is stopped and the folder removed before this process goes.
  const onSignal = (): void => {
    void benchmark.abort().finally(() => {
      rmSync(dataDirectory, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const result = await benchmark.run();
    context.stdout.write(formatPartitionsResult(result, settings.json));
    return result.errors.length === 0 ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    rmSync(dataDirectory, { recursive: true, force: true });
  }
}

class PartitionsBenchmark {
  private readonly create: CreateFigures[] = [];
  private readonly idle: IdleFigures[] = [];
  private failover: FailoverFigures | null = null;
  private startup: StartupFigures | null = null;
  private readonly errors: string[] = [];
  private cluster: BenchDevCluster | undefined;
  private readonly timeoutMs: number;

  constructor(
    private readonly settings: BenchPartitionsSettings,
    private readonly dataDirectory: string,
    private readonly progress: (line: string) => void,
  ) {
    this.timeoutMs = settings.stepTimeoutMs;
  }

  async run(): Promise<PartitionsBenchResult> {
    const grown = await this.recordingErrors(() => this.growAndKill());
    if (grown) await this.recordingErrors(() => this.restartOnSameData());
    const { settings } = this;
    return {
      mode: 'partitions',
      settings: {
        nodes: settings.storageNodeCount,
        replicationFactor: settings.replicationFactor,
        topicPartitionsMax: settings.topicPartitionsMax,
        idleSeconds: settings.idleSeconds,
        settleSeconds: settings.settleSeconds,
      },
      create: this.create,
      idle: this.idle,
      failover: this.failover,
      startup: this.startup,
      errors: this.errors,
    };
  }

  /** Stops the running cluster, if any (a signal). */
  async abort(): Promise<void> {
    await this.cluster?.stop();
  }

  /** True if `step` finished; otherwise its error is recorded and false returned. */
  private async recordingErrors(step: () => Promise<void>): Promise<boolean> {
    try {
      await step();
      return true;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.progress(`failed: ${message}`);
      this.errors.push(message);
      return false;
    }
  }

  /** The first cluster: every step of the plan, then the failover at the largest size. */
  private async growAndKill(): Promise<void> {
    const { settings } = this;
    this.progress(
      `starting spool dev: ${settings.storageNodeCount} storage nodes, --restart never`,
    );
    const cluster = await this.startCluster('never');
    const watch = new MetadataWatch(cluster.address('controller'));
    const spool = new Spool({
      brokers: [cluster.address('gateway')],
      clientId: 'spool-bench-partitions',
      logLevel: 'silent',
    });
    // One CreateTopics call is what is timed: it is not sent twice.
    const admin = spool.admin({ retries: 0, requestTimeoutMs: this.timeoutMs });
    try {
      await watch.waitUntil(
        () => clusterInSync(watch.metadata, settings.storageNodeCount),
        this.timeoutMs,
        'every partition in sync after the start',
        undefined,
        () => describeOutOfSync(watch.metadata, settings.storageNodeCount),
      );
      for (const step of settings.steps) {
        if (step.kind === 'create') await this.createStep(step, admin, watch);
        else this.idle.push(await this.measureIdle(step.partitions, cluster, watch));
      }
      this.failover = await this.killBusiestLeader(cluster, watch);
    } finally {
      await admin.close().catch(() => {});
      await spool.close().catch(() => {});
      watch.close();
      this.progress('stopping spool dev');
      await cluster.stop();
      this.cluster = undefined;
    }
  }

  private async startCluster(restartPolicy: 'never' | 'always'): Promise<BenchDevCluster> {
    this.cluster = await BenchDevCluster.start({
      dataDirectory: this.dataDirectory,
      storageNodeCount: this.settings.storageNodeCount,
      restartPolicy,
      timeoutMs: this.timeoutMs,
    });
    return this.cluster;
  }

  /**
   * One CreateTopics call for the step's topics, timed until its answer, until the metadata
   * names a leader for every new partition and until every one is in sync.
   */
  private async createStep(
    step: Extract<PartitionsStep, { kind: 'create' }>,
    admin: Admin,
    watch: MetadataWatch,
  ): Promise<void> {
    const { topics } = step;
    this.progress(
      `creating ${step.partitions} partitions as ${topics.length} topic(s) on top of ` +
        `${step.existingPartitions}${step.timed ? ' (timed)' : ''}`,
    );
    const abandon = new AbortController();
    const what = `${step.partitions} new partitions`;
    const startedAtMs = performance.now();
    const led = watch.waitUntil(
      () => topicsPass(watch.metadata, topics, hasLeader),
      this.timeoutMs,
      `a leader for each of ${what}`,
      abandon.signal,
    );
    const inSync = watch.waitUntil(
      () => topicsPass(watch.metadata, topics, isInSync),
      this.timeoutMs,
      `all replicas in the ISR for each of ${what}`,
      abandon.signal,
    );
    try {
      const created = await admin.createTopics({
        topics: topics.map((topic) => ({
          topic: topic.name,
          numPartitions: topic.partitions,
          replicationFactor: this.settings.replicationFactor,
        })),
      });
      if (!created) throw new Error(`topics ${topics[0]!.name}... already existed`);
      const answeredAtMs = performance.now();
      const [ledAtMs, inSyncAtMs] = await Promise.all([led, inSync]);
      if (!step.timed) return;
      this.create.push({
        partitions: step.partitions,
        topics: topics.length,
        existingPartitions: step.existingPartitions,
        createMs: round(answeredAtMs - startedAtMs, 1),
        leadersMs: round(ledAtMs - startedAtMs, 1),
        inSyncMs: round(inSyncAtMs - startedAtMs, 1),
      });
    } finally {
      abandon.abort();
      await Promise.allSettled([led, inSync]);
    }
  }

  /**
   * Until every storage node's spool_partitions (leaders and followers) counts the replicas the
   * metadata assigns to it. Polled every few seconds: a scrape of a node with 20,000 partitions
   * costs it a fraction of a second of CPU.
   */
  private async waitUntilHosted(cluster: BenchDevCluster, watch: MetadataWatch): Promise<void> {
    const deadlineMs = Date.now() + this.timeoutMs;
    const nodes = cluster.processes().filter((entry) => entry.role === 'storage-node');
    let waitingFor = '';
    while (Date.now() < deadlineMs) {
      const counts = await Promise.all(
        nodes.map(async (node) => {
          const assigned = replicasAssigned(watch.metadata, node.id);
          const port = node.ports?.metrics;
          if (port === undefined) return { node, assigned, hosted: -1 };
          const values = metricValues(await scrapeMetrics(port), ['spool_partitions']);
          return { node, assigned, hosted: values.get('spool_partitions') ?? 0 };
        }),
      );
      const behind = counts.filter(({ assigned, hosted }) => hosted !== assigned);
      if (behind.length === 0) return;
      waitingFor = behind
        .map(
          ({ node, assigned, hosted }) =>
            `${processName(node.role, node.id)} hosts ${hosted} of ${assigned}`,
        )
        .join(', ');
      await sleep(hostedPollIntervalMs);
    }
    throw new Error(`replicas not hosted within ${this.timeoutMs / 1000} s: ${waitingFor}`);
  }

  /** CPU over the idle window, RSS, and each storage node's descriptors, once settled. */
  private async measureIdle(
    partitions: number,
    cluster: BenchDevCluster,
    watch: MetadataWatch,
  ): Promise<IdleFigures> {
    const { settings } = this;
    await watch.waitUntil(
      () => clusterInSync(watch.metadata, settings.storageNodeCount),
      this.timeoutMs,
      `every partition in sync at ${partitions}`,
      undefined,
      () => describeOutOfSync(watch.metadata, settings.storageNodeCount),
    );
    // In sync is not done: a new partition's ISR is its whole replica set from the start, while
    // each storage node creates its replicas' logs in the background. Idle starts once every
    // node hosts every replica assigned to it.
    await this.waitUntilHosted(cluster, watch);
    this.progress(
      `${partitions} partitions in sync and hosted; settling ${settings.settleSeconds} s, then ` +
        `idle for ${settings.idleSeconds} s`,
    );
    await sleep(settings.settleSeconds * 1_000);
    const services = cluster.processes().map((entry) => ({
      name: processName(entry.role, entry.id),
      role: entry.role,
      pid: entry.pid!,
      metricsPort: entry.ports?.metrics,
    }));
    const supervisor = { name: 'spool dev', role: 'supervisor', pid: cluster.supervisorPid };
    const everyone = [...services, supervisor];
    const before = everyone.map(({ pid }) => cpuSeconds(pid));
    const windowStartMs = performance.now();
    await sleep(settings.idleSeconds * 1_000);
    const after = everyone.map(({ pid }) => cpuSeconds(pid));
    const windowSeconds = (performance.now() - windowStartMs) / 1_000;
    const figures = everyone.map(({ name, pid }, index) => ({
      name,
      pid,
      cpuPercent: round(((after[index]! - before[index]!) / windowSeconds) * 100, 2),
      rssMb: round(residentBytes(pid) / bytesPerMegabyte, 1),
    }));
    const serviceFigures = figures.slice(0, services.length);
    const storageNodes = await Promise.all(
      services
        .filter((service) => service.role === 'storage-node')
        .map(async ({ name, pid, metricsPort }) => {
          const gauges = ['spool_log_open_files', 'spool_log_open_files_max'];
          const values =
            metricsPort === undefined
              ? new Map<string, number>()
              : metricValues(await scrapeMetrics(metricsPort), gauges);
          return {
            name,
            openDescriptors: openDescriptorCount(pid),
            logOpenFiles: values.get(gauges[0]!) ?? null,
            logOpenFilesMax: values.get(gauges[1]!) ?? null,
          };
        }),
    );
    return {
      partitions,
      partitionsInCluster: partitionCount(watch.metadata),
      windowSeconds: round(windowSeconds, 2),
      clusterCpuPercent: round(
        serviceFigures.reduce((sum, process) => sum + process.cpuPercent, 0),
        2,
      ),
      processes: serviceFigures,
      supervisor: figures.at(-1)!,
      storageNodes,
    };
  }

  /**
   * kill -9 of the node leading the most partitions; each partition it led is timed until the
   * metadata names another leader (as the stream delivers it to this process).
   */
  private async killBusiestLeader(
    cluster: BenchDevCluster,
    watch: MetadataWatch,
  ): Promise<FailoverFigures> {
    const { metadata } = watch;
    const { brokerId, led, count } = busiestLeader(metadata, this.settings.storageNodeCount);
    const pid = cluster.process('storage-node', brokerId).pid!;
    const times: number[] = [];
    let fencedMs: number | null = null;
    let killedAtMs = 0;
    const check = (topic: string, partition: number, nowMs: number): void => {
      const current = metadata.partition(topic, partition);
      if (current === undefined || !hasLeader(current) || current.leaderId === brokerId) return;
      led.get(topic)!.delete(partition);
      times.push(nowMs - killedAtMs);
    };
    const unsubscribe = metadata.onChange((change) => {
      const nowMs = performance.now();
      if (fencedMs === null && metadata.brokers.get(brokerId)?.state !== 'ALIVE') {
        fencedMs = nowMs - killedAtMs;
      }
      const touched = change.snapshot ? [...led.keys()] : change.changedTopics;
      for (const topic of touched) {
        for (const partition of led.get(topic) ?? []) check(topic, partition, nowMs);
      }
      for (const partition of change.changedPartitions) {
        if (led.get(partition.topic)?.has(partition.partition) === true) {
          check(partition.topic, partition.partition, nowMs);
        }
      }
    });
    const partitions = partitionCount(metadata);
    this.progress(
      `kill -9 of storage-node-${brokerId} (pid ${pid}), leader of ${count} partitions`,
    );
    try {
      killedAtMs = performance.now();
      process.kill(pid, 'SIGKILL');
      // The controller marks the broker fenced after the elections (077a04c), so both are
      // awaited: unsubscribing at the last election would miss the fence.
      await cluster
        .until(
          () => times.length === count && fencedMs !== null,
          this.timeoutMs,
          `every partition of storage-node-${brokerId} led by another and the broker fenced`,
        )
        .catch((error: unknown) =>
          this.errors.push(
            `${(error as Error).message.split('\n')[0]!} (${times.length} of ${count} moved, ` +
              `${fencedMs === null ? 'not ' : ''}fenced)`,
          ),
        );
    } finally {
      unsubscribe();
    }
    times.sort((left, right) => left - right);
    return {
      partitions,
      brokerId,
      partitionsLed: count,
      partitionsMoved: times.length,
      p50Ms: round(quantile(times, 0.5), 1),
      p99Ms: round(quantile(times, 0.99), 1),
      maxMs: round(times.at(-1) ?? Number.NaN, 1),
      fencedMs: fencedMs === null ? null : round(fencedMs, 1),
    };
  }

  /**
   * The second cluster, on the first one's data: the whole cluster's start (one node recovering
   * from kill -9), then one node restarted after SIGTERM and another after SIGKILL.
   */
  private async restartOnSameData(): Promise<void> {
    const { settings } = this;
    this.progress('starting spool dev again on the same data, --restart always');
    const startedAtMs = performance.now();
    const cluster = await this.startCluster('always');
    const watch = new MetadataWatch(cluster.address('controller'));
    try {
      const inSyncAtMs = await watch.waitUntil(
        () => clusterInSync(watch.metadata, settings.storageNodeCount),
        this.timeoutMs,
        'every partition in sync after the cluster started again',
        undefined,
        () => describeOutOfSync(watch.metadata, settings.storageNodeCount),
      );
      const nodes = Array.from({ length: settings.storageNodeCount }, (_, brokerId) => {
        const report = cluster.startupReport(brokerId);
        if (report === undefined) throw new Error(`storage-node-${brokerId} logged no start-up`);
        return { brokerId, ...report };
      });
      const startup: StartupFigures = {
        partitions: partitionCount(watch.metadata),
        clusterInSyncMs: round(inSyncAtMs - startedAtMs, 1),
        nodes,
        afterCleanStop: null,
        afterKill: null,
      };
      this.startup = startup;
      await this.recordingErrors(async () => {
        this.startup = {
          ...startup,
          afterCleanStop: await this.restartOne(cluster, watch, 0, 'SIGTERM'),
        };
      });
      await this.recordingErrors(async () => {
        this.startup = {
          ...this.startup!,
          afterKill: await this.restartOne(cluster, watch, 1, 'SIGKILL'),
        };
      });
    } finally {
      watch.close();
      this.progress('stopping spool dev');
      await cluster.stop();
      this.cluster = undefined;
    }
  }

  /** Signals one storage node and times spool dev's restart of it until it is back in sync. */
  private async restartOne(
    cluster: BenchDevCluster,
    watch: MetadataWatch,
    brokerId: number,
    signal: 'SIGTERM' | 'SIGKILL',
  ): Promise<RestartFigures> {
    const name = `storage-node-${brokerId}`;
    const before = cluster.process('storage-node', brokerId);
    const oldPid = before.pid!;
    const epochBefore = watch.metadata.brokers.get(brokerId)?.brokerEpoch ?? 0n;
    this.progress(`${signal} to ${name} (pid ${oldPid}); spool dev restarts it`);
    const signalledAtMs = performance.now();
    process.kill(oldPid, signal);
    await cluster.until(() => !processExists(oldPid), this.timeoutMs, `${name} exited`);
    const goneAtMs = performance.now();
    let newPid = 0;
    await cluster.until(
      () => {
        const now = cluster.process('storage-node', brokerId);
        newPid = now.restarts > before.restarts && now.pid !== oldPid ? (now.pid ?? 0) : 0;
        return newPid !== 0;
      },
      this.timeoutMs,
      `${name} restarted`,
    );
    const spawnedAtMs = performance.now();
    await cluster.until(
      () => {
        const now = cluster.process('storage-node', brokerId);
        return now.pid === newPid && now.state === 'running';
      },
      this.timeoutMs,
      `${name} serving again`,
    );
    const servingAtMs = performance.now();
    const inSyncAtMs = await watch.waitUntil(
      () => brokerBackInSync(watch.metadata, brokerId, epochBefore),
      this.timeoutMs,
      `${name} back in the ISR of its partitions`,
      undefined,
      () => describeOutOfSync(watch.metadata, this.settings.storageNodeCount),
    );
    return {
      brokerId,
      signal,
      stopMs: round(goneAtMs - signalledAtMs, 1),
      backoffMs: round(spawnedAtMs - goneAtMs, 1),
      startedMs: round(servingAtMs - spawnedAtMs, 1),
      inSyncMs: round(inSyncAtMs - spawnedAtMs, 1),
      report: cluster.startupReport(brokerId, goneAtMs) ?? null,
    };
  }
}
