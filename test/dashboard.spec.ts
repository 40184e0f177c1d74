// Proves that every panel of the Grafana dashboard (deploy/grafana/spool-overview.json) shows
// something in normal use: a real Prometheus (Debian's `prometheus`, storage in a temp folder,
// on a free 127.0.0.1 port, scraping every second) scrapes every process of a real `spool dev`
// cluster (the ports come from cluster.json) while a producer writes and a consumer group reads
// (so the group has members, commits and lag), and each panel query, with Grafana's variables
// replaced by a concrete window, must return at least one series with a number (not NaN). A
// panel that only shows faults (offline partitions, errors) must still return 0, not nothing:
// no panel is exempt.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Spool } from '@spool/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reservedLoopbackPort } from './support/loopback-ports';
import { workspaceRoot } from './support/service-process';

interface ClusterProcess {
  role: 'controller' | 'storage-node' | 'coordinator' | 'gateway';
  id: number;
  pid: number;
  ports: { grpc: number; metrics: number; data?: number };
}

interface PanelQuery {
  readonly panel: string;
  readonly legend: string;
  /** The query as the dashboard has it. */
  readonly dashboardExpression: string;
  /** The query Prometheus runs: Grafana's variables replaced. */
  readonly expression: string;
}

interface QueryResult {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');
const dashboardPath = path.join(workspaceRoot, 'deploy/grafana/spool-overview.json');
const workDirectory = mkdtempSync(path.join(tmpdir(), 'spool-dashboard-'));
const dataDirectory = path.join(workDirectory, 'cluster');
const topic = 'dashboard';
const groupId = 'dashboard-readers';
const scrapeIntervalSeconds = 1;
/**
 * What $__rate_interval becomes: Grafana makes it at least four scrape intervals, so that a rate
 * has two samples even when a scrape comes late.
 */
const rateWindow = `${4 * scrapeIntervalSeconds + 1}s`;
/** How long the panels have to show something once traffic flows. */
const panelsDeadlineMs = 40_000;
/** One send per interval: a steady trickle, not a benchmark. */
const produceIntervalMs = 20;

let dev: ChildProcess | undefined;
let devOutput = '';
let processes: ClusterProcess[] = [];
let prometheus: ChildProcess | undefined;
let prometheusOutput = '';
let prometheusPort = 0;
let spool: Spool | undefined;
let producing = false;
let producerLoop: Promise<void> | undefined;
let producerFailure: unknown;
let acknowledged = 0;
let consumed = 0;

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

/** Sends `signal` and waits up to `waitMs` for the exit; the exit code, or undefined if none. */
async function signalAndWait(
  child: ChildProcess,
  signal: NodeJS.Signals,
  waitMs: number,
): Promise<number | null | undefined> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill(signal);
  return Promise.race([exited, sleep(waitMs).then(() => undefined)]);
}

/** Kills a cluster process spool dev left running, if that pid is still a Spool process. */
function killLeftover(pid: number): void {
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('/dist/main.js')) return;
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Every panel's queries, with $__rate_interval and the like made concrete. */
function panelQueries(): PanelQuery[] {
  const dashboard = JSON.parse(readFileSync(dashboardPath, 'utf8')) as {
    panels: Array<{ title: string; targets?: Array<{ expr: string; legendFormat?: string }> }>;
  };
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      panel: panel.title,
      legend: target.legendFormat ?? '',
      dashboardExpression: target.expr,
      expression: target.expr
        .replaceAll('$__rate_interval', rateWindow)
        .replaceAll('$__interval', rateWindow)
        .replaceAll('$__range', rateWindow),
    })),
  );
}

/** The path of the prometheus binary, or a failure that says how to install it. */
function prometheusBinary(): string {
  const found = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' });
  const binary = found.stdout.trim();
  if (found.status !== 0 || binary === '') {
    throw new Error(
      'prometheus is not installed: the dashboard test runs every panel query against a real ' +
        "Prometheus. Install Debian's package (as root: apt-get install -y prometheus; " +
        'test/support/install-test-tools.sh does it) and run again',
    );
  }
  return binary;
}

async function startCluster(): Promise<void> {
  dev = spawn(
    process.execPath,
    [cliEntryPoint, 'dev', '--gateway-port', '0', '--kafka-port', '0', '--data-dir', dataDirectory],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  dev.stdout!.on('data', (chunk: Buffer) => (devOutput += chunk.toString()));
  dev.stderr!.on('data', (chunk: Buffer) => (devOutput += chunk.toString()));
  // Ready when cluster.json lists the processes and every one of them answers /readyz.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && dev.exitCode === null) {
    try {
      const listed = (
        JSON.parse(readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8')) as {
          processes: ClusterProcess[];
        }
      ).processes;
      const answers = await Promise.all(
        listed.map((entry) =>
          fetch(`http://127.0.0.1:${entry.ports.metrics}/readyz`, {
            signal: AbortSignal.timeout(2_000),
          }).then((response) => response.status),
        ),
      );
      if (listed.length > 0 && answers.every((status) => status === 200)) {
        processes = listed;
        return;
      }
    } catch {
      // Not written yet, or a process not listening yet.
    }
    await sleep(200);
  }
  throw new Error(`spool dev did not become ready within 60 s:\n${devOutput}`);
}

