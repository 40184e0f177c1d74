// The chart on a real Kubernetes cluster (test/k8s/up.sh) with the image `npm run image:build`
// made, loaded by `npm run k8s:load-image`. Traffic comes from outside the cluster: this process
// runs on the host and reaches the gateway through its Service (the ClusterIP, which kube-proxy
// translates on the host exactly as it does a NodePort), with the SDK and the `spool` CLI.
//
// The chart's defaults are secure: TLS between every component and to etcd, certificates from
// the chart's hook Job, the gateway SASL_SSL with ACLs, the admin's password in a Secret. This
// process is the admin (SCRAM-SHA-512 over TLS, the cluster CA from a component's Secret).
//
// The steps run in order, each on what the previous left: install (every pod Ready, `helm test`),
// plaintext, anonymous and wrong-password clients refused on gRPC and on the Kafka listener while
// kcat as the admin produces and consumes over SASL_SSL,
// 100,000 records with acks=all into a 6-partition RF3 topic and back, a storage pod deleted and
// a storage process SIGKILLed while a producer runs, the active controller's pod and an etcd pod
// deleted, a `helm upgrade` rolling every Spool workload under a fixed-rate producer, storage
// scaled 3 → 4 under a producer (a partition moved onto the new broker), the chart's scale-in
// guard refusing 4 → 3 until `spool broker decommission 3` has emptied the broker, then 4 → 3
// under a producer, Prometheus scraping the pods the chart annotates, `helm uninstall`
// keeping the volumes. Each step prints what it measured; the last line is one JSON object.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  readClientProperties,
  Spool,
  type Admin,
  type Producer,
  type SpoolConfig,
} from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-process';
import { reservedLoopbackPort } from '../support/loopback-ports';
import { workspaceRoot } from '../support/service-process';

const namespace = 'spool-e2e';
const release = 'spool';
const kubeconfig = path.join(workspaceRoot, '.k8s/kubeconfig');
const binaries = path.join(
  process.env['SPOOL_K8S_CACHE'] ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(homedir(), '.cache'), 'spool/k8s'),
  'bin',
);
const containerdSocket = path.join(workspaceRoot, '.k8s/run/containerd/containerd.sock');
/**
 * The gateway Service's cluster IP, pinned so that its certificate can name it: this process
 * reaches the gateway from the host by that address (no cluster DNS here), and Kafka clients are
 * told it as the advertised host.
 */
const gatewayClusterIp = '198.19.0.90';
/**
 * Only the local images, their pull policy and the gateway's address: everything else is the
 * chart's default, TLS and authentication on.
 */
const installValues = [
  'image.pullPolicy=Never',
  'etcd.image.repository=localhost/etcd',
  'etcd.image.pullPolicy=Never',
  `gateway.service.clusterIP=${gatewayClusterIp}`,
  `gateway.kafka.advertisedHost=${gatewayClusterIp}`,
];
const podsReadyLimitMs = 180_000;
const bulkRecords = 100_000;
const bulkTopic = 'e2e-bulk';
const faultTopic = 'e2e-faults';
const fullTopic = 'e2e-volume-full';
const kcatTopic = 'e2e-kcat';
/** The claim spool-storage-3 finds when storage scales to 4: on spool-small, a small tmpfs. */
const smallClaim = `data-${release}-storage-3`;
/** The producer's rate during faults and the roll: fixed, so latency is the service's. */
const steadyRecordsPerSecond = 200;
const rollLatencyTargetMs = 5_000;

const scratch = mkdtempSync(path.join(tmpdir(), 'spool-k8s-suite-'));
const report = {
  podsReadySeconds: -1,
  lost: 0,
  duplicated: 0,
  produceErrors: 0,
  rollMaxProduceLatencyMs: -1,
  steps: {} as Record<string, boolean>,
};
let helmPath = '';
let gatewayAddress = '';
/** The admin's client.properties (the CA, SASL_SSL, the admin user), written after install. */
const clientProperties = path.join(scratch, 'client.properties');
const caFile = path.join(scratch, 'ca.crt');
let adminPassword = '';
let spool: Spool;
let admin: Admin;
let prometheus: ChildProcess | undefined;
/**
 * SPOOL_K8S_POD_LOGS=<dir>: every container's log, followed from its start into <dir>/<pod>.log,
 * so the logs of pods a step deletes or rolls are kept for a look afterwards.
 */
const podLogDirectory = process.env['SPOOL_K8S_POD_LOGS'];
const podLogFollowers = new Map<string, ChildProcess>();
let podLogTimer: NodeJS.Timeout | undefined;

function followPodLogs(directory: string): void {
  mkdirSync(directory, { recursive: true });
  const poll = async (): Promise<void> => {
    const { stdout } = await kubectl(['get', 'pods', '-o', 'json']).catch(() => ({ stdout: '' }));
    if (stdout === '') return;
    for (const current of (JSON.parse(stdout) as { items: PodStatus[] }).items) {
      const key = current.metadata.uid;
      const running = current.status.containerStatuses?.[0]?.containerID;
      if (running === undefined || podLogFollowers.has(key + running)) continue;
      const follower = spawn(
        path.join(binaries, 'kubectl'),
        [
          '--kubeconfig',
          kubeconfig,
          '--namespace',
          namespace,
          'logs',
          '-f',
          '--timestamps',
          current.metadata.name,
        ],
        {
          stdio: [
            'ignore',
            openSync(path.join(directory, `${current.metadata.name}.log`), 'a'),
            'ignore',
          ],
        },
      );
      podLogFollowers.set(key + running, follower);
    }
  };
  podLogTimer = setInterval(() => void poll(), 1_000);
}

interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  command: string,
  args: readonly string[],
  timeoutMs = 120_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            new Error(
              `${path.basename(command)} ${args.join(' ')} failed: ${error.message}\n${stderr}`,
            ),
          );
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
  });
}

