/**
 * Apache Kafka 4.4.0 for the `kafka` scenario: its tools (kafka-topics, ProducerPerformance,
 * ConsumerPerformance) run against any bootstrap address, and its broker started in KRaft mode on
 * loopback ports from the same classpath (test/support/ensure-kafka-tools.sh fetches it from Maven
 * Central with every jar's SHA-256 pinned), data in a temporary folder removed on stop.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cpuSecondsOf, log, peakRssMbOf, workspaceRoot } from './cluster';

/** The main classes of Kafka's bin/*.sh scripts (as test/support/kafka-tools.ts names them). */
const mainClasses = {
  topics: 'org.apache.kafka.tools.TopicCommand',
  producerPerformance: 'org.apache.kafka.tools.ProducerPerformance',
  consumerPerformance: 'org.apache.kafka.tools.ConsumerPerformance',
  broker: 'kafka.Kafka',
  storage: 'kafka.tools.StorageTool',
} as const;
/** A tool's longest run: JVM start-up plus the scenario's records at a slow machine's rate. */
const toolTimeoutMs = 600_000;
/** The longest a broker may take to start and see every other broker. */
const brokerStartTimeoutMs = 90_000;
/** kafka-server-start.sh's default heap is 1 GiB; three brokers share the machine here. */
const brokerHeap = '-Xmx768m';

let classpath: string | undefined;

