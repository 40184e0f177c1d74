// Proves the container image's contents and the chart's wiring work together, without a Docker
// engine: deploy/image/assemble.mjs (the script the Dockerfile's build stage runs) assembles the
// runtime folder, and a cluster is started from it exactly as the rendered chart starts its
// pods: each workload's command and arguments, its environment with the downward API filled in
// (pod names, so broker ids come from StatefulSet ordinals), volume paths moved to temporary
// folders, and every in-cluster address rewritten to the loopback port of the process that
// plays that pod. Nothing else is passed, so a missing file in the image or a wrong variable in
// the chart fails here. etcd (its own image) is a real etcd on loopback. The chart's `helm test`
// hook script then produces and consumes a record through the gateway with the image's `spool`,
// the brokers report ids 0 and 1, and on SIGTERM every process exits 0 by itself. Each pod runs
// in a PID namespace of its own (where the machine allows it), so, as in the container, the
// service is PID 1 and gets SIGTERM with no shell or init in between. TLS and authentication are
// on, as the chart's defaults are: the chart's certificate hook runs (its own code, on Secrets that
// are folders here), each pod gets the files of the Secrets it mounts, and etcd serves TLS with
// the certificate the hook issued for it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { reconcileClusterCertificates, type TlsSecretData } from '@spool/cli';
import { startEtcdCluster } from '@spool/metadata/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterAddressPattern,
  containerEnvironment,
  podIdentity,
  replicasOf,
  resolveClusterAddress,
  type PodIdentity,
} from './support/chart-pods';
import {
  find,
  helmBinary,
  helmInstallTimeoutMs,
  podSpecOf,
  releaseNamespace,
  renderChart,
  type Container,
  type KubernetesObject,
  type PodSpec,
} from './support/helm-chart';
import { reservedLoopbackPort } from './support/loopback-ports';
import { workspaceRoot } from './support/service-process';

const values = {
  // The scale-in guard's controller side needs the Kubernetes API, which no pod here has
  // (test/k8s runs it on a real cluster).
  storageNode: { replicas: 2, scaleInGuard: { enabled: false } },
  controller: { replicas: 2, defaultReplicationFactor: 2 },
  coordinator: { replicas: 1 },
  gateway: { replicas: 1 },
  etcd: { replicas: 1 },
};
/** Spool's workloads in start order: the controllers first, everything else is told of them. */
const startOrder = ['controller', 'storage-node', 'coordinator', 'gateway'];
/** Generous: the machine running CI may be heavily shared. */
const startTimeoutMs = 45_000;
const stopTimeoutMs = 30_000;
/** An assembly folder untouched this long is no longer in use by any test run. */
const staleAssemblyAgeMs = 60 * 60_000;

interface PodProcess {
  readonly identity: PodIdentity;
  readonly component: string;
  readonly container: Container;
  readonly ports: Map<string, number>;
  readonly environment: Record<string, string>;
  child?: ChildProcess;
  exited?: Promise<number | string>;
  readonly output: string[];
}

const scratch = mkdtempSync(path.join(tmpdir(), 'spool-image-test-'));
const binFolder = path.join(scratch, 'bin');
const running = new Set<ChildProcess>();
let imageFolder: string;
let objects: KubernetesObject[];
let etcd: Awaited<ReturnType<typeof startEtcdCluster>> | undefined;
const pods: PodProcess[] = [];
let pidNamespaces = false;
/** The Secrets' data, by name: the chart's (rendered) and the certificate hook's (issued). */
const secrets = new Map<string, Record<string, string>>();

process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The assembled folder, cached by what goes into it (lock file, manifests, built output), so
 * repeated runs skip the `npm ci` unless something changed.
 */