function kubectl(args: readonly string[], timeoutMs?: number): Promise<RunResult> {
  return run(
    path.join(binaries, 'kubectl'),
    ['--kubeconfig', kubeconfig, '--namespace', namespace, ...args],
    timeoutMs,
  );
}

function helm(args: readonly string[], timeoutMs = 600_000): Promise<RunResult> {
  return run(helmPath, ['--kubeconfig', kubeconfig, '--namespace', namespace, ...args], timeoutMs);
}

/** The spool CLI as the admin, through the gateway Service. */
function cli(argv: readonly string[], input = '') {
  return runCli([...argv, '--command-config', clientProperties], input);
}

/**
 * kcat as the admin over SASL_SSL (SCRAM-SHA-512) at the gateway's Kafka port; `overrides` are
 * further -X settings, which win. Resolves with stdout; rejects with stderr on a failure.
 */
function kcat(
  args: readonly string[],
  input?: string,
  overrides: readonly string[] = [],
): Promise<string> {
  const settings = [
    'security.protocol=SASL_SSL',
    'sasl.mechanisms=SCRAM-SHA-512',
    'sasl.username=admin',
    `sasl.password=${adminPassword}`,
    `ssl.ca.location=${caFile}`,
    ...overrides,
  ];
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kcat',
      [
        `-b`,
        `${gatewayClusterIp}:9092`,
        ...settings.flatMap((setting) => ['-X', setting]),
        ...args,
      ],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kcat ${args.join(' ')} failed: ${stderr}`));
        else resolve(stdout);
      },
    );
    child.stdin!.end(input ?? '');
  });
}

/** A Secret's key, decoded. */
async function secretValue(name: string, key: string): Promise<string> {
  const { stdout } = await kubectl([
    'get',
    'secret',
    name,
    '-o',
    `jsonpath={.data.${key.replace(/\./g, '\\.')}}`,
  ]);
  return Buffer.from(stdout.trim(), 'base64').toString('utf8');
}

function log(step: string, message: string): void {
  process.stdout.write(`[k8s ${step}] ${message}\n`);
}

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

/** Polls `check` every 500 ms until it returns a value other than undefined. */
async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(500);
  }
  throw new Error(`no ${what} after ${timeoutMs} ms${lastError ? `: ${String(lastError)}` : ''}`);
}

interface PodStatus {
  readonly metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  readonly status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      containerID?: string;
      restartCount: number;
      ready: boolean;
      state?: { running?: unknown; waiting?: unknown; terminated?: unknown };
    }[];
  };
}

async function releasePods(component?: string): Promise<PodStatus[]> {
  const selector = [`app.kubernetes.io/instance=${release}`];
  if (component !== undefined) selector.push(`app.kubernetes.io/component=${component}`);
  const { stdout } = await kubectl(['get', 'pods', '-l', selector.join(','), '-o', 'json']);
  return (JSON.parse(stdout) as { items: PodStatus[] }).items.filter(
    (pod) => pod.metadata.labels?.['app.kubernetes.io/component'] !== 'test',
  );
}

function isReady(pod: PodStatus): boolean {
  return (
    pod.status.conditions?.some(
      (condition) => condition.type === 'Ready' && condition.status === 'True',
    ) ?? false
  );
}

async function pod(name: string): Promise<PodStatus | undefined> {
  try {
    return JSON.parse((await kubectl(['get', 'pod', name, '-o', 'json'])).stdout) as PodStatus;
  } catch {
    return undefined;
  }
}

/** Waits until every pod of the release is Ready (and there are `expected` of them). */
async function waitAllReady(expected: number, timeoutMs: number): Promise<void> {
  await waitFor(`${expected} Ready pods`, timeoutMs, async () => {
    const pods = await releasePods();
    return pods.length === expected && pods.every(isReady) ? true : undefined;
  });
}

/** A producer at a fixed rate whose acknowledged values are remembered, with its errors. */
class SteadyProducer {
  readonly acknowledged = new Set<string>();
  errors = 0;
  maxLatencyMs = 0;
  /** When the slowest send left (epoch ms), to place it among the pods' transitions. */
  slowestSentAt = 0;
  private readonly producer: Producer;
  private running = true;
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;
  private sequence = 0;
  private readonly runId = randomBytes(4).toString('hex');
  readonly errorMessages: string[] = [];

  constructor(
    private readonly topic: string,
    private readonly recordsPerSecond: number,
    /** Each value padded with dots to this size (readTopic strips them). */
    private readonly valueBytes = 0,
  ) {
    this.producer = spool.producer({ acks: 'all', lingerMs: 5 });
  }

  start(): this {
    const tickMs = 50;
    const perTick = Math.max(1, Math.round((this.recordsPerSecond * tickMs) / 1000));
    this.loop = (async () => {
      while (this.running) {
        const messages = Array.from({ length: perTick }, () => ({
          key: String(this.sequence % 64),
          value: `${this.runId}-${this.sequence++}`.padEnd(this.valueBytes, '.'),
        }));
        const sentAt = Date.now();
        const send = this.producer
          .send({ topic: this.topic, messages })
          .then(() => {
            const latencyMs = Date.now() - sentAt;
            if (latencyMs > this.maxLatencyMs) {
              this.maxLatencyMs = latencyMs;
              this.slowestSentAt = sentAt;
            }
            for (const message of messages) {
              this.acknowledged.add(message.value.replace(/\.+$/, ''));
            }
          })
          .catch((error: unknown) => {
            this.errors++;
            if (this.errorMessages.length < 5) this.errorMessages.push(String(error));
          })
          .finally(() => this.inFlight.delete(send));
        this.inFlight.add(send);
        await sleep(tickMs);
      }
    })();
    return this;
  }

  /** Stops sending, waits for what is in flight, and returns the acknowledged values. */
  async stop(): Promise<Set<string>> {
    this.running = false;
    await this.loop;
    await Promise.all([...this.inFlight]);
    await this.producer.disconnect();
    return this.acknowledged;
  }
}

/**
 * The release's pods' transitions (created, Ready, not Ready, gone), polled every 500 ms, so a
 * step can say what was rolling when its producer stalled.
 */
class PodTimeline {
  readonly transitions: { atMs: number; pod: string; state: string }[] = [];
  private readonly states = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private primed = false;

  start(): this {
    const poll = async (): Promise<void> => {
      if (this.polling) return;
      this.polling = true;
      try {
        const pods = await releasePods().catch(() => undefined);
        if (pods === undefined) return;
        const atMs = Date.now();
        const seen = new Set<string>();
        for (const current of pods) {
          seen.add(current.metadata.name);
          const state = current.metadata.deletionTimestamp
            ? 'terminating'
            : isReady(current)
              ? 'ready'
              : 'not ready';
          if (this.states.get(current.metadata.name) !== state) {
            // The first poll is the starting point, not a transition.
            if (this.primed) this.transitions.push({ atMs, pod: current.metadata.name, state });
            this.states.set(current.metadata.name, state);
          }
        }
        for (const name of [...this.states.keys()]) {
          if (seen.has(name)) continue;
          this.states.delete(name);
          this.transitions.push({ atMs, pod: name, state: 'gone' });
        }
        this.primed = true;
      } finally {
        this.polling = false;
      }
    };
    void poll();
    this.timer = setInterval(() => void poll(), 500);
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The transitions from `fromMs` to `toMs`, each relative to `originMs` in seconds. */
  around(originMs: number, fromMs: number, toMs: number): string {
    return this.transitions
      .filter((transition) => transition.atMs >= fromMs && transition.atMs <= toMs)
      .map(
        (transition) =>
          `${((transition.atMs - originMs) / 1000).toFixed(1)} s ${transition.pod} ${transition.state}`,
      )
      .join(', ');
  }
}

/** Every value in `topic` (all partitions, from the start), counted. */
async function readTopic(
  topic: string,
  expected: number,
  timeoutMs: number,
): Promise<Map<string, number>> {
  const offsets = await admin.fetchTopicOffsets(topic);
  const total = offsets.reduce((sum, partition) => sum + Number(partition.high), 0);
  const counts = new Map<string, number>();
  let received = 0;
  const consumer = spool.consumer({ requestTimeoutMs: 10_000 });
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        received++;
        const value = message.value === null ? '' : message.value.toString().replace(/\.+$/, '');
        counts.set(value, (counts.get(value) ?? 0) + 1);
      },
    });
    await waitFor(`${Math.max(total, expected)} records of ${topic}`, timeoutMs, async () =>
      received >= Math.max(total, expected) ? true : undefined,
    );
  } finally {
    await consumer.disconnect();
  }
  return counts;
}

/** Reads the topic back and counts lost (acknowledged, absent) and duplicated records. */
async function verify(
  step: string,
  topic: string,
  acknowledged: Set<string>,
): Promise<{ lost: number; duplicated: number }> {
  const counts = await readTopic(topic, acknowledged.size, 180_000).catch(async () => {
    // Fewer records than acknowledged: read what is there, to count the loss.
    return readTopic(topic, 0, 60_000);
  });
  let lost = 0;
  let duplicated = 0;
  for (const value of acknowledged) {
    const count = counts.get(value) ?? 0;
    if (count === 0) lost++;
    if (count > 1) duplicated += count - 1;
  }
  report.lost += lost;
  report.duplicated += duplicated;
  log(step, `${acknowledged.size} acknowledged, ${lost} lost, ${duplicated} duplicated`);
  return { lost, duplicated };
}

/** The host pid of a pod's first container, from containerd. */
async function containerPid(podName: string): Promise<number> {
  const current = await pod(podName);
  const id = current?.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
  if (id === undefined) throw new Error(`pod ${podName} has no running container`);
  const { stdout } = await run('ctr', [
    '--address',
    containerdSocket,
    '--namespace',
    'k8s.io',
    'tasks',
    'ls',
  ]);
  const line = stdout.split('\n').find((candidate) => candidate.startsWith(`${id} `));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || pid <= 0)
    throw new Error(`no task for container ${id} of ${podName}`);
  return pid;
}

/** Every partition of `topic` has all its replicas in its ISR. */
async function fullyReplicated(topic: string): Promise<boolean> {
  const [description] = await admin.describeTopics({ topics: [topic] });
  return (
    description !== undefined &&
    description.partitions.every((partition) => partition.isr.length === partition.replicas.length)
  );
}

/** Runs a step; its result goes into the report whatever happens. */
function step(name: string, body: () => Promise<void>, timeoutMs?: number): void {
  it(
    name,
    async () => {
      report.steps[name] = false;
      const started = Date.now();
      await body();
      report.steps[name] = true;
      log(name, `passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
    timeoutMs,
  );
}

