// Proves partition reassignment (KIP-455) end to end with real processes: two controllers on
// etcd, storage nodes, a coordinator and a gateway, driven by the `spool partitions reassign`
// command line. 3 → 4 brokers: a generated plan moves a topic's replicas onto the new broker
// while an acks=all producer runs at a fixed rate; --verify exits 1 then 0, nothing acknowledged
// is lost and a consumer reads every record, and the old replicas' folders are deleted. A move to
// a broker that is down stays in progress and is cancelled back to the original replicas. A bad
// plan is refused naming its entry. `spool broker decommission` under the producer empties a
// broker (internal topics included) until `spool cluster status` shows it REMOVABLE, nothing
// acknowledged is lost, and new topics are not placed on it. A new replica catches up within
// follower.replication.throttled.rate (its metrics count the bytes moved and the throttling); one
// SIGKILLed while it catches up resumes after its restart and the move completes with every
// record. The active controller SIGKILLed midway: the standby reads the
// move from the store and completes it once the new replica catches up.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Admin, Producer, Spool } from '@spool/client';
import { startEtcdCluster } from '@spool/metadata/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli, type CliResult } from './support/cli-process';
import { eventually } from './support/controller-client';
import { startServiceProcess } from './support/service-process';
import { startFrontEnds, type FrontEnds } from './support/front-ends';
import { StorageTestCluster } from './support/storage-cluster';

const directory = mkdtempSync(path.join(tmpdir(), 'spool-reassign-'));
let etcd: Awaited<ReturnType<typeof startEtcdCluster>>;
let storage: StorageTestCluster;
let frontEnds: FrontEnds | undefined;
let spool: Spool;
let admin: Admin;

beforeAll(async () => {
  etcd = await startEtcdCluster(1);
  const controllerArgs = [
    '--metadata-backend',
    'etcd',
    '--etcd-endpoints',
    etcd.endpoints.join(','),
    '--cluster-name',
    'reassign',
    '--controller-lease-ttl-ms',
    '2000',
    '--broker-session-timeout-ms',
    '3000',
  ];
  const controllers = [
    await startServiceProcess('controller', controllerArgs),
    await startServiceProcess('controller', controllerArgs),
  ];
  storage = await StorageTestCluster.start(3, { controllers });
  frontEnds = await startFrontEnds(storage, 'reassign-spec');
  ({ spool, admin } = frontEnds);
}, 90_000);

afterAll(async () => {
  await frontEnds?.stop();
  await storage?.stop();
  await etcd?.stop();
  rmSync(directory, { recursive: true, force: true });
});

function reassign(...argv: string[]): Promise<CliResult> {
  return runCli(['partitions', 'reassign', '--gateway', frontEnds!.gatewayAddress, ...argv]);
}

function writePlan(name: string, partitions: unknown[]): string {
  const file = path.join(directory, name);
  writeFileSync(file, JSON.stringify({ version: 1, partitions }));
  return file;
}

/**
 * The throttled broker 4 must be the one catching up: a new single-replica partition placed on
 * it moves off first, while it is empty.
 */
async function moveOffBroker4(topic: string): Promise<void> {
  if ((await partitionOf(topic, 0)).replicas[0] !== 4) return;
  const away = writePlan(`${topic}-away.json`, [{ topic, partition: 0, replicas: [0] }]);
  expect((await reassign('--execute', '--plan', away)).exitCode).toBe(0);
  await vi.waitFor(
    async () => expect((await reassign('--verify', '--plan', away)).exitCode).toBe(0),
    { timeout: 20_000, interval: 250 },
  );
}

async function partitionOf(topic: string, partition: number) {
  const [described] = await admin.describeTopics({ topics: [topic] });
  return described!.partitions.find((candidate) => candidate.partition === partition)!;
}

/** Sends one record every `intervalMs` until stopped; collects what was acknowledged. */
function startProducer(topic: string, intervalMs: number) {
  const producer: Producer = spool.producer({ acks: 'all', lingerMs: 0, requestTimeoutMs: 10_000 });
  const acknowledged = new Set<string>();
  let failures = 0;
  let stopped = false;
  const done = (async () => {
    for (let sequence = 0; !stopped && sequence < 100_000; sequence++) {
      const started = Date.now();
      const value = `record-${sequence}`;
      try {
        await producer.send({ topic, messages: [{ key: value, value }] });
        acknowledged.add(value);
      } catch {
        failures++;
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, intervalMs - (Date.now() - started))),
      );
    }
  })();
  return {
    acknowledged,
    failures: () => failures,
    stop: async () => {
      stopped = true;
      await done;
      await producer.disconnect();
    },
  };
}