async function assembledImage(): Promise<string> {
  const hash = createHash('sha256');
  const add = (file: string) => {
    const stat = statSync(file);
    hash.update(`${path.relative(workspaceRoot, file)}:${stat.size}:${stat.mtimeMs}\n`);
  };
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else add(full);
    }
  };
  for (const file of ['package-lock.json', 'package.json', 'deploy/image/assemble.mjs']) {
    add(path.join(workspaceRoot, file));
  }
  for (const parent of ['apps', 'libs']) {
    for (const project of readdirSync(path.join(workspaceRoot, parent))) {
      const root = path.join(workspaceRoot, parent, project);
      if (!existsSync(path.join(root, 'package.json'))) continue;
      add(path.join(root, 'package.json'));
      if (existsSync(path.join(root, 'dist'))) walk(path.join(root, 'dist'));
    }
  }
  const key = hash.digest('hex').slice(0, 16);
  const cacheRoot = tmpdir();
  const folder = path.join(cacheRoot, `spool-image-contents-${key}`);
  if (existsSync(path.join(folder, 'image-contents.json'))) return folder;
  // Older assemblies go, but not one another run may be using or writing right now.
  for (const stale of readdirSync(cacheRoot).filter((name) =>
    name.startsWith('spool-image-contents-'),
  )) {
    const stalePath = path.join(cacheRoot, stale);
    if (Date.now() - statSync(stalePath).mtimeMs > staleAssemblyAgeMs) {
      rmSync(stalePath, { recursive: true, force: true });
    }
  }
  const partial = `${folder}.partial-${process.pid}`;
  const exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn(
      process.execPath,
      [path.join(workspaceRoot, 'deploy/image/assemble.mjs'), '--out', partial, '--prefer-offline'],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.once('exit', resolve);
  });
  expect(exitCode, 'deploy/image/assemble.mjs').toBe(0);
  renameSync(partial, folder);
  return folder;
}

const componentOf = (workload: KubernetesObject) =>
  workload.metadata.labels?.['app.kubernetes.io/component'] ?? '';

/** The loopback port that plays a workload pod's named container port. */
function loopbackPort(workload: KubernetesObject, ordinal: number, portName: string): number {
  if (componentOf(workload) === 'etcd') {
    expect(portName).toBe('client');
    return Number(new URL(etcd!.endpoints[0]!).port);
  }
  const pod = pods.find(
    (candidate) =>
      candidate.identity.workload === workload && candidate.identity.ordinal === ordinal,
  );
  const port = pod?.ports.get(portName);
  if (port === undefined)
    throw new Error(`no pod ${workload.metadata.name}-${ordinal} port ${portName}`);
  return port;
}

/**
 * The chart's Secrets: those it renders (the admin's password), and those its pre-install hook
 * Job writes, issued by the same code (`spool tls kubernetes-secrets` on a store of maps) from
 * the Job's own arguments. Every pod is reached at 127.0.0.1 here, so the gateway's and etcd's
 * certificates, whose names clients check, name it too (tls.gatewayAlternativeNames would).
 */
async function issueChartSecrets(): Promise<void> {
  for (const object of objects.filter((candidate) => candidate.kind === 'Secret')) {
    const data = (object as KubernetesObject & { data: Record<string, string> }).data;
    secrets.set(
      object.metadata.name,
      Object.fromEntries(
        Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
      ),
    );
  }
  const job = find(objects, 'Job', 'rel-spool-tls-issuer') as KubernetesObject & {
    spec: { template: { spec: { containers: Container[] } } };
  };
  const args = job.spec.template.spec.containers[0]!.args!;
  const flag = (name: string) =>
    args.filter((arg) => arg.startsWith(`--${name}=`)).map((arg) => arg.slice(name.length + 3));
  const services = flag('service').map((value) => {
    const [holder, hosts] = value.split('=') as [string, string];
    const [role, secretName] = holder.split('/') as [string, string];
    const loopback = role === 'gateway' || role === 'etcd' ? ['127.0.0.1'] : [];
    return {
      role: role as 'gateway',
      secretName,
      hosts: [...hosts.split(','), ...loopback],
    };
  });
  await reconcileClusterCertificates(
    {
      read: async (name) => secrets.get(name) as TlsSecretData | undefined,
      write: async (name, data) => void secrets.set(name, { ...data }),
    },
    flag('ca-secret')[0]!,
    services,
    {
      validityDays: Number(flag('validity-days')[0]),
      renewBeforeDays: Number(flag('renew-before-days')[0]),
      caValidityDays: 3650,
      now: new Date(),
    },
  );
}