function kafkaClasspath(): string {
  classpath ??= execFileSync(
    'bash',
    [path.join(workspaceRoot, 'test/support/ensure-kafka-tools.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 },
  ).trim();
  return classpath;
}

/** A tool's stdout, and when each of its lines arrived (milliseconds since the epoch). */
export interface TimedOutput {
  readonly stdout: string;
  readonly lines: readonly { readonly text: string; readonly atEpochMs: number }[];
}

/**
 * Runs one of Kafka's tools to its end; resolves with its stdout and each line's arrival time
 * (the tools flush a line as they print it), rejects naming the failure.
 */
export function runKafkaToolTimed(
  tool: Exclude<keyof typeof mainClasses, 'broker'>,
  args: readonly string[],
): Promise<TimedOutput> {
  return new Promise((resolve, reject) => {
    const lines: { text: string; atEpochMs: number }[] = [];
    let partial = '';
    const child = execFile(
      'java',
      ['-cp', kafkaClasspath(), mainClasses[tool], ...args],
      { timeout: toolTimeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${tool} ${args.join(' ')} failed: ${error.message}\n${stderr}`))
          : resolve({ stdout, lines }),
    );
    child.stdout?.on('data', (chunk: string) => {
      const atEpochMs = Date.now();
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const text of parts) lines.push({ text, atEpochMs });
    });
  });
}

/** Runs one of Kafka's tools to its end; resolves with its stdout, rejects naming the failure. */
export async function runKafkaTool(
  tool: Exclude<keyof typeof mainClasses, 'broker'>,
  args: readonly string[],
): Promise<string> {
  return (await runKafkaToolTimed(tool, args)).stdout;
}

/** kafka-topics --create, on Spool's Kafka listener or on Kafka. */
export async function createTopic(
  bootstrap: string,
  topic: string,
  partitions: number,
  replicationFactor: number,
): Promise<void> {
  const stdout = await runKafkaTool('topics', [
    '--bootstrap-server',
    bootstrap,
    '--create',
    '--topic',
    topic,
    '--partitions',
    String(partitions),
    '--replication-factor',
    String(replicationFactor),
  ]);
  if (!stdout.includes(`Created topic ${topic}.`)) {
    throw new Error(`kafka-topics did not create ${topic}:\n${stdout}`);
  }
}

/**
 * The number of brokers a Kafka node lists in a Metadata v4 answer (the oldest version Kafka 4
 * serves), from a raw socket; 0 while it does not answer.
 */
function brokerCount(port: number): Promise<number> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (count: number): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(count);
    };
    const timer = setTimeout(() => done(0), 2_000);
    let received = Buffer.alloc(0);
    socket.on('error', () => done(0));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      // size, correlation id, throttle time, then the brokers array's length.
      if (received.length >= 16) done(received.readInt32BE(12));
    });
    // size, Metadata (3) v4, correlation id 1, no client id, every topic (null), no auto-creation.
    const request = Buffer.alloc(19);
    request.writeInt32BE(15, 0);
    request.writeInt16BE(3, 4);
    request.writeInt16BE(4, 6);
    request.writeInt32BE(1, 8);
    request.writeInt16BE(-1, 12);
    request.writeInt32BE(-1, 14);
    request.writeInt8(0, 18);
    socket.write(request);
  });
}

export interface KafkaCluster {
  /** The brokers' addresses, comma-separated, as bootstrap.servers takes them. */
  readonly bootstrap: string;
  /** CPU seconds each broker's JVM used so far, by name (`kafka-broker-1`, ...). */
  cpuSeconds(): Record<string, number>;
  /** Peak RSS in MB of each broker's JVM so far, by name. */
  peakRssMb(): Record<string, number>;
  /** Stops every broker (SIGTERM, then SIGKILL after 20 s) and removes the data folder. */
  stop(): Promise<void>;
}

/**
 * Apache Kafka in KRaft mode: `nodes` processes, each broker and controller (combined mode) with
 * a static quorum of all of them, internal topics replicated `nodes` times, the initial rebalance
 * delay 0 (as a benchmark wants), every other setting Kafka's default.
 */
export async function startKafkaCluster(nodes: number): Promise<KafkaCluster> {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-bench-kafka-'));
  const basePort = 21_000 + Math.floor(Math.random() * 2_000);
  const ids = Array.from({ length: nodes }, (_, index) => index + 1);
  const brokerPort = (id: number): number => basePort + id;
  const controllerPort = (id: number): number => basePort + 100 + id;
  const voters = ids.map((id) => `${id}@127.0.0.1:${controllerPort(id)}`).join(',');
  const clusterId = randomBytes(16).toString('base64url');
  const children: { name: string; child: ChildProcess }[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(
      children.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    log(`Apache Kafka: formatting ${nodes} KRaft node(s) in ${directory}`);
    await Promise.all(
      ids.map(async (id) => {
        const properties = path.join(directory, `server-${id}.properties`);
        writeFileSync(
          properties,
          [
            'process.roles=broker,controller',
            `node.id=${id}`,
            `controller.quorum.voters=${voters}`,
            `listeners=PLAINTEXT://127.0.0.1:${brokerPort(id)},CONTROLLER://127.0.0.1:${controllerPort(id)}`,
            `advertised.listeners=PLAINTEXT://127.0.0.1:${brokerPort(id)}`,
            'controller.listener.names=CONTROLLER',
            'inter.broker.listener.name=PLAINTEXT',
            'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
            `log.dirs=${path.join(directory, `data-${id}`)}`,
            `offsets.topic.replication.factor=${nodes}`,
            `transaction.state.log.replication.factor=${nodes}`,
            'transaction.state.log.min.isr=1',
            'group.initial.rebalance.delay.ms=0',
            '',
          ].join('\n'),
        );
        await runKafkaTool('storage', ['format', '-t', clusterId, '-c', properties]);
      }),
    );
    for (const id of ids) {
      const child = spawn(
        'java',
        [
          brokerHeap,
          '-cp',
          kafkaClasspath(),
          mainClasses.broker,
          path.join(directory, `server-${id}.properties`),
        ],
        { stdio: 'ignore' },
      );
      children.push({ name: `kafka-broker-${id}`, child });
    }
    const deadline = Date.now() + brokerStartTimeoutMs;
    for (const id of ids) {
      while ((await brokerCount(brokerPort(id))) < nodes) {
        const exited = children.find(({ child }) => child.exitCode !== null);
        if (exited !== undefined) throw new Error(`Apache Kafka's ${exited.name} exited at start`);
        if (Date.now() > deadline) {
          throw new Error(`Apache Kafka's broker ${id} did not see ${nodes} brokers in time`);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    log(`Apache Kafka: ${nodes} broker(s) up`);
  } catch (error) {
    await stop();
    throw error;
  }
  const pids = children.map(({ name, child }) => [name, child.pid!] as const);
  return {
    bootstrap: ids.map((id) => `127.0.0.1:${brokerPort(id)}`).join(','),
    cpuSeconds: () => Object.fromEntries(pids.map(([name, pid]) => [name, cpuSecondsOf(pid)])),
    peakRssMb: () => Object.fromEntries(pids.map(([name, pid]) => [name, peakRssMbOf(pid)])),
    stop,
  };
}
