/**
 * Real etcd processes for tests: one member or a cluster, on free loopback ports, in a temporary
 * folder, stopped by pid. Used by this library's specs and by the cross-process tests in `test/`
 * (which kill and restart members), through the package's testing entry (`@spool/metadata/testing`),
 * never its main one.
 *
 * Ports are found by binding port 0 on 127.0.0.1 and closing the socket; another process may
 * grab one before etcd binds it, so a start whose member exits early is retried on new ports.
 * Every wait is bounded. Members still running when the test process exits are SIGKILLed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/** How long a member (or a whole cluster) may take to answer healthy. */
export const etcdStartTimeoutMsDefault = 20_000;
/** How long a member may take to exit after SIGTERM before it gets SIGKILL. */
const stopTimeoutMs = 5_000;
/** Fresh-port attempts when a port is taken between choosing it and etcd binding it. */
const startAttemptsMax = 3;
const healthPollIntervalMs = 50;
const healthRequestTimeoutMs = 1_000;
/** The tail of a member's log kept for error messages. */
const logTailBytesMax = 16 * 1024;

export interface EtcdTestOptions {
  /** etcdPath: the etcd binary; defaults to $SPOOL_ETCD_PATH, then `etcd` on the PATH. */
  readonly etcdPath?: string;
  /** startTimeoutMs: bound on waiting for every member to answer healthy. */
  readonly startTimeoutMs?: number;
  /**
   * tls: client URLs are https with this certificate (etcd's --cert-file, --key-file), and
   * clients must present a certificate from caFile (--client-cert-auth, --trusted-ca-file).
   */
  readonly tls?: EtcdTestTls;
}

export interface EtcdTestTls {
  readonly certificateFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

export interface EtcdTestMember {
  readonly name: string;
  /** The client URL, e.g. http://127.0.0.1:40123. */
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDirectory: string;
  /** The pid while the member runs. */
  readonly pid: number | undefined;
  readonly running: boolean;
  /** Stops the member: SIGTERM (or the given signal), then SIGKILL after a bounded wait. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts a stopped member again with its data and ports; resolves once it answers healthy. */
  start(): Promise<void>;
}

export interface EtcdTestCluster {
  /** Client URLs of every member, for `EtcdMetadataStore.connect({ endpoints })`. */
  readonly endpoints: readonly string[];
  readonly members: readonly EtcdTestMember[];
  /** Stops every member and removes the data folder. */
  stop(): Promise<void>;
}

/** One etcd member. */
export function startEtcdServer(options: EtcdTestOptions = {}): Promise<EtcdTestCluster> {
  return startEtcdCluster(1, options);
}

/** A cluster of `size` members (3 for the fault-injection tests), healthy with a leader. */
export async function startEtcdCluster(
  size: number,
  options: EtcdTestOptions = {},
): Promise<EtcdTestCluster> {
  if (!Number.isSafeInteger(size) || size < 1 || size > 7) {
    throw new RangeError(`an etcd test cluster has 1 to 7 members, got ${size}`);
  }
  const etcdPath = options.etcdPath ?? process.env['SPOOL_ETCD_PATH'] ?? 'etcd';
  const startTimeoutMs = options.startTimeoutMs ?? etcdStartTimeoutMsDefault;
  for (let attempt = 1; ; attempt++) {
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-etcd-'));
    const members = await createMembers(size, dataRoot, etcdPath, startTimeoutMs, options.tls);
    try {
      for (const member of members) member.spawnProcess();
      await Promise.all(members.map((member) => member.waitUntilHealthy()));
      return new TestCluster(members, dataRoot);
    } catch (error) {
      await Promise.all(members.map((member) => member.stop('SIGKILL')));
      fs.rmSync(dataRoot, { recursive: true, force: true });
      const portTaken = members.some((member) =>
        member.logTail().includes('address already in use'),
      );
      if (!portTaken || attempt >= startAttemptsMax) throw error;
    }
  }
}

class TestCluster implements EtcdTestCluster {
  readonly endpoints: readonly string[];

  constructor(
    readonly members: readonly TestMember[],
    private readonly dataRoot: string,
  ) {
    this.endpoints = members.map((member) => member.clientUrl);
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((member) => member.stop()));
    fs.rmSync(this.dataRoot, { recursive: true, force: true });
  }
}

/** Members still running, killed if the test process exits without stopping them. */
const runningProcesses = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of runningProcesses) child.kill('SIGKILL');
  });
}

class TestMember implements EtcdTestMember {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log = '';