/** A Secret's keys as files in `folder`, as a secret volume shows them (`items` picks some). */
function writeSecretFiles(
  name: string,
  folder: string,
  items?: ReadonlyArray<{ key: string; path?: string }>,
): void {
  const data = secrets.get(name);
  if (data === undefined) throw new Error(`no Secret ${name} in the render or from the hook`);
  mkdirSync(folder, { recursive: true });
  const chosen: ReadonlyArray<{ key: string; path?: string }> =
    items ?? Object.keys(data).map((key) => ({ key }));
  for (const { key, path: file } of chosen) {
    writeFileSync(path.join(folder, file ?? key), data[key]!, { mode: 0o600 });
  }
}

/** Each secret volume of a pod as a folder of files under the pod's folder; emptyDirs empty. */
function materializeVolumes(volumes: PodSpec['volumes'], podFolder: string): void {
  for (const volume of volumes ?? []) {
    const folder = path.join(podFolder, volume.name);
    if (volume.secret !== undefined) {
      writeSecretFiles(volume.secret.secretName, folder, volume.secret.items);
    } else {
      mkdirSync(folder, { recursive: true });
    }
  }
}

/** The pod's environment as the chart sets it, rewritten to run on this machine. */
function loopbackEnvironment(container: Container, identity: PodIdentity, podFolder: string) {
  const pattern = clusterAddressPattern(releaseNamespace);
  const declared = container.ports ?? [];
  const environment: Record<string, string> = {};
  for (const [name, original] of containerEnvironment(container, identity)) {
    let value = original;
    const secretKey = /^<secret (\S+)\/(\S+)>$/.exec(value);
    if (secretKey !== null) {
      const data = secrets.get(secretKey[1]!);
      expect(
        data?.[secretKey[2]!],
        `${name}: Secret ${secretKey[1]} key ${secretKey[2]}`,
      ).toBeDefined();
      value = data![secretKey[2]!]!;
    }
    if (name === 'SPOOL_HOST') {
      expect(value).toBe('0.0.0.0');
      value = '127.0.0.1';
    } else if (name === 'SPOOL_KAFKA_BROKER_PORT_BASE') {
      // Storage broker N's Kafka port is this base + N; several gateways share this host, so
      // each picks free ports, as spool dev's gateway does.
      value = '0';
    } else if (name === 'SPOOL_KAFKA_ADVERTISED_BROKER_PORT_BASE') {
      // 0: clients are told each broker's bound port.
      value = '0';
    } else if (/^SPOOL_[A-Z_]+_PORT$/.test(name)) {
      const port = declared.find((candidate) => candidate.containerPort === Number(value));
      expect(port, `${name}=${value} is a declared container port`).toBeDefined();
      value = String(loopbackPort(identity.workload, identity.ordinal, port!.name!));
    }
    for (const mount of container.volumeMounts ?? []) {
      if (value.startsWith(mount.mountPath)) {
        value = path.join(podFolder, mount.name) + value.slice(mount.mountPath.length);
      }
    }
    value = value.replace(pattern, (_whole, host: string, port: string | undefined) => {
      const resolved = resolveClusterAddress(
        objects,
        host,
        port === undefined ? undefined : Number(port),
      );
      if (port === undefined) return '127.0.0.1';
      return `127.0.0.1:${loopbackPort(resolved.workload, resolved.ordinal ?? 0, resolved.containerPortName!)}`;
    });
    expect(value, `${name} has no cluster address left`).not.toMatch(/\.svc\b/);
    environment[name] = value;
  }
  // Every port the container declares is one the process is told to listen on.
  for (const port of declared) {
    const told = (container.env ?? []).some(
      (variable) =>
        /^SPOOL_[A-Z_]+_PORT$/.test(variable.name) && variable.value === String(port.containerPort),
    );
    expect(told, `${container.name} is told to listen on its port ${port.name}`).toBe(true);
  }
  return environment;
}