async function startPrometheus(): Promise<void> {
  const binary = prometheusBinary();
  // One job per service, named spool-<role> as the alert rules expect of scrape jobs.
  const jobs = new Map<string, string[]>();
  for (const entry of processes) {
    const targets = jobs.get(entry.role) ?? [];
    targets.push(`127.0.0.1:${entry.ports.metrics}`);
    jobs.set(entry.role, targets);
  }
  const config = [
    'global:',
    `  scrape_interval: ${scrapeIntervalSeconds}s`,
    `  scrape_timeout: ${scrapeIntervalSeconds}s`,
    `  evaluation_interval: ${scrapeIntervalSeconds}s`,
    'scrape_configs:',
    ...[...jobs].flatMap(([role, targets]) => [
      `  - job_name: spool-${role}`,
      '    static_configs:',
      `      - targets: [${targets.map((target) => `'${target}'`).join(', ')}]`,
    ]),
    '',
  ].join('\n');
  const configPath = path.join(workDirectory, 'prometheus.yml');
  writeFileSync(configPath, config);
  prometheusPort = await reservedLoopbackPort();
  prometheus = spawn(
    binary,
    [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${path.join(workDirectory, 'prometheus-data')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (chunk: Buffer) => (prometheusOutput += chunk.toString()));
  prometheus.stderr!.on('data', (chunk: Buffer) => (prometheusOutput += chunk.toString()));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && prometheus.exitCode === null) {
    try {
      const response = await fetch(`http://127.0.0.1:${prometheusPort}/-/ready`);
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  throw new Error(`prometheus did not become ready within 30 s:\n${prometheusOutput}`);
}

async function query(expression: string): Promise<QueryResult[]> {
  const response = await fetch(
    `http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(expression)}`,
    { signal: AbortSignal.timeout(5_000) },
  );
  const body = (await response.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: QueryResult[] };
  };
  if (body.status !== 'success') throw new Error(`${expression}: ${body.error}`);
  if (body.data!.resultType !== 'vector') {
    throw new Error(`${expression}: a ${body.data!.resultType}, not an instant vector`);
  }
  return body.data!.result;
}

/** The series a panel would draw: those with a number (NaN is a gap in Grafana). */
function drawable(results: readonly QueryResult[]): QueryResult[] {
  return results.filter((result) => !Number.isNaN(Number(result.value[1])));
}

/** A producer sending a few keyed records every produceIntervalMs until `producing` is off. */
function startProducing(client: Spool): void {
  const producer = client.producer({ lingerMs: 5 });
  producing = true;
  producerLoop = (async () => {
    let sequence = 0;
    try {
      while (producing) {
        const messages = Array.from({ length: 10 }, () => ({
          key: `key-${sequence % 12}`,
          value: `record-${sequence++}`,
        }));
        acknowledged += (await producer.send({ topic, messages })).length;
        await sleep(produceIntervalMs);
      }
    } catch (error) {
      producerFailure = error;
    }
  })();
}

beforeAll(async () => {
  prometheusBinary();
  await startCluster();
  await startPrometheus();
  const gateway = processes.find((entry) => entry.role === 'gateway')!;
  spool = new Spool({ brokers: [`127.0.0.1:${gateway.ports.grpc}`], clientId: 'dashboard-spec' });
  const admin = spool.admin({ requestTimeoutMs: 10_000 });
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 3 }] });
  } finally {
    await admin.close();
  }
  startProducing(spool);
  const consumer = spool.consumer({ groupId, autoOffsetReset: 'earliest' });
  await consumer.subscribe({ topic });
  await consumer.run({
    eachMessage: async () => {
      consumed += 1;
    },
  });
}, 120_000);

afterAll(async () => {
  let devExitCode: number | null | undefined = null;
  try {
    producing = false;
    await producerLoop;
    // The producer, the consumer and the admin.
    await spool?.close();
    if (prometheus !== undefined) await signalAndWait(prometheus, 'SIGTERM', 10_000);
    if (dev !== undefined) devExitCode = await signalAndWait(dev, 'SIGINT', 30_000);
  } finally {
    prometheus?.kill('SIGKILL');
    dev?.kill('SIGKILL');
    // Had spool dev not stopped its processes, they are stopped here by their pids.
    if (devExitCode !== 0) for (const entry of processes) killLeftover(entry.pid);
    rmSync(workDirectory, { recursive: true, force: true });
  }
  if (dev !== undefined) {
    expect(devExitCode, `spool dev did not stop cleanly on SIGINT:\n${devOutput}`).toBe(0);
  }
}, 90_000);

it('shows every panel of the dashboard with data while a cluster serves traffic', async () => {
  const queries = panelQueries();
  expect(queries.length).toBeGreaterThan(20);
  for (const entry of queries) {
    expect(entry.expression, `${entry.panel}: a Grafana variable left`).not.toMatch(/\$/);
  }
  let empty: PanelQuery[] = queries;
  const deadline = Date.now() + panelsDeadlineMs;
  while (empty.length > 0 && Date.now() < deadline) {
    await sleep(1_000);
    const results = await Promise.all(empty.map((entry) => query(entry.expression)));
    empty = empty.filter((_, index) => drawable(results[index]!).length === 0);
  }
  // Traffic really flowed the whole time: the panels saw a working cluster, not a stalled one.
  expect(producerFailure).toBeUndefined();
  expect(acknowledged).toBeGreaterThan(0);
  expect(consumed).toBeGreaterThan(0);
  expect(
    empty.map((entry) => `${entry.panel} (${entry.legend}): ${entry.dashboardExpression}`),
    'panels that draw nothing in normal use',
  ).toEqual([]);
  // The consumers' latency is the Consume stream's, the path the SDK and the CLI read through.
  const consumeLatency = queries.find((entry) => entry.panel.startsWith('Consumer fetch latency'));
  expect(consumeLatency, 'the dashboard has a consumer fetch latency panel').toBeDefined();
  const drawn = drawable(await query(consumeLatency!.expression));
  expect(drawn.map((result) => result.metric['api'])).toContain('Consume');
}, 60_000);