beforeAll(async () => {
  if (!existsSync(kubeconfig)) {
    throw new Error(
      `no cluster: ${kubeconfig} is missing; run npm run k8s:up and npm run k8s:load-image`,
    );
  }
  helmPath = (
    await run('bash', [path.join(workspaceRoot, 'test/support/ensure-helm.sh')], 900_000)
  ).stdout.trim();
  if (podLogDirectory !== undefined) followPodLogs(podLogDirectory);
  // A previous run's release and volumes, if it stopped half-way.
  await helm(['uninstall', release, '--wait', '--ignore-not-found']).catch(() => undefined);
  await kubectl(['delete', 'pvc', '--all', '--wait=true'], 120_000).catch(() => undefined);
});

afterAll(async () => {
  await admin?.disconnect().catch(() => undefined);
  prometheus?.kill('SIGTERM');
  clearInterval(podLogTimer);
  for (const follower of podLogFollowers.values()) follower.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
  await helm(['uninstall', release, '--wait', '--ignore-not-found']).catch(() => undefined);
  await run(
    path.join(binaries, 'kubectl'),
    [
      '--kubeconfig',
      kubeconfig,
      'delete',
      'namespace',
      namespace,
      '--ignore-not-found',
      '--wait=true',
    ],
    180_000,
  ).catch(() => undefined);
  process.stdout.write(`${JSON.stringify(report)}\n`);
});

