// Proves the metrics an operator watches are there and move as they must, on a real `spool dev`
// cluster (3 storage nodes, separate processes): every process in cluster.json serves /metrics,
// read with a real Prometheus text-format parser; messages in equal the records produced; bytes
// in and out move (followers and consumers read every byte); under-replicated partitions rise
// while a follower is stopped (SIGSTOP of its pid from cluster.json) and return to 0 once it
// continues; the active controller count sums to 1; every spool_* family has help text and
// counters end in _total; and every metric the Grafana dashboard and the alert rules query is
// exported. Consumer lag dropping to 0 needs the group coordinator (see the guarded block).
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Spool, type Admin, type Message } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { eventually } from './support/controller-client';
import {
  family,
  isExported,
  metricNamesIn,
  scrape,
  sumOf,
  type Scrape,
} from './support/prometheus-scrape';
import { workspaceRoot } from './support/service-process';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

interface ClusterProcess {
  role: 'controller' | 'storage-node' | 'coordinator' | 'gateway';
  id: number;
  pid: number;
  ports: { grpc: number; metrics: number; data?: number };
}

const topic = 'metered';
const partitionCount = 3;
const recordCount = 300;
/** Short, so a stopped follower leaves the ISR in about a second and a half, not 30 s. */
const replicaLagTimeMaxMs = 1_500;

let dev: SpoolDevProcess | undefined;
let processes: ClusterProcess[] = [];
let spool: Spool;
let admin: Admin;
/** A process stopped with SIGSTOP, continued in afterAll if a test failed midway. */
let stoppedPid: number | undefined;

function storageNodes(): ClusterProcess[] {
  return processes.filter((entry) => entry.role === 'storage-node');
}

async function metricsText(entry: ClusterProcess): Promise<string> {
  return (await fetch(`http://127.0.0.1:${entry.ports.metrics}/metrics`)).text();
}