/** What the image's PATH gives a container: `spool` and node, as /usr/local/bin does. */
function imagePath(): string {
  return `${binFolder}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

function startPod(pod: PodProcess): void {
  const folder = path.join(scratch, pod.identity.name);
  mkdirSync(folder, { recursive: true });
  const [command, ...commandArgs] = pod.container.command!;
  const argv = [command!, ...commandArgs, ...(pod.container.args ?? [])];
  // In a PID namespace of its own, as in a container: the `spool` process is PID 1 there.
  const [executable, ...args] = pidNamespaces
    ? ['unshare', '--pid', '--fork', '--kill-child', ...argv]
    : argv;
  const child = spawn(executable!, args, {
    cwd: folder,
    env: { PATH: imagePath(), HOME: folder, NODE_ENV: 'production', ...pod.environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  pod.child = child;
  pod.exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(signal ?? code ?? -1);
    }),
  );
  readline.createInterface({ input: child.stdout! }).on('line', (line) => pod.output.push(line));
  readline.createInterface({ input: child.stderr! }).on('line', (line) => pod.output.push(line));
}

/**
 * Sends a signal to the pod's main process: with a PID namespace, the `spool` process that
 * unshare forked (PID 1 inside), as the container runtime does; unshare forwards no signals.
 */
function signalPod(pod: PodProcess, signal: NodeJS.Signals): void {
  const wrapper = pod.child!.pid!;
  if (!pidNamespaces) {
    process.kill(wrapper, signal);
    return;
  }
  const children = readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, 'utf8').trim();
  const main = Number(children.split(' ')[0]);
  expect(main, `the process unshare started for ${pod.identity.name}`).toBeGreaterThan(0);
  process.kill(main, signal);
}

/** Whether this machine lets the test run each pod in its own PID namespace (root on Linux). */
function canUsePidNamespaces(): boolean {
  const probe = spawnSync('unshare', ['--pid', '--fork', '--kill-child', 'sh', '-c', 'echo $$'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return probe.status === 0 && probe.stdout.trim() === '1';
}

async function waitFor(
  what: () => string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function waitStarted(pod: PodProcess): Promise<void> {
  await waitFor(
    () => `${pod.identity.name} to start:\n${pod.output.join('\n')}`,
    () => {
      if (pod.child!.exitCode !== null) {
        throw new Error(`${pod.identity.name} exited:\n${pod.output.join('\n')}`);
      }
      return pod.output.some((line) => line.includes('"event":"started"'));
    },
    startTimeoutMs,
  );
}

/** The chart's readiness probe, asked of the process: its path on its named port. */
async function isReady(pod: PodProcess): Promise<boolean> {
  const probe = pod.container.readinessProbe!.httpGet!;
  const port = pod.ports.get(String(probe.port))!;
  try {
    return (await fetch(`http://127.0.0.1:${port}${probe.path}`)).status === 200;
  } catch {
    return false;
  }
}

function run(
  command: string,
  args: readonly string[],
  environment: Record<string, string>,
  timeoutMs: number,
): Promise<{ exitCode: number | null; output: string }> {
  const child = spawn(command, [...args], {
    cwd: scratch,
    env: { PATH: imagePath(), HOME: scratch, ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ exitCode, output });
    }),
  );
}

beforeAll(async () => {
  helmBinary();
  imageFolder = await assembledImage();
  mkdirSync(binFolder, { recursive: true });
  // As the Dockerfile links it: /usr/local/bin/spool → /app/apps/cli/bin/spool.mjs.
  symlinkSync(path.join(imageFolder, 'apps/cli/bin/spool.mjs'), path.join(binFolder, 'spool'));
  objects = renderChart(values);
  pidNamespaces = canUsePidNamespaces();
  if (!pidNamespaces) console.warn('image-contents: no PID namespaces here; pods run unwrapped');
  await issueChartSecrets();
  const etcdSecret = path.join(scratch, 'etcd-tls');
  writeSecretFiles('rel-spool-etcd-tls', etcdSecret);
  etcd = await startEtcdCluster(1, {
    tls: {
      certificateFile: path.join(etcdSecret, 'tls.crt'),
      keyFile: path.join(etcdSecret, 'tls.key'),
      caFile: path.join(etcdSecret, 'ca.crt'),
    },
  });
}, helmInstallTimeoutMs);