  constructor(
    readonly name: string,
    readonly clientUrl: string,
    readonly peerUrl: string,
    readonly dataDirectory: string,
    private readonly etcdPath: string,
    private readonly initialCluster: string,
    private readonly startTimeoutMs: number,
    private readonly tls: EtcdTestTls | undefined,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  logTail(): string {
    return this.log;
  }

  spawnProcess(): void {
    if (this.child !== undefined) return;
    installExitHook();
    const child = spawn(
      this.etcdPath,
      [
        `--name=${this.name}`,
        `--data-dir=${this.dataDirectory}`,
        `--listen-client-urls=${this.clientUrl}`,
        `--advertise-client-urls=${this.clientUrl}`,
        `--listen-peer-urls=${this.peerUrl}`,
        `--initial-advertise-peer-urls=${this.peerUrl}`,
        `--initial-cluster=${this.initialCluster}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=spool-test-${path.basename(path.dirname(this.dataDirectory))}`,
        // Elections in a fraction of a second, still tolerant of a loaded test machine.
        '--heartbeat-interval=50',
        '--election-timeout=500',
        '--logger=zap',
        '--log-level=warn',
        ...(this.tls === undefined
          ? []
          : [
              `--cert-file=${this.tls.certificateFile}`,
              `--key-file=${this.tls.keyFile}`,
              `--trusted-ca-file=${this.tls.caFile}`,
              '--client-cert-auth',
            ]),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keepTail = (chunk: Buffer): void => {
      this.log = (this.log + chunk.toString('utf8')).slice(-logTailBytesMax);
    };
    child.stdout?.on('data', keepTail);
    child.stderr?.on('data', keepTail);
    this.exited = new Promise<void>((resolve) => {
      child.once('error', (error) => {
        keepTail(Buffer.from(`failed to start ${this.etcdPath}: ${error.message}\n`));
        resolve();
      });
      child.once('exit', () => resolve());
    }).then(() => {
      runningProcesses.delete(child);
      if (this.child === child) this.child = undefined;
    });
    this.child = child;
    runningProcesses.add(child);
  }

  async start(): Promise<void> {
    this.spawnProcess();
    await this.waitUntilHealthy();
  }

  /** Polls /health until etcd reports a leader; fails early if the process exits. */
  async waitUntilHealthy(): Promise<void> {
    const child = this.child;
    let exited = false;
    void this.exited.then(() => (exited = true));
    const deadline = Date.now() + this.startTimeoutMs;
    while (Date.now() < deadline) {
      if (exited || this.child !== child) {
        throw new Error(`etcd member ${this.name} exited while starting:\n${this.log}`);
      }
      if (await isHealthy(this.clientUrl, this.tls)) return;
      await new Promise((resolve) => setTimeout(resolve, healthPollIntervalMs));
    }
    throw new Error(
      `etcd member ${this.name} was not healthy within ${this.startTimeoutMs} ms:\n${this.log}`,
    );
  }

  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    child.kill(signal);
    if (await settlesWithin(this.exited, stopTimeoutMs)) return;
    child.kill('SIGKILL');
    if (!(await settlesWithin(this.exited, stopTimeoutMs))) {
      throw new Error(`etcd member ${this.name} (pid ${child.pid}) did not exit after SIGKILL`);
    }
  }
}

async function createMembers(
  size: number,
  dataRoot: string,
  etcdPath: string,
  startTimeoutMs: number,
  tls: EtcdTestTls | undefined,
): Promise<TestMember[]> {
  const ports = await freeLoopbackPorts(size * 2);
  const names = Array.from({ length: size }, (_, index) => `member-${index}`);
  const peerUrls = names.map((_, index) => `http://127.0.0.1:${ports[index * 2 + 1]}`);
  const initialCluster = names.map((name, index) => `${name}=${peerUrls[index]}`).join(',');
  return names.map(
    (name, index) =>
      new TestMember(
        name,
        `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${ports[index * 2]}`,
        peerUrls[index]!,
        path.join(dataRoot, name),
        etcdPath,
        initialCluster,
        startTimeoutMs,
        tls,
      ),
  );
}

/** Distinct free ports: all sockets stay bound until every port is chosen. */
async function freeLoopbackPorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let index = 0; index < count; index++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      ports.push((server.address() as net.AddressInfo).port);
    }
    return ports;
  } finally {
    await Promise.all(
      servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
  }
}

function isHealthy(clientUrl: string, tls: EtcdTestTls | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const get = tls === undefined ? http.get : https.get;
    const request = get(
      `${clientUrl}/health`,
      {
        timeout: healthRequestTimeoutMs,
        ...(tls === undefined
          ? {}
          : {
              ca: fs.readFileSync(tls.caFile),
              cert: fs.readFileSync(tls.certificateFile),
              key: fs.readFileSync(tls.keyFile),
            }),
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(response.statusCode === 200 && body.includes('"true"')));
        response.on('error', () => resolve(false));
      },
    );
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

async function settlesWithin(promise: Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const settled = await Promise.race([promise.then(() => true), timedOut]);
  clearTimeout(timer);
  return settled;
}