/** The sum of a histogram's `_count` series whose labels include `labels`, from scrape text. */
function histogramCount(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const match of text.matchAll(new RegExp(`^${name}_count\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const found = Object.entries(labels).every(([key, value]) =>
      match[1]!.includes(`${key}="${value}"`),
    );
    if (found) total += Number(match[2]);
  }
  return total;
}

function scrapeEach(entries: readonly ClusterProcess[]): Promise<Scrape[]> {
  return Promise.all(entries.map((entry) => scrape(entry.ports.metrics)));
}

beforeAll(async () => {
  // Settings reach every process through the environment; only storage nodes read this one.
  dev = await startSpoolDev(['--nodes', '3'], {
    env: { SPOOL_REPLICA_LAG_TIME_MAX_MS: String(replicaLagTimeMaxMs) },
  });
  processes = dev.processes as ClusterProcess[];
  spool = new Spool({ brokers: [dev.gatewayAddress], clientId: 'metrics-spec' });
  admin = spool.admin({ requestTimeoutMs: 10_000 });
  await admin.createTopics({
    topics: [{ topic, numPartitions: partitionCount, replicationFactor: 3 }],
  });
});

afterAll(async () => {
  try {
    if (stoppedPid !== undefined) process.kill(stoppedPid, 'SIGCONT');
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
});

describe('metrics on a spool dev cluster', () => {
  it('lists every process with a metrics port that serves its own service', async () => {
    expect(processes.map((entry) => entry.role).sort()).toEqual([
      'controller',
      'coordinator',
      'gateway',
      'storage-node',
      'storage-node',
      'storage-node',
    ]);
    const scrapes = await scrapeEach(processes);
    for (const [index, entry] of processes.entries()) {
      const started = family(scrapes[index]!, 'process_start_time_seconds');
      expect(started?.metrics[0]?.labels?.service, entry.role).toBe(entry.role);
      expect(family(scrapes[index]!, 'spool_requests_total'), entry.role).toBeDefined();
    }
  });

  it('counts every record produced as a message in, and the bytes in and out', async () => {
    const messages: Message[] = Array.from({ length: recordCount }, (_, index) => ({
      key: `key-${index % 30}`,
      value: `value-${index}-`.repeat(8),
    }));
    const producer = spool.producer({ lingerMs: 5 });
    try {
      expect(await producer.send({ topic, messages })).toHaveLength(recordCount);
    } finally {
      await producer.disconnect();
    }
    const afterProduce = await scrapeEach(storageNodes());
    expect(sumOf(afterProduce, 'spool_messages_in_total', { topic })).toBe(recordCount);
    const bytesIn = sumOf(afterProduce, 'spool_bytes_in_total', { topic })!;
    expect(bytesIn).toBeGreaterThan(recordCount * 8 * 'value-0-'.length);
    // acks=all: both followers fetched every byte before the producer was answered.
    expect(sumOf(afterProduce, 'spool_bytes_out_total', { topic })).toBeGreaterThanOrEqual(
      2 * bytesIn,
    );
    // The produce split and the request counters of both hops saw the Appends. The parser folds
    // a labelled histogram's series into one, so its counts are read from the text itself.
    expect(family(afterProduce[0]!, 'spool_produce_stage_duration_seconds')?.type).toBe(
      'HISTOGRAM',
    );
    const storageText = (await Promise.all(storageNodes().map(metricsText))).join('\n');
    for (const stage of ['queue', 'local_append', 'replication_wait']) {
      expect(
        histogramCount(storageText, 'spool_produce_stage_duration_seconds', { stage }),
        stage,
      ).toBeGreaterThan(0);
    }
    const gatewayText = await metricsText(processes.find((entry) => entry.role === 'gateway')!);
    expect(
      histogramCount(gatewayText, 'spool_request_duration_seconds', { api: 'Produce' }),
    ).toBeGreaterThan(0);
    expect(sumOf(afterProduce, 'spool_requests_total', { api: 'Append' })).toBeGreaterThan(0);
    const gateway = processes.find((entry) => entry.role === 'gateway')!;
    expect(
      sumOf([await scrape(gateway.ports.metrics)], 'spool_requests_total', { api: 'Produce' }),
    ).toBeGreaterThan(0);
    const logEnd = sumOf(afterProduce, 'spool_log_end_offset', { topic })!;
    expect(logEnd).toBe(3 * recordCount);

    // A consumer reading the whole topic moves at least every byte once more.
    const consumer = spool.consumer({ requestTimeoutMs: 5_000 });
    let consumed = 0;
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async () => {
          consumed += 1;
        },
      });
      await vi.waitFor(() => expect(consumed).toBeGreaterThanOrEqual(recordCount), {
        timeout: 15_000,
        interval: 50,
      });
    } finally {
      await consumer.disconnect();
    }
    expect(consumed).toBe(recordCount);
    const afterConsume = await scrapeEach(storageNodes());
    expect(sumOf(afterConsume, 'spool_bytes_out_total', { topic })).toBeGreaterThanOrEqual(
      sumOf(afterProduce, 'spool_bytes_out_total', { topic })! + bytesIn,
    );
  });

  it('counts under-replicated partitions while a follower is stopped, and 0 once it is back', async () => {
    const [description] = await admin.describeTopics({ topics: [topic] });
    const partition = description!.partitions[0]!;
    const followerId = partition.replicas.find((id) => id !== partition.leaderId)!;
    const follower = storageNodes().find((entry) => entry.id === followerId)!;
    const running = storageNodes().filter((entry) => entry.id !== followerId);
    expect(sumOf(await scrapeEach(storageNodes()), 'spool_under_replicated_partitions')).toBe(0);

    process.kill(follower.pid, 'SIGSTOP');
    stoppedPid = follower.pid;
    try {
      // Each leader it follows drops it from the ISR once it has lagged replica.lag.time.max.ms.
      // The bound stays below broker.session.timeout.ms (9 s), so the node is not fenced.
      await eventually(async () => {
        const under = sumOf(await scrapeEach(running), 'spool_under_replicated_partitions')!;
        expect(under).toBeGreaterThanOrEqual(1);
      }, 6_000);
    } finally {
      process.kill(follower.pid, 'SIGCONT');
      stoppedPid = undefined;
    }
    await eventually(async () => {
      expect(sumOf(await scrapeEach(storageNodes()), 'spool_under_replicated_partitions')).toBe(0);
    }, 20_000);
    const scrapes = await scrapeEach(storageNodes());
    expect(sumOf(scrapes, 'spool_isr_shrinks_total')).toBeGreaterThanOrEqual(1);
    expect(sumOf(scrapes, 'spool_isr_expands_total')).toBeGreaterThanOrEqual(1);
  });

  it('has exactly one active controller', async () => {
    const controllers = processes.filter((entry) => entry.role === 'controller');
    const scrapes = await scrapeEach(controllers);
    expect(sumOf(scrapes, 'spool_controller_active')).toBe(1);
    expect(sumOf(scrapes, 'spool_offline_partitions')).toBe(0);
    expect(sumOf(scrapes, 'spool_brokers', { state: 'alive' })).toBe(3);
  });

  it('names every metric by the conventions, and exports every metric the dashboard and alerts use', async () => {
    const scrapes = await scrapeEach(processes);
    for (const metric of scrapes.flat()) {
      if (!metric.name.startsWith('spool_')) continue;
      expect(metric.help.length, `${metric.name} help`).toBeGreaterThan(10);
      if (metric.type === 'COUNTER') expect(metric.name).toMatch(/_total$/);
      else expect(metric.name).not.toMatch(/_total$/);
    }
    for (const name of [
      'spool_controller_active',
      'spool_offline_partitions',
      'spool_under_replicated_partitions',
      'spool_under_min_isr_partitions',
      'spool_messages_in_total',
      'spool_bytes_in_total',
      'spool_bytes_out_total',
      'spool_consumer_group_lag',
    ]) {
      expect(isExported(scrapes, name), name).toBe(true);
    }

    const dashboard = JSON.parse(
      readFileSync(path.join(workspaceRoot, 'deploy/grafana/spool-overview.json'), 'utf8'),
    ) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    const queried = dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
    );
    expect(queried.length).toBeGreaterThan(20);
    for (const { panel, expr } of queried) {
      const names = metricNamesIn(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(isExported(scrapes, name), `${panel}: ${name}`).toBe(true);
    }

    const rules = parse(
      readFileSync(path.join(workspaceRoot, 'deploy/prometheus/alerts.yaml'), 'utf8'),
    ) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    for (const rule of rules.groups.flatMap((group) => group.rules)) {
      // `up` is Prometheus's own series about each scrape, not something a process exports.
      for (const name of metricNamesIn(rule.expr).filter((candidate) => candidate !== 'up')) {
        expect(isExported(scrapes, name), `${rule.alert}: ${name}`).toBe(true);
      }
    }
  });
});

// The coordinator fills spool_consumer_group_lag* from committed offsets and the partition
// leaders' high watermarks, so operators need no separate lag exporter.
describe('consumer lag on a spool dev cluster', () => {
  const groupId = 'metered-readers';

  async function lagSum(): Promise<number | undefined> {
    const coordinators = processes.filter((entry) => entry.role === 'coordinator');
    return sumOf(await scrapeEach(coordinators), 'spool_consumer_group_lag_sum', {
      group: groupId,
    });
  }

  async function consumeAll(expected: number): Promise<void> {
    const consumer = spool.consumer({ groupId, autoOffsetReset: 'earliest' });
    let consumed = 0;
    try {
      await consumer.subscribe({ topic });
      await consumer.run({
        eachMessage: async () => {
          consumed += 1;
        },
      });
      await vi.waitFor(() => expect(consumed).toBeGreaterThanOrEqual(expected), {
        timeout: 20_000,
        interval: 50,
      });
      await eventually(async () => expect(await lagSum()).toBe(0), 15_000);
    } finally {
      await consumer.disconnect();
    }
  }

  it('reports the records a group has not consumed, and 0 after it consumes them', async () => {
    await consumeAll(recordCount);
    const producer = spool.producer({ lingerMs: 5 });
    try {
      await producer.send({
        topic,
        messages: Array.from({ length: 50 }, (_, index) => ({ value: `later-${index}` })),
      });
    } finally {
      await producer.disconnect();
    }
    await eventually(async () => expect(await lagSum()).toBe(50), 15_000);
    await consumeAll(50);
    const coordinators = processes.filter((entry) => entry.role === 'coordinator');
    const scrapes = await scrapeEach(coordinators);
    expect(sumOf(scrapes, 'spool_consumer_group_lag', { group: groupId })).toBe(0);
    expect(sumOf(scrapes, 'spool_consumer_group_lag_max', { group: groupId })).toBe(0);
    expect(sumOf(scrapes, 'spool_offset_commits_total', { group: groupId })).toBeGreaterThan(0);
  });
});
