// Proves `spool dev` supervises its cluster as a StatefulSet does, with real processes and real
// signals, on one data folder (3 storage nodes):
// 1. an idempotent acks=all producer sends 20,000 records while the storage node leading one of
//    its partitions is killed with SIGKILL: spool dev restarts that node (same id, data and
//    ports; cluster.json gets its new pid), the node is back in every ISR, every send is
//    acknowledged once, and a consumer reads every record back exactly once;
// 2. SIGINT to spool dev's whole process group (as a terminal's Ctrl-C) reaches spool dev alone,
//    which stops the gateway and coordinator, then the storage nodes, then the controller, and
//    exits 0 with no process left; the next start on the same folder prints "ready" with every
//    partition in sync and shows no fenced broker and no refused registration;
// 3. with --restart never, a killed storage node stays down (cluster.json says so) while the rest
//    keeps serving a producer and a consumer.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Spool, type Admin, type RecordMetadata } from '@spool/client';
import { afterAll, describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

interface ClusterFile {
  processes: Array<{
    role: string;
    id: number;
    pid: number;
    ports: { grpc: number; metrics: number; data?: number };
    state: string;
    restarts: number;
  }>;
}

const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');
const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-dev-'));
const clusterFilePath = path.join(dataDirectory, 'cluster.json');
const topic = 'supervised';
const partitionCount = 3;
/** Records in all, sent in sends of recordsPerSend, at most sendsInFlightMax unsettled at once. */
const recordCount = 20_000;
const recordsPerSend = 100;
const sendsInFlightMax = 8;
/** The leader dies once this many records were acknowledged. */
const recordsBeforeKill = 4_000;

/** One run of `spool dev`, in a process group of its own, as a terminal would start it. */
class DevProcess {
  output = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(extraArguments: readonly string[]) {
    this.child = spawn(
      process.execPath,
      [
        cliEntryPoint,
        'dev',
        '--nodes',
        '3',
        '--gateway-port',
        '0',
        '--kafka-port',
        '0',
        '--data-dir',
        dataDirectory,
      ].concat(extraArguments),
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    this.child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The "ready" line; fails with the output's tail if it does not come in time. */
  async ready(timeoutMs = 45_000): Promise<string> {
    await eventually(() => /spool dev: \d+ processes ready in .*\n/.exec(this.output)?.[0], {
      timeoutMs,
      what: () => `"ready" from spool dev; its output ends with:\n${this.output.slice(-3_000)}`,
    });
    return /spool dev: \d+ processes ready in .*\n/.exec(this.output)![0];
  }

  /** Ctrl-C as a terminal sends it: SIGINT to every process of the foreground group. */
  interruptGroup(): void {
    process.kill(-this.pid, 'SIGINT');
  }

  /** Leaves nothing behind whatever happened: spool dev's group and each child's group. */
  killEverything(): void {
    for (const group of [this.pid, ...clusterPids()]) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
}

function readClusterFile(): ClusterFile {
  return JSON.parse(readFileSync(clusterFilePath, 'utf8')) as ClusterFile;
}

function clusterPids(): number[] {
  try {
    return readClusterFile().processes.map((entry) => entry.pid);
  } catch {
    return [];
  }
}

function storageNode(id: number): ClusterFile['processes'][number] {
  return readClusterFile().processes.find(
    (entry) => entry.role === 'storage-node' && entry.id === id,
  )!;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `probe` until it returns a value other than undefined or false, within the bound. */
async function eventually<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: { timeoutMs: number; what: () => string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
  throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what()}${cause}`);
}

function connect(): { spool: Spool; admin: Admin } {
  const gateway = readClusterFile().processes.find((entry) => entry.role === 'gateway')!;
  const spool = new Spool({
    brokers: [`127.0.0.1:${gateway.ports.grpc}`],
    clientId: 'spool-dev-spec',
    logLevel: 'silent',
  });
  return { spool, admin: spool.admin() };
}

/** Every partition of every topic (internal ones too) with all its replicas in the ISR. */
async function everyPartitionInSync(admin: Admin): Promise<boolean> {
  const names = await admin.listTopics({ includeInternal: true });
  const topics = await admin.describeTopics({ topics: names });
  return topics.every((description) =>
    description.partitions.every(
      (partition) =>
        partition.leaderId >= 0 &&
        partition.replicas.every((replica) => partition.isr.includes(replica)),
    ),
  );
}

/** Reads the topic from the beginning until `count` records came; returns their values. */
async function consumeValues(spool: Spool, count: number, timeoutMs: number): Promise<string[]> {
  const consumer = spool.consumer({ groupId: `reader-${Date.now()}`, requestTimeoutMs: 5_000 });
  const values: string[] = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value === null ? '' : Buffer.from(message.value).toString());
      },
    });
    await eventually(() => values.length >= count, {
      timeoutMs,
      what: () => `${count} records (got ${values.length})`,
    });
  } finally {
    await consumer.close();
  }
  return values;
}

const runs: DevProcess[] = [];
afterAll(async () => {
  for (const run of runs) run.killEverything();
  rmSync(dataDirectory, { recursive: true, force: true });
});

describe('spool dev supervises its processes', () => {
  it('restarts a SIGKILLed leader into the ISR while an acks=all producer loses nothing', async () => {
    const dev = new DevProcess([]);
    runs.push(dev);
    expect(await dev.ready()).toMatch(/^spool dev: 6 processes ready in \d+\.\d s, 0 partitions/);
    const { spool, admin } = connect();
    try {
      await admin.createTopics({
        topics: [{ topic, numPartitions: partitionCount, replicationFactor: 3 }],
      });
      const [description] = await admin.describeTopics({ topics: [topic] });
      const leaderId = description!.partitions[0]!.leaderId;
      const victim = storageNode(leaderId);

      const producer = spool.producer({ acks: 'all', lingerMs: 5 });
      const acknowledged: RecordMetadata[][] = [];
      let acknowledgedRecords = 0;
      let killedAtRecords: number | undefined;
      try {
        const inFlight = new Set<Promise<void>>();
        for (let first = 0; first < recordCount; first += recordsPerSend) {
          if (killedAtRecords === undefined && acknowledgedRecords >= recordsBeforeKill) {
            killedAtRecords = acknowledgedRecords;
            process.kill(victim.pid, 'SIGKILL');
          }
          const messages = Array.from({ length: recordsPerSend }, (_, index) => ({
            key: `key-${first + index}`,
            value: `record-${first + index}`,
          }));
          const send: Promise<void> = producer.send({ topic, messages }).then((metadata) => {
            acknowledged.push(metadata);
            acknowledgedRecords += metadata.length;
            inFlight.delete(send);
          });
          inFlight.add(send);
          if (inFlight.size >= sendsInFlightMax) await Promise.race(inFlight);
        }
        await Promise.all(inFlight);
      } finally {
        await producer.close();
      }
      expect(killedAtRecords).toBeDefined();
      expect(acknowledgedRecords).toBe(recordCount);

      // Restarted by spool dev with the same identity and ports; cluster.json has the new pid.
      const restarted = await eventually(
        () => {
          const entry = storageNode(leaderId);
          return entry.state === 'running' && entry.pid !== victim.pid ? entry : undefined;
        },
        { timeoutMs: 20_000, what: () => `storage-node-${leaderId} running again` },
      );
      expect(restarted.restarts).toBe(1);
      expect(restarted.ports).toEqual(victim.ports);
      expect(isAlive(restarted.pid)).toBe(true);
      const exitAndRestart = new RegExp(
        `spool dev: storage-node-${leaderId} exited \\(SIGKILL\\).*restarting it in[^]*` +
          `spool dev: storage-node-${leaderId} restarted \\(pid ${restarted.pid}, restart 1\\)`,
      );
      await eventually(() => exitAndRestart.test(dev.output), {
        timeoutMs: 5_000,
        what: () => `the exit and the restart logged:\n${dev.output.slice(-2_000)}`,
      });
      await eventually(() => everyPartitionInSync(admin), {
        timeoutMs: 30_000,
        what: () => `storage-node-${leaderId} back in every ISR`,
      });

      // Every record once in the log (high watermarks) and once to the consumer.
      const offsets = await admin.fetchTopicOffsets(topic);
      const logged = offsets.reduce((sum, partition) => sum + Number(partition.high), 0);
      expect(logged).toBe(recordCount);
      const values = await consumeValues(spool, recordCount, 30_000);
      expect(values).toHaveLength(recordCount);
      expect(new Set(values).size).toBe(recordCount);
    } finally {
      await admin.close();
    }

    dev.interruptGroup();
    expect(await dev.exited).toBe(0);
  });

  it('stops in order on a SIGINT to its process group, and the next start is clean', async () => {
    const first = new DevProcess([]);
    runs.push(first);
    await first.ready();
    const pids = clusterPids();
    first.interruptGroup();
    expect(await first.exited).toBe(0);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    const phases = [
      'spool dev: SIGINT: stopping in order',
      'spool dev: stopping coordinator-0, gateway',
      'spool dev: stopping storage-node-0, storage-node-1, storage-node-2 (controlled shutdown)',
      'spool dev: stopping controller',
      'spool dev: stopped in',
    ].map((phase) => first.output.indexOf(phase));
    expect(phases.every((index) => index >= 0)).toBe(true);
    expect([...phases].sort((left, right) => left - right)).toEqual(phases);
    // Each service got one signal, from spool dev: none was told twice.
    expect(first.output).not.toContain('second signal');

    const second = new DevProcess([]);
    runs.push(second);
    // 3 partitions of the topic and 50 of __consumer_offsets, created by the reader's group.
    expect(await second.ready()).toMatch(/processes ready in \d+\.\d s, 53 partitions in sync/);
    for (const unclean of [/fenced/i, /held by a live process/, /DUPLICATE_BROKER_REGISTRATION/]) {
      expect(second.output).not.toMatch(unclean);
    }
    second.interruptGroup();
    expect(await second.exited).toBe(0);
  });

  it('leaves a killed node down with --restart never while the rest keeps serving', async () => {
    const dev = new DevProcess(['--restart', 'never']);
    runs.push(dev);
    await dev.ready();
    const victim = storageNode(2);
    process.kill(victim.pid, 'SIGKILL');
    await eventually(() => storageNode(2).state === 'down', {
      timeoutMs: 10_000,
      what: () => 'storage-node-2 down in cluster.json',
    });
    // cluster.json is written as the message is: the pipe may bring the message a moment later.
    await eventually(
      () => /spool dev: storage-node-2 exited \(SIGKILL\).*left down/.test(dev.output),
      {
        timeoutMs: 5_000,
        what: () => `"left down" in the output:\n${dev.output.slice(-2_000)}`,
      },
    );

    const { spool, admin } = connect();
    try {
      const producer = spool.producer({ acks: 'all' });
      try {
        const sent = await producer.send({
          topic,
          messages: Array.from({ length: partitionCount * 10 }, (_, index) => ({
            key: `after-${index}`,
            value: `after-${index}`,
          })),
        });
        expect(sent.length).toBe(partitionCount * 10);
      } finally {
        await producer.close();
      }
      const values = await consumeValues(spool, recordCount + partitionCount * 10, 30_000);
      expect(values.filter((value) => value.startsWith('after-'))).toHaveLength(
        partitionCount * 10,
      );
    } finally {
      await admin.close();
    }
    expect(storageNode(2).pid).toBe(victim.pid);
    expect(storageNode(2).state).toBe('down');
    expect(dev.output).not.toContain('storage-node-2 restarted');

    dev.interruptGroup();
    expect(await dev.exited).toBe(0);
    for (const pid of clusterPids()) expect(isAlive(pid)).toBe(false);
  });
});