describe.sequential('Spool on Kubernetes', () => {
  step('bad-values-refused', async () => {
    // A values file with one bad setting: the chart's values.schema.json refuses it before
    // anything reaches the cluster, and the message names the setting.
    const badValues = path.join(scratch, 'bad-values.yaml');
    writeFileSync(badValues, 'storageNode:\n  replicas: three\n');
    const refused = await helm([
      'install',
      `${release}-bad`,
      path.join(workspaceRoot, 'helm/spool'),
      '--create-namespace',
      '--dry-run=server',
      '-f',
      badValues,
    ]).then(
      () => undefined,
      (error: unknown) => String(error),
    );
    expect(refused, 'helm install accepted storageNode.replicas: three').toBeDefined();
    expect(refused).toMatch(/values don't meet the specifications of the schema/);
    expect(refused).toMatch(/storageNode\.?replicas|storageNode\/replicas/);
    const releases = (await helm(['list', '--all', '-q'])).stdout.trim();
    expect(releases).not.toContain(`${release}-bad`);
    log(
      'bad-values-refused',
      `helm install refused it: ${refused!
        .split('\n')
        .find((line) => line.includes('replicas'))
        ?.trim()}`,
    );
  });

  step('install', async () => {
    const started = Date.now();
    await helm([
      'install',
      release,
      path.join(workspaceRoot, 'helm/spool'),
      '--create-namespace',
      ...installValues.flatMap((value) => ['--set', value]),
    ]);
    await waitAllReady(12, podsReadyLimitMs);
    report.podsReadySeconds = Math.round((Date.now() - started) / 100) / 10;
    log('install', `12 pods Ready ${report.podsReadySeconds} s after helm install`);
    const { stdout } = await kubectl([
      'get',
      'service',
      `${release}-gateway`,
      '-o',
      'jsonpath={.spec.clusterIP}',
    ]);
    expect(stdout.trim()).toBe(gatewayClusterIp);
    gatewayAddress = `${gatewayClusterIp}:9090`;
    // The chart's defaults: TLS under its cluster CA, SCRAM, the admin's password in a Secret.
    adminPassword = await secretValue(`${release}-admin`, 'password');
    writeFileSync(caFile, await secretValue(`${release}-gateway-tls`, 'ca.crt'));
    writeFileSync(
      clientProperties,
      [
        `spool.gateway=${gatewayAddress}`,
        'security.protocol=SASL_SSL',
        'sasl.mechanism=SCRAM-SHA-512',
        'sasl.username=admin',
        `sasl.password=${adminPassword}`,
        `ssl.ca.location=${caFile}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    // SPOOL_K8S_SDK_LOG_LEVEL=debug shows each produce retry and its error code.
    spool = new Spool({
      ...readClientProperties(clientProperties),
      clientId: 'k8s-suite',
      logLevel: (process.env['SPOOL_K8S_SDK_LOG_LEVEL'] as 'debug' | undefined) ?? 'warn',
    });
    admin = spool.admin({ requestTimeoutMs: 15_000 });
    await admin.connect();
    await helm(['test', release, '--timeout', '3m'], 240_000);
    log('install', `helm test passed; gateway Service at ${gatewayAddress}`);
  });

  step('secure-by-default', async () => {
    // gRPC: plaintext is refused at the handshake, TLS without credentials and a wrong password
    // are refused; the admin (every step above and below) is served.
    const ca = readFileSync(caFile);
    const attempts: Record<string, Partial<SpoolConfig>> = {
      plaintext: {},
      'TLS without credentials': { ssl: { ca } },
      'a wrong password': {
        ssl: { ca },
        sasl: { mechanism: 'scram-sha-512', username: 'admin', password: 'not-the-password' },
      },
    };
    const refusals: string[] = [];
    for (const [name, config] of Object.entries(attempts)) {
      const client = new Spool({
        brokers: [gatewayAddress],
        clientId: 'k8s-suite-refused',
        logLevel: 'silent',
        ...config,
      });
      const error = await client
        .admin({ requestTimeoutMs: 5_000 })
        .listTopics()
        .then(
          () => undefined,
          (failure: unknown) => failure as { code?: string; message: string },
        );
      await client.close();
      expect(error, `${name} was served`).toBeDefined();
      refusals.push(`${name}: ${error!.code ?? error!.message.slice(0, 80)}`);
    }
    expect(refusals[1]).toMatch(/UNAUTHENTICATED|SASL_AUTHENTICATION_FAILED/);
    expect(refusals[2]).toMatch(/UNAUTHENTICATED|SASL_AUTHENTICATION_FAILED/);
    log('secure-by-default', `gRPC refused ${refusals.join('; ')}`);

    // The Kafka listener: kcat (librdkafka) as the admin over SASL_SSL with SCRAM-SHA-512, at the
    // advertised host the certificate names; plaintext and a wrong password get nothing.
    await admin.createTopics({
      topics: [{ topic: kcatTopic, numPartitions: 1, replicationFactor: 3 }],
    });
    const values = ['kcat-one', 'kcat-two', 'kcat-three'];
    await kcat(['-P', '-t', kcatTopic], `${values.join('\n')}\n`);
    const consumed = await kcat(['-C', '-t', kcatTopic, '-o', 'beginning', '-e', '-q']);
    expect(consumed.trim().split('\n')).toEqual(values);
    const plaintextKafka = await kcat(['-L', '-m', '5'], undefined, ['security.protocol=PLAINTEXT'])
      .then(() => undefined)
      .catch((error: Error) => error.message);
    expect(plaintextKafka, 'kcat PLAINTEXT was served').toBeDefined();
    const wrongPassword = await kcat(['-L', '-m', '5'], undefined, ['sasl.password=wrong'])
      .then(() => undefined)
      .catch((error: Error) => error.message);
    expect(wrongPassword, 'kcat with a wrong password was served').toMatch(/[Aa]uthentication/);
    log(
      'secure-by-default',
      `kcat SASL_SSL SCRAM-SHA-512 as admin produced and consumed ${values.length} records at ` +
        `${gatewayClusterIp}:9092; PLAINTEXT and a wrong password refused`,
    );
  });

  step('bulk-produce-consume', async () => {
    const created = await cli([
      'topic',
      'create',
      bulkTopic,
      '--partitions',
      '6',
      '--replication-factor',
      '3',
    ]);
    expect(created.exitCode, created.stderr).toBe(0);
    const producer = spool.producer({ acks: 'all', lingerMs: 10 });
    const values: string[] = [];
    const started = Date.now();
    const batch = 1_000;
    const sends: Promise<unknown>[] = [];
    for (let first = 0; first < bulkRecords; first += batch) {
      const messages = Array.from({ length: batch }, (_, index) => {
        const value = `bulk-${first + index}`;
        values.push(value);
        return { key: String(first + index), value };
      });
      sends.push(producer.send({ topic: bulkTopic, messages }));
      if (sends.length >= 8) await sends.shift();
    }
    await Promise.all(sends);
    await producer.disconnect();
    const producedSeconds = (Date.now() - started) / 1000;
    log(
      'bulk-produce-consume',
      `${bulkRecords} records acks=all in ${producedSeconds.toFixed(1)} s (${Math.round(bulkRecords / producedSeconds)}/s)`,
    );
    const readStarted = Date.now();
    const { lost, duplicated } = await verify('bulk-produce-consume', bulkTopic, new Set(values));
    log('bulk-produce-consume', `read back in ${((Date.now() - readStarted) / 1000).toFixed(1)} s`);
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    const described = await cli(['topic', 'describe', bulkTopic]);
    expect(described.exitCode, described.stderr).toBe(0);
  });

  step('storage-pod-delete', async () => {
    await admin.createTopics({
      topics: [{ topic: faultTopic, numPartitions: 6, replicationFactor: 3 }],
    });
    const victim = `${release}-storage-1`;
    const before = await pod(victim);
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await sleep(3_000);
    const deleted = Date.now();
    await kubectl(['delete', 'pod', victim, '--wait=false']);
    await waitFor(`${victim} recreated and Ready`, 240_000, async () => {
      const current = await pod(victim);
      return current && current.metadata.uid !== before?.metadata.uid && isReady(current)
        ? true
        : undefined;
    });
    log(
      'storage-pod-delete',
      `${victim} back and Ready ${((Date.now() - deleted) / 1000).toFixed(1)} s after the delete`,
    );
    await waitFor('every replica in its ISR', 120_000, async () =>
      (await fullyReplicated(faultTopic)) ? true : undefined,
    );
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'storage-pod-delete',
      `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('storage-pod-delete', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
  });

  step('storage-kill-9', async () => {
    const victim = `${release}-storage-2`;
    const restartsBefore = (await pod(victim))?.status.containerStatuses?.[0]?.restartCount ?? 0;
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await sleep(3_000);
    const pid = await containerPid(victim);
    const killed = Date.now();
    process.kill(pid, 'SIGKILL');
    await waitFor(`${victim} restarted in place and Ready`, 240_000, async () => {
      const current = await pod(victim);
      const restarts = current?.status.containerStatuses?.[0]?.restartCount ?? 0;
      return current && restarts > restartsBefore && isReady(current) ? true : undefined;
    });
    log(
      'storage-kill-9',
      `pid ${pid} SIGKILLed; container restarted and Ready after ${((Date.now() - killed) / 1000).toFixed(1)} s`,
    );
    await waitFor('every replica in its ISR', 120_000, async () =>
      (await fullyReplicated(faultTopic)) ? true : undefined,
    );
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'storage-kill-9',
      `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('storage-kill-9', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
  });

  step('kill-during-start-up', async () => {
    // A storage pod whose process dies while it starts (its logs opening, its replicas catching
    // up, not Ready yet): the container restarts in place and the pod becomes Ready.
    const victim = `${release}-storage-0`;
    const before = await pod(victim);
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await sleep(2_000);
    await kubectl(['delete', 'pod', victim, '--wait=false']);
    const starting = await waitFor(`${victim} recreated and starting`, 120_000, async () => {
      const current = await pod(victim);
      const container = current?.status.containerStatuses?.[0];
      return current !== undefined &&
        current.metadata.uid !== before?.metadata.uid &&
        container?.state?.running !== undefined &&
        !isReady(current)
        ? current
        : undefined;
    });
    const pid = await containerPid(victim);
    const killed = Date.now();
    process.kill(pid, 'SIGKILL');
    await waitFor(`${victim} restarted in place and Ready`, 240_000, async () => {
      const current = await pod(victim);
      const restarts = current?.status.containerStatuses?.[0]?.restartCount ?? 0;
      return current?.metadata.uid === starting.metadata.uid && restarts > 0 && isReady(current)
        ? true
        : undefined;
    });
    log(
      'kill-during-start-up',
      `pid ${pid} SIGKILLed before ${victim} was Ready; restarted and Ready after ${((Date.now() - killed) / 1000).toFixed(1)} s`,
    );
    await waitFor('every replica in its ISR', 120_000, async () =>
      (await fullyReplicated(faultTopic)) ? true : undefined,
    );
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'kill-during-start-up',
      `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('kill-during-start-up', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
  });

  step('controller-and-etcd-delete', async () => {
    const activeController = async (): Promise<string | undefined> => {
      for (const candidate of await releasePods('controller')) {
        if (!candidate.status.podIP || !isReady(candidate)) continue;
        const response = await fetch(`http://${candidate.status.podIP}:9193/metrics`).catch(
          () => undefined,
        );
        if (response && /^spool_controller_active(\{[^}]*\})? 1$/m.test(await response.text()))
          return candidate.metadata.name;
      }
      return undefined;
    };
    const active = await waitFor('an active controller', 60_000, activeController);
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await sleep(3_000);
    const deleted = Date.now();
    await kubectl(['delete', 'pod', active, `${release}-etcd-0`, '--wait=false']);
    const successor = await waitFor('another active controller', 120_000, async () => {
      const now = await activeController();
      return now !== undefined && now !== active ? now : undefined;
    });
    log(
      'controller-and-etcd-delete',
      `${active} and ${release}-etcd-0 deleted; ${successor} active after ${((Date.now() - deleted) / 1000).toFixed(1)} s`,
    );
    await waitAllReady(12, 240_000);
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'controller-and-etcd-delete',
      `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('controller-and-etcd-delete', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
  });

  step('rolling-upgrade', async () => {
    const uidsBefore = new Map(
      (await releasePods()).map((current) => [current.metadata.name, current.metadata.uid]),
    );
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    const timeline = new PodTimeline().start();
    await sleep(3_000);
    const started = Date.now();
    // logLevel is in every Spool pod's template: each StatefulSet and Deployment rolls.
    await helm(
      [
        'upgrade',
        release,
        path.join(workspaceRoot, 'helm/spool'),
        '--reuse-values',
        '--set',
        'logLevel=warn',
        '--wait',
        '--timeout',
        '15m',
      ],
      960_000,
    );
    await waitAllReady(12, 300_000);
    const rolled = (await releasePods()).filter(
      (current) =>
        current.metadata.labels?.['app.kubernetes.io/component'] !== 'etcd' &&
        uidsBefore.get(current.metadata.name) !== current.metadata.uid,
    );
    log(
      'rolling-upgrade',
      `helm upgrade rolled ${rolled.length} Spool pods in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await sleep(3_000);
    const acknowledged = await producer.stop();
    timeline.stop();
    report.produceErrors += producer.errors;
    report.rollMaxProduceLatencyMs = producer.maxLatencyMs;
    log(
      'rolling-upgrade',
      `producer errors ${producer.errors}, max produce latency ${producer.maxLatencyMs} ms (target < ${rollLatencyTargetMs}) ${producer.errorMessages.join('; ')}`,
    );
    // Where the slowest send sat in the roll (seconds from the upgrade's start).
    log(
      'rolling-upgrade',
      `slowest send left at ${((producer.slowestSentAt - started) / 1000).toFixed(1)} s; pods around it: ${
        timeline.around(
          started,
          producer.slowestSentAt - 15_000,
          producer.slowestSentAt + producer.maxLatencyMs + 2_000,
        ) || 'no transitions'
      }`,
    );
    const { lost } = await verify('rolling-upgrade', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors, rolled: rolled.length }).toEqual({
      lost: 0,
      errors: 0,
      rolled: 9,
    });
    expect(producer.maxLatencyMs).toBeLessThan(rollLatencyTargetMs);
  });

  step('scale-storage', async () => {
    // The new node's claim, made first: the StatefulSet takes an existing claim of the name it
    // would give it. On spool-small (test/k8s/up.sh), so storage-volume-full can fill it.
    const claim = path.join(scratch, 'small-claim.json');
    writeFileSync(
      claim,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: smallClaim },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'spool-small',
          resources: { requests: { storage: '64Mi' } },
        },
      }),
    );
    await kubectl(['apply', '-f', claim]);
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await helm(
      [
        'upgrade',
        release,
        path.join(workspaceRoot, 'helm/spool'),
        '--reuse-values',
        '--set',
        'storageNode.replicas=4',
        '--wait',
        '--timeout',
        '5m',
      ],
      360_000,
    );
    const brokers = await waitFor('broker 3 registered', 120_000, async () => {
      const cluster = await admin.describeCluster();
      return cluster.brokers.some((broker) => broker.nodeId === 3)
        ? cluster.brokers.length
        : undefined;
    });
    await admin.createTopics({
      topics: [{ topic: 'e2e-after-scale', numPartitions: 8, replicationFactor: 3 }],
    });
    const [description] = await admin.describeTopics({ topics: ['e2e-after-scale'] });
    const onNewBroker = description!.partitions.filter((partition) =>
      partition.replicas.includes(3),
    ).length;
    // A partition the producer writes moves a replica onto broker 3 (KIP-455: it catches up from
    // the leader, joins the ISR, then the replica it replaces leaves), so broker 3 holds data that
    // existed before it did.
    const [faults] = await admin.describeTopics({ topics: [faultTopic] });
    const moving = faults!.partitions[0]!;
    const target = [3, ...moving.replicas.slice(1)];
    const moveStarted = Date.now();
    await admin.alterPartitionReassignments({
      topics: [
        { topic: faultTopic, partitions: [{ partition: moving.partition, replicas: target }] },
      ],
    });
    await waitFor(`${faultTopic}-${moving.partition} moved onto broker 3`, 120_000, async () => {
      const [now] = await admin.describeTopics({ topics: [faultTopic] });
      const partition = now!.partitions.find((entry) => entry.partition === moving.partition)!;
      return partition.addingReplicas.length === 0 &&
        [...partition.replicas].sort().join() === [...target].sort().join() &&
        partition.isr.length === target.length
        ? true
        : undefined;
    });
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'scale-storage',
      `${brokers} brokers; broker 3 holds replicas of ${onNewBroker} of 8 new partitions, and of ` +
        `${faultTopic}-${moving.partition} [${moving.replicas.join(',')}] → [${target.join(',')}] ` +
        `after ${((Date.now() - moveStarted) / 1000).toFixed(1)} s; producer errors ` +
        `${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    expect(onNewBroker).toBeGreaterThan(0);
    const { lost } = await verify('scale-storage', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
  });

  step('storage-volume-full', async () => {
    // spool-storage-3's volume (scale-storage's claim on a small tmpfs) fills up under a producer:
    // the pod reports not-ready with the reason, its leaderships and ISR places move, and the
    // producer sees no error and loses nothing; with room again it is Ready again.
    const victim = `${release}-storage-3`;
    await admin.createTopics({
      topics: [
        {
          topic: fullTopic,
          numPartitions: 8,
          replicationFactor: 3,
          configEntries: [{ name: 'segment.bytes', value: String(1024 * 1024) }],
        },
      ],
    });
    const producer = new SteadyProducer(fullTopic, steadyRecordsPerSecond, 16 * 1024).start();
    const started = Date.now();
    const reason = await waitFor(`${victim} not ready for its full volume`, 240_000, async () => {
      const current = await pod(victim);
      if (current === undefined || isReady(current) || current.status.podIP === undefined) {
        return undefined;
      }
      const response = await fetch(`http://${current.status.podIP}:9192/readyz`);
      const body = await response.text();
      return response.status === 503 && body.includes('ENOSPC') ? body.trim() : undefined;
    });
    log(
      'storage-volume-full',
      `${victim} not Ready ${((Date.now() - started) / 1000).toFixed(1)} s into the producer; /readyz: ${reason}`,
    );
    await waitFor('no leadership or ISR place on broker 3', 60_000, async () => {
      const [description] = await admin.describeTopics({ topics: [fullTopic] });
      return description?.partitions.every(
        (partition) => partition.leaderId !== 3 && !partition.isr.includes(3),
      )
        ? true
        : undefined;
    });
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'storage-volume-full',
      `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('storage-volume-full', fullTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
    // Room again: the topic's logs deleted, the directory comes back and the pod is Ready.
    const deleted = Date.now();
    await admin.deleteTopics({ topics: [fullTopic] });
    await waitFor(`${victim} Ready again`, 120_000, async () => {
      const current = await pod(victim);
      return current !== undefined && isReady(current) ? true : undefined;
    });
    log(
      'storage-volume-full',
      `${victim} Ready again ${((Date.now() - deleted) / 1000).toFixed(1)} s after the topic was deleted`,
    );
  });

  step('scale-in-guarded', async () => {
    // Back to 3 storage nodes. The chart's scale-in guard refuses to remove broker 3 while it
    // holds replicas, through the scale subresource (kubectl scale) and through an update of the
    // StatefulSet (helm upgrade) alike, naming the broker and the command to run; once `spool
    // broker decommission 3` has moved everything off it and it is REMOVABLE, the same helm
    // upgrade goes through. A producer runs throughout: nothing lost, no error.
    const statefulSet = `${release}-storage`;
    const guardConfigMap = `${release}-storage-scale-in`;
    const guard = async (): Promise<Record<string, string>> =>
      (
        JSON.parse((await kubectl(['get', 'configmap', guardConfigMap, '-o', 'json'])).stdout) as {
          data?: Record<string, string>;
        }
      ).data ?? {};
    const scaleTo3 = (): Promise<unknown> =>
      helm(
        [
          'upgrade',
          release,
          path.join(workspaceRoot, 'helm/spool'),
          '--reuse-values',
          '--set',
          'storageNode.replicas=3',
          '--wait',
          '--timeout',
          '5m',
        ],
        360_000,
      );
    const refusal = async (attempt: Promise<unknown>): Promise<string> =>
      attempt.then(
        () => {
          throw new Error('the scale-in was accepted while broker 3 holds replicas');
        },
        (error: unknown) => String(error),
      );
    const producer = new SteadyProducer(faultTopic, steadyRecordsPerSecond).start();
    await waitFor('the guard to say broker 3 is not removable', 30_000, async () =>
      (await guard())['removableFromOrdinal'] === '4' ? true : undefined,
    );
    const byScale = await refusal(kubectl(['scale', 'statefulset', statefulSet, '--replicas=3']));
    const byUpgrade = await refusal(scaleTo3());
    for (const message of [byScale, byUpgrade]) {
      expect(message).toContain(`scaling ${statefulSet} from 4 to 3 replicas`);
      expect(message).toContain('broker 3 holds replicas or is not decommissioned');
      expect(message).toContain('Run spool broker decommission 3');
    }
    log(
      'scale-in-guarded',
      `kubectl scale refused: ${byScale.split('\n').find((line) => line.includes('scale-in guard'))}`,
    );
    const statefulSetReplicas = (
      await kubectl(['get', 'statefulset', statefulSet, '-o', 'jsonpath={.spec.replicas}'])
    ).stdout;
    expect(statefulSetReplicas).toBe('4');

    const decommissioned = Date.now();
    const decommission = await cli(['broker', 'decommission', '3']);
    expect(decommission.exitCode, decommission.stderr).toBe(0);
    await waitFor('broker 3 REMOVABLE', 180_000, async () => {
      const status = await cli(['cluster', 'status', '--json']);
      const broker3 = (
        JSON.parse(status.stdout) as { brokers: { id: number; decommission: string }[] }
      ).brokers.find((broker) => broker.id === 3);
      return broker3?.decommission === 'removable' ? true : undefined;
    });
    const removableSeconds = ((Date.now() - decommissioned) / 1000).toFixed(1);
    await waitFor('the guard to say broker 3 is removable', 30_000, async () =>
      (await guard())['removableFromOrdinal'] === '3' ? true : undefined,
    );
    const scaled = Date.now();
    await scaleTo3();
    await waitFor(`${release}-storage-3 gone`, 180_000, async () =>
      (await pod(`${release}-storage-3`)) === undefined ? true : undefined,
    );
    await waitFor('every replica in its ISR', 120_000, async () =>
      (await fullyReplicated(faultTopic)) ? true : undefined,
    );
    await sleep(2_000);
    const acknowledged = await producer.stop();
    report.produceErrors += producer.errors;
    log(
      'scale-in-guarded',
      `broker 3 REMOVABLE ${removableSeconds} s after spool broker decommission 3; helm upgrade ` +
        `to 3 replicas accepted and storage-3 gone in ${((Date.now() - scaled) / 1000).toFixed(1)} s; ` +
        `producer errors ${producer.errors}, max latency ${producer.maxLatencyMs} ms ${producer.errorMessages.join('; ')}`,
    );
    const { lost } = await verify('scale-in-guarded', faultTopic, acknowledged);
    expect({ lost, errors: producer.errors }).toEqual({ lost: 0, errors: 0 });
    for (const topic of [bulkTopic, faultTopic, 'e2e-after-scale']) {
      const [description] = await admin.describeTopics({ topics: [topic] });
      expect(description!.partitions.filter((partition) => partition.offline)).toEqual([]);
      expect(description!.partitions.flatMap((partition) => partition.replicas)).not.toContain(3);
    }
  });

  step('prometheus', async () => {
    // A consumer group with committed offsets behind the end, so the lag series exists.
    const group = spool.consumer({ groupId: 'e2e-lag', requestTimeoutMs: 10_000 });
    let seen = 0;
    await group.subscribe({ topic: bulkTopic, fromBeginning: true });
    await group.run({ eachMessage: async () => void seen++ });
    await waitFor('the group consuming', 60_000, async () => (seen > 1_000 ? true : undefined));
    await group.disconnect();

    // Debian's prometheus (2.42+ds) is built without kubernetes_sd_configs, so the discovery
    // is done here as it would do it: every pod of the namespace with the chart's
    // prometheus.io/scrape annotation, at its pod IP and annotated port and path.
    const port = await reservedLoopbackPort();
    const configPath = path.join(scratch, 'prometheus.yml');
    const targetsPath = path.join(scratch, 'spool-pods.json');
    const annotatedPods = JSON.parse((await kubectl(['get', 'pods', '-o', 'json'])).stdout) as {
      items: (PodStatus & { metadata: { annotations?: Record<string, string> } })[];
    };
    const targets = annotatedPods.items
      .filter((current) => current.metadata.annotations?.['prometheus.io/scrape'] === 'true')
      .map((current) => ({
        targets: [
          `${current.status.podIP}:${current.metadata.annotations?.['prometheus.io/port']}`,
        ],
        labels: {
          pod: current.metadata.name,
          __metrics_path__: current.metadata.annotations?.['prometheus.io/path'] ?? '/metrics',
        },
      }));
    writeFileSync(targetsPath, JSON.stringify(targets));
    writeFileSync(
      configPath,
      JSON.stringify({
        global: { scrape_interval: '5s', evaluation_interval: '5s' },
        rule_files: [path.join(workspaceRoot, 'helm/spool/files/alerts.yaml')],
        scrape_configs: [{ job_name: 'spool-pods', file_sd_configs: [{ files: [targetsPath] }] }],
      }),
    );
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${path.join(scratch, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    const api = async <T>(query: string): Promise<T> => {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/${query}`);
      return ((await response.json()) as { data: T }).data;
    };
    const spoolPods = (await releasePods()).filter(
      (current) => current.metadata.labels?.['app.kubernetes.io/component'] !== 'etcd',
    );
    const up = await waitFor(`all ${spoolPods.length} Spool pods scraped`, 120_000, async () => {
      const targets = await api<{ activeTargets: { health: string; labels: { pod: string } }[] }>(
        'targets',
      );
      const healthy = targets.activeTargets.filter((target) => target.health === 'up');
      return healthy.length >= spoolPods.length ? healthy.length : undefined;
    });
    for (const series of ['spool_under_replicated_partitions', 'spool_consumer_group_lag']) {
      await waitFor(`series ${series}`, 60_000, async () =>
        (await api<unknown[]>(`series?match[]=${series}`)).length > 0 ? true : undefined,
      );
    }
    const rules = await api<{ groups: { rules: unknown[] }[] }>('rules');
    const ruleCount = rules.groups.reduce((sum, group) => sum + group.rules.length, 0);
    log(
      'prometheus',
      `${up} targets up from the pods' prometheus.io annotations (${spoolPods.length} Spool pods); lag and under-replication series present; ${ruleCount} alert rules loaded`,
    );
    expect(ruleCount).toBeGreaterThan(0);
  });

  step('uninstall-keeps-volumes', async () => {
    const claimsBefore = (await kubectl(['get', 'pvc', '-o', 'name'])).stdout
      .trim()
      .split('\n')
      .filter(Boolean);
    await helm(['uninstall', release, '--wait', '--timeout', '5m']);
    await waitFor('the release gone', 180_000, async () => {
      const left = (
        await kubectl(['get', 'all', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name'])
      ).stdout.trim();
      return left === '' ? true : undefined;
    });
    const claimsAfter = (await kubectl(['get', 'pvc', '-o', 'name'])).stdout
      .trim()
      .split('\n')
      .filter(Boolean);
    log(
      'uninstall-keeps-volumes',
      `nothing of the release left but ${claimsAfter.length} PersistentVolumeClaims (${claimsBefore.length} before)`,
    );
    expect(claimsAfter.sort()).toEqual(claimsBefore.sort());
    expect(claimsAfter.length).toBe(4 + 3);
    // The cluster CA outlives the release, as the volumes do: a reinstall on them keeps
    // trusting the certificates clients hold.
    const ca = await kubectl(['get', 'secret', `${release}-cluster-ca`, '-o', 'name']);
    expect(ca.stdout.trim()).toBe(`secret/${release}-cluster-ca`);
  });
});