async function consumeValues(topic: string, expected: ReadonlySet<string>): Promise<Set<string>> {
  const consumer = spool.consumer({ groupId: `check-${topic}`, requestTimeoutMs: 5_000 });
  const seen = new Set<string>();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(message.value?.toString() ?? '');
      },
    });
    await vi.waitFor(() => expect([...expected].filter((value) => !seen.has(value))).toEqual([]), {
      timeout: 30_000,
      interval: 100,
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

describe('partition reassignment', () => {
  it('moves a topic onto a new broker under an acks=all producer without losing a record', async () => {
    await admin.createTopics({
      topics: [
        {
          topic: 'orders',
          numPartitions: 4,
          replicationFactor: 3,
          configEntries: [{ name: 'min.insync.replicas', value: '2' }],
        },
      ],
    });
    await storage.startNode(3);
    const producer = startProducer('orders', 20);
    try {
      await vi.waitFor(() => expect(producer.acknowledged.size).toBeGreaterThan(20), {
        timeout: 20_000,
      });
      const generated = await reassign('--generate', '--topics', 'orders', '--brokers', '0,1,2,3');
      expect(generated.exitCode, generated.stderr).toBe(0);
      expect(generated.stderr).toContain('Current partition replica assignment');
      const plan = JSON.parse(generated.stdout) as {
        partitions: Array<{ topic: string; partition: number; replicas: number[] }>;
      };
      expect(plan.partitions.length).toBeGreaterThan(0);
      expect(plan.partitions.some((entry) => entry.replicas.includes(3))).toBe(true);
      const before = await Promise.all(
        plan.partitions.map((entry) => partitionOf('orders', entry.partition)),
      );
      const planFile = writePlan('orders.json', plan.partitions);

      const executed = await reassign('--execute', '--plan', planFile);
      expect(executed.exitCode, executed.stderr).toBe(0);
      expect(executed.stdout).toContain('Started the reassignment of');
      await vi.waitFor(
        async () => {
          const verified = await reassign('--verify', '--plan', planFile);
          expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
        },
        { timeout: 40_000, interval: 500 },
      );
      // Production keeps going after the move.
      const afterMove = producer.acknowledged.size;
      await vi.waitFor(() => expect(producer.acknowledged.size).toBeGreaterThan(afterMove + 10), {
        timeout: 20_000,
      });
      for (const [index, entry] of plan.partitions.entries()) {
        const now = await partitionOf('orders', entry.partition);
        expect(now.replicas).toEqual(entry.replicas);
        expect(now.addingReplicas).toEqual([]);
        expect(now.removingReplicas).toEqual([]);
        // The replicas that left deleted their copies (Kafka's StopReplica with delete).
        for (const gone of before[index]!.replicas.filter((id) => !entry.replicas.includes(id))) {
          await vi.waitFor(
            () =>
              expect(
                existsSync(path.join(storage.dataDirOf(gone), `orders-${entry.partition}`)),
              ).toBe(false),
            { timeout: 10_000 },
          );
        }
      }
    } finally {
      await producer.stop();
    }
    expect(producer.acknowledged.size).toBeGreaterThan(40);
    const consumed = await consumeValues('orders', producer.acknowledged);
    expect([...producer.acknowledged].filter((value) => !consumed.has(value))).toEqual([]);
  }, 120_000);

  it('refuses a bad plan naming its entry', async () => {
    const unknownBroker = writePlan('unknown-broker.json', [
      { topic: 'orders', partition: 0, replicas: [0, 1, 9] },
    ]);
    const refused = await reassign('--execute', '--plan', unknownBroker);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain(
      'INVALID_REPLICA_ASSIGNMENT: plan ' +
        `${unknownBroker}, partitions[0] (orders-0): broker 9 is not in the cluster`,
    );
    const unknownTopic = writePlan('unknown-topic.json', [
      { topic: 'ghost', partition: 0, replicas: [0] },
    ]);
    expect((await reassign('--verify', '--plan', unknownTopic)).stderr).toContain(
      'partitions[0] (ghost-0): topic "ghost" does not exist',
    );
    const malformed = path.join(directory, 'malformed.json');
    writeFileSync(malformed, '{"version":1,');
    const bad = await reassign('--execute', '--plan', malformed);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toContain(`plan ${malformed} is not JSON`);
  }, 30_000);

  it('keeps a move to a stopped broker in progress and cancels it back', async () => {
    await storage.stopNode(3);
    await admin.createTopics({
      topics: [{ topic: 'cancelled', numPartitions: 1, replicationFactor: 2 }],
    });
    const original = await partitionOf('cancelled', 0);
    expect(original.replicas).not.toContain(3);
    const planFile = writePlan('cancelled.json', [
      { topic: 'cancelled', partition: 0, replicas: [3, original.replicas[0]] },
    ]);
    expect((await reassign('--execute', '--plan', planFile)).exitCode).toBe(0);
    const moving = await partitionOf('cancelled', 0);
    expect(moving.addingReplicas).toEqual([3]);
    expect(moving.removingReplicas).toEqual([original.replicas[1]]);
    const verified = await reassign('--verify', '--plan', planFile);
    expect(verified.exitCode).toBe(1);
    expect(verified.stdout).toContain('1 of 1 partitions remain: cancelled-0');
    const described = await runCli([
      'topic',
      'describe',
      'cancelled',
      '--json',
      '--gateway',
      frontEnds!.gatewayAddress,
    ]);
    expect(described.exitCode, described.stderr).toBe(0);
    expect((JSON.parse(described.stdout) as { partitions: unknown[] }).partitions[0]).toMatchObject(
      {
        partition: 0,
        replicas: [3, original.replicas[0], original.replicas[1]],
        isr: [...original.isr],
        leaderId: original.leaderId,
        addingReplicas: [3],
        removingReplicas: [original.replicas[1]],
      },
    );

    const cancelled = await reassign('--cancel', '--plan', planFile);
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain('Cancelled the reassignment of 1 partitions: cancelled-0');
    const restored = await partitionOf('cancelled', 0);
    expect([...restored.replicas].sort()).toEqual([...original.replicas].sort());
    expect(restored.addingReplicas).toEqual([]);
    expect(restored.isr.length).toBe(2);
    await storage.startNode(3);
  }, 60_000);

  it('decommissions a broker under an acks=all producer until it is removable', async () => {
    const producer = startProducer('orders', 20);
    const status = async () => {
      const result = await runCli([
        'cluster',
        'status',
        '--json',
        '--gateway',
        frontEnds!.gatewayAddress,
      ]);
      expect(result.exitCode, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as {
        brokers: Array<{ id: number; replicas: number; decommission: string }>;
      };
    };
    try {
      expect((await status()).brokers.find((broker) => broker.id === 3)!.replicas).toBeGreaterThan(
        0,
      );
      const cli = await runCli([
        'broker',
        'decommission',
        '3',
        '--gateway',
        frontEnds!.gatewayAddress,
      ]);
      expect(cli.exitCode, cli.stderr).toBe(0);
      expect(cli.stdout).toContain('broker 3 is decommissioned');
      await vi.waitFor(
        async () =>
          expect((await status()).brokers.find((broker) => broker.id === 3)).toMatchObject({
            replicas: 0,
            decommission: 'removable',
          }),
        { timeout: 40_000, interval: 500 },
      );
      const afterMove = producer.acknowledged.size;
      await vi.waitFor(() => expect(producer.acknowledged.size).toBeGreaterThan(afterMove + 10), {
        timeout: 20_000,
      });
    } finally {
      await producer.stop();
    }
    const consumed = await consumeValues('orders', producer.acknowledged);
    expect([...producer.acknowledged].filter((value) => !consumed.has(value))).toEqual([]);
    await admin.createTopics({
      topics: [{ topic: 'placed', numPartitions: 4, replicationFactor: 3 }],
    });
    const [placed] = await admin.describeTopics({ topics: ['placed'] });
    expect(placed!.partitions.flatMap((partition) => partition.replicas)).not.toContain(3);
    const cancelled = await runCli([
      'broker',
      'decommission',
      '3',
      '--cancel',
      '--gateway',
      frontEnds!.gatewayAddress,
    ]);
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect((await status()).brokers.find((broker) => broker.id === 3)!.decommission).toBe('none');
  }, 120_000);

  it('holds a catching-up replica to follower.replication.throttled.rate', async () => {
    const rateBytesPerSecond = 256 * 1024;
    const node = await storage.startNode(4, {
      extraArgs: ['--follower-replication-throttled-rate', String(rateBytesPerSecond)],
    });
    await admin.createTopics({
      topics: [{ topic: 'throttled', numPartitions: 1, replicationFactor: 1 }],
    });
    await moveOffBroker4('throttled');
    const producer = spool.producer({ acks: 'all', lingerMs: 0 });
    try {
      for (let batch = 0; batch < 8; batch++) {
        await producer.send({
          topic: 'throttled',
          messages: Array.from({ length: 16 }, () => ({ value: Buffer.alloc(8 * 1024, batch) })),
        });
      }
    } finally {
      await producer.disconnect();
    }
    const movedBytes = 8 * 16 * 8 * 1024;
    const planFile = writePlan('throttled.json', [
      { topic: 'throttled', partition: 0, replicas: [4] },
    ]);
    const startedMs = Date.now();
    expect((await reassign('--execute', '--plan', planFile)).exitCode).toBe(0);
    await vi.waitFor(
      async () => expect((await reassign('--verify', '--plan', planFile)).exitCode).toBe(0),
      { timeout: 40_000, interval: 250 },
    );
    // One second of the rate may go at once; the rest needs the rate's time at least.
    const floorMs = ((movedBytes - rateBytesPerSecond) / rateBytesPerSecond) * 1_000;
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(floorMs);
    const metrics = await (await fetch(`http://127.0.0.1:${node.metricsPort}/metrics`)).text();
    const counter = (name: string) =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1] ?? -1);
    expect(counter('spool_reassignment_bytes_in_total')).toBeGreaterThanOrEqual(movedBytes);
    expect(counter('spool_reassignment_throttled_total')).toBeGreaterThan(0);
  }, 90_000);

  it('completes a move whose new replica is killed while it catches up', async () => {
    const throttleArgs = ['--follower-replication-throttled-rate', String(256 * 1024)];
    await admin.createTopics({
      topics: [{ topic: 'restarted', numPartitions: 1, replicationFactor: 1 }],
    });
    await moveOffBroker4('restarted');
    const target = 4;
    const values = new Set<string>();
    const producer = spool.producer({ acks: 'all', lingerMs: 0 });
    try {
      for (let batch = 0; batch < 8; batch++) {
        const messages = Array.from({ length: 16 }, (_, index) => {
          const value = `${batch}-${index}-`.padEnd(8 * 1024, 'x');
          values.add(value);
          return { value };
        });
        await producer.send({ topic: 'restarted', messages });
      }
    } finally {
      await producer.disconnect();
    }
    const planFile = writePlan('restarted.json', [
      { topic: 'restarted', partition: 0, replicas: [target] },
    ]);
    expect((await reassign('--execute', '--plan', planFile)).exitCode).toBe(0);
    // Killed once it holds part of the log, well before the throttle lets it finish.
    const folder = path.join(storage.dataDirOf(target), 'restarted-0');
    await vi.waitFor(() => expect(existsSync(folder)).toBe(true), { timeout: 10_000 });
    expect((await partitionOf('restarted', 0)).addingReplicas).toEqual([target]);
    await storage.stopNode(target, 'SIGKILL');
    await storage.startNode(target, { extraArgs: throttleArgs });
    await vi.waitFor(
      async () => expect((await reassign('--verify', '--plan', planFile)).exitCode).toBe(0),
      { timeout: 40_000, interval: 250 },
    );
    const consumed = await consumeValues('restarted', values);
    expect([...values].filter((value) => !consumed.has(value))).toEqual([]);
  }, 90_000);

  it('completes a move after the active controller is killed midway', async () => {
    await storage.stopNode(3);
    await admin.createTopics({
      topics: [{ topic: 'failover', numPartitions: 1, replicationFactor: 2 }],
    });
    const original = await partitionOf('failover', 0);
    const target = [original.replicas[0]!, 3];
    const planFile = writePlan('failover.json', [
      { topic: 'failover', partition: 0, replicas: target },
    ]);
    expect((await reassign('--execute', '--plan', planFile)).exitCode).toBe(0);
    expect((await reassign('--verify', '--plan', planFile)).exitCode).toBe(1);

    const active = await eventually(async () => {
      const gauges = await Promise.all(
        storage.controllers.map(async (controller) => {
          const text = await (
            await fetch(`http://127.0.0.1:${controller.metricsPort}/metrics`)
          ).text();
          return /^spool_controller_active(?:\{[^}]*\})? 1$/m.test(text);
        }),
      );
      const index = gauges.indexOf(true);
      if (index < 0) throw new Error('no active controller');
      return storage.controllers[index]!;
    }, 10_000);
    active.child.kill('SIGKILL');
    await active.exited;
    await storage.startNode(3);

    await vi.waitFor(
      async () => {
        const verified = await reassign('--verify', '--plan', planFile);
        expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
      },
      { timeout: 40_000, interval: 500 },
    );
    const moved = await partitionOf('failover', 0);
    expect(moved.replicas).toEqual(target);
    expect([...moved.isr].sort()).toEqual([...target].sort());
  }, 90_000);
});