afterAll(async () => {
  for (const child of running) child.kill('SIGKILL');
  await etcd?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the image contents run the cluster the chart describes', () => {
  it('match the Dockerfile: its runtime stage is the assembled folder, run as the chart runs it', () => {
    const dockerfile = readFileSync(path.join(workspaceRoot, 'deploy/Dockerfile'), 'utf8');
    const instructions = dockerfile
      .split('\n')
      .filter((line) => !line.startsWith('#'))
      .join('\n')
      .replace(/\\\n/g, ' ');
    // The build stage runs the assembler; the runtime stage copies its output whole.
    expect(instructions).toMatch(/^RUN node deploy\/image\/assemble\.mjs --out \/out$/m);
    expect(instructions).toMatch(/^COPY --from=build [^\n]*\/out \/app$/m);
    expect(instructions).toContain('ln -s /app/apps/cli/bin/spool.mjs /usr/local/bin/spool');
    // Slim Node 20, as the root package.json's engines ask.
    expect(instructions).toMatch(/^ARG NODE_VERSION=20\.\d+\.\d+$/m);
    expect(instructions).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim AS runtime$/m);
    // Exec form, no shell: Node is PID 1 and gets SIGTERM. The chart's command is the same.
    const entrypoint = /^ENTRYPOINT (.*)$/m.exec(instructions)?.[1];
    expect(JSON.parse(entrypoint!)).toEqual(['spool']);
    const workloads = objects.filter(
      (object) => podSpecOf(object) !== undefined && startOrder.includes(componentOf(object)),
    );
    expect(workloads).toHaveLength(startOrder.length);
    for (const workload of workloads) {
      expect(podSpecOf(workload)!.containers[0]!.command).toEqual(['spool']);
    }
    // The image's user is the one the chart's pods run as (and own their volumes as).
    const user = /^USER (\d+):(\d+)$/m.exec(instructions);
    const securityContext = (
      find(objects, 'StatefulSet', 'rel-spool-storage')['spec'] as {
        template: { spec: { securityContext: Record<string, unknown> } };
      }
    ).template.spec.securityContext;
    expect(securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: Number(user![1]),
      runAsGroup: Number(user![2]),
      fsGroup: Number(user![2]),
    });
    expect(Number(user![1])).toBeGreaterThan(0);
  });

  it('hold no test code: no compiled spec, no testing entry (dist/testing/), no test-support', () => {
    const testCode = /(?:^|\/)testing(?:\/|\.|$)|test-support|\.spec\./;
    const found: string[] = [];
    for (const parent of ['apps', 'libs']) {
      for (const project of readdirSync(path.join(imageFolder, parent))) {
        const dist = path.join(imageFolder, parent, project, 'dist');
        if (!existsSync(dist)) continue;
        for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
          if (testCode.test(file)) found.push(`${parent}/${project}/dist/${file}`);
        }
      }
    }
    expect(found).toEqual([]);
    // Not vacuous: the build tree holds the testing entries the image leaves out, and the image
    // holds the libraries' main entries beside them.
    for (const library of ['client', 'metadata', 'segment-store']) {
      expect(existsSync(path.join(workspaceRoot, 'libs', library, 'dist/testing/index.js'))).toBe(
        true,
      );
      expect(existsSync(path.join(imageFolder, 'libs', library, 'dist/index.js'))).toBe(true);
    }
  });

  it('starts every pod from the assembled folder, produces and consumes, stops on SIGTERM', async () => {
    // Every workload of Spool's image, with one process per replica and its own ports.
    const workloads = objects.filter(
      (object) =>
        (object.kind === 'StatefulSet' || object.kind === 'Deployment') &&
        startOrder.includes(componentOf(object)),
    );
    expect(workloads.map(componentOf).sort()).toEqual([...startOrder].sort());
    for (const workload of workloads) {
      const container = podSpecOf(workload)!.containers[0]!;
      expect(container.command).toEqual(['spool']);
      expect(container.args).toEqual([componentOf(workload)]);
      for (let ordinal = 0; ordinal < replicasOf(workload); ordinal++) {
        const ports = new Map<string, number>();
        for (const port of container.ports ?? [])
          ports.set(port.name!, await reservedLoopbackPort());
        pods.push({
          identity: podIdentity(workload, ordinal, releaseNamespace),
          component: componentOf(workload),
          container,
          ports,
          environment: {},
          output: [],
        });
      }
    }
    expect(pods).toHaveLength(6);
    for (const pod of pods) {
      const podFolder = path.join(scratch, pod.identity.name);
      materializeVolumes(podSpecOf(pod.identity.workload)!.volumes, podFolder);
      Object.assign(pod.environment, loopbackEnvironment(pod.container, pod.identity, podFolder));
    }

    const controllers = pods.filter((pod) => pod.component === 'controller');
    controllers.forEach(startPod);
    await Promise.all(controllers.map(waitStarted));
    const others = pods.filter((pod) => pod.component !== 'controller');
    others.forEach(startPod);
    await Promise.all(others.map(waitStarted));
    await waitFor(
      () => 'every pod to pass its readiness probe',
      async () => (await Promise.all(pods.map(isReady))).every(Boolean),
      startTimeoutMs,
    );

    // The chart's `helm test` hook, run as its Pod would run it.
    const hook = find(objects, 'Pod', 'rel-spool-test-produce-consume');
    const hookContainer = podSpecOf(hook)!.containers[0]!;
    materializeVolumes(podSpecOf(hook)!.volumes, scratch);
    const hookEnvironment = loopbackEnvironment(
      hookContainer,
      podIdentity(hook, 0, releaseNamespace),
      scratch,
    );
    const [shell, ...shellArgs] = hookContainer.command!;
    const hookRun = await run(
      shell!,
      [...shellArgs, ...hookContainer.args!],
      hookEnvironment,
      60_000,
    );
    expect(hookRun.output).toMatch(
      /produced and consumed "record-from-rel-spool-test-produce-consume-\d+"/,
    );
    expect(hookRun.exitCode).toBe(0);

    const status = await run(
      'spool',
      ['cluster', 'status', '--json'],
      {
        SPOOL_GATEWAY: hookEnvironment['SPOOL_GATEWAY']!,
        // The admin's client.properties the hook script wrote (the CA, SASL_SSL).
        SPOOL_CLIENT_CONFIG: hookEnvironment['SPOOL_CLIENT_CONFIG']!,
      },
      30_000,
    );
    expect(status.exitCode).toBe(0);
    const brokers = (JSON.parse(status.output) as { brokers: Array<{ id: number }> }).brokers;
    expect(brokers.map((broker) => broker.id).sort()).toEqual([0, 1]);

    // SIGTERM reaches Node through the `spool` launcher; each service stops cleanly by itself.
    for (const component of [...startOrder].reverse()) {
      const stopping = pods.filter((pod) => pod.component === component);
      for (const pod of stopping) signalPod(pod, 'SIGTERM');
      const codes = await Promise.race([
        Promise.all(stopping.map((pod) => pod.exited!)),
        new Promise<string>((resolve) => setTimeout(() => resolve('timed out'), stopTimeoutMs)),
      ]);
      expect(codes, `${component} exit codes`).toEqual(stopping.map(() => 0));
      for (const pod of stopping) {
        const records = pod.output.flatMap((line) => {
          try {
            return [JSON.parse(line) as { event?: string; signal?: string; pid?: number }];
          } catch {
            return [];
          }
        });
        expect(records.find((record) => record.signal !== undefined)?.signal).toBe('SIGTERM');
        if (pidNamespaces) {
          // The service itself was PID 1 and handled SIGTERM: no shell, no init in between.
          expect(records.find((record) => record.event === 'started')?.pid).toBe(1);
        }
      }
    }
  }, 120_000);
});
