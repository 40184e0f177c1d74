// Proves the controller is neither a single point of failure nor a source of split brain, with
// two real controller processes on a real etcd: SIGKILL of the active one while topics are being
// created → the standby serves within the lease TTL + 1 s and no acknowledged topic is lost;
// SIGSTOP of the active one past its lease → the standby takes over, and after SIGCONT the old
// one's writes are refused and it steps down, so exactly one controller reports itself active.
// And the takeover announcement (BeginControllerEpoch): with two real storage nodes, one killed
// and the active controller paused right after, the new controller fences the dead one at once
// because its address refuses the connection (its session is 60 s and nothing else could have
// fenced it: the old controller was paused before its stream-closed grace ran out), and the
// live one answers and stays unfenced.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster } from '@spool/metadata/testing';
import { ControllerTestClient, FakeBroker, eventually } from './support/controller-client';
import { startServiceProcess, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const leaseTtlMs = 2_000;
const directory = mkdtempSync(path.join(tmpdir(), 'spool-failover-'));
let etcd: Awaited<ReturnType<typeof startEtcdCluster>>;
let clusterName = 0;

beforeAll(async () => {
  etcd = await startEtcdCluster(1);
});

afterAll(async () => {
  await etcd?.stop();
  rmSync(directory, { recursive: true, force: true });
});

async function startControllers(): Promise<{
  controllers: ServiceProcess[];
  stop(): Promise<void>;
}> {
  clusterName++;
  const args = [
    '--metadata-backend',
    'etcd',
    '--etcd-endpoints',
    etcd.endpoints.join(','),
    '--cluster-name',
    `failover-${clusterName}`,
    '--controller-lease-ttl-ms',
    String(leaseTtlMs),
    '--broker-session-timeout-ms',
    '60000',
  ];
  const controllers = [
    await startServiceProcess('controller', args),
    await startServiceProcess('controller', args),
  ];
  return {
    controllers,
    stop: async () => {
      for (const controller of controllers) {
        controller.child.kill('SIGCONT');
        controller.child.kill('SIGKILL');
        await controller.exited;
      }
    },
  };
}

async function activeGauge(controller: ServiceProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${controller.metricsPort}/metrics`)).text();
  const match = /^spool_controller_active\{[^}]*\} (\d+)$/m.exec(text);
  return Number(match?.[1] ?? -1);
}

/** Which of the controllers is active, by asking each; waits until exactly one is. */
async function findActive(controllers: ServiceProcess[], timeoutMs: number): Promise<number> {
  return eventually(async () => {
    const gauges = await Promise.all(
      controllers.map((controller) => activeGauge(controller).catch(() => 0)),
    );
    const active = gauges.flatMap((gauge, index) => (gauge === 1 ? [index] : []));
    if (active.length !== 1) throw new Error(`active controllers: ${JSON.stringify(gauges)}`);
    return active[0]!;
  }, timeoutMs);
}

describe('controller failover on etcd', () => {
  it('survives SIGKILL of the active controller mid-creation without losing a topic', async () => {
    const { controllers, stop } = await startControllers();
    const clients = controllers.map(
      (controller) => new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`),
    );
    try {
      const activeIndex = await findActive(controllers, 10_000);
      const broker = new FakeBroker(() => clients[activeIndex]!, 0);
      await broker.register();

      const acknowledged: string[] = [];
      let killedAt = 0;
      let firstSuccessAfterKill = 0;
      for (let index = 0; index < 60; index++) {
        if (index === 20) {
          controllers[activeIndex]!.child.kill('SIGKILL');
          killedAt = Date.now();
        }
        const name = `topic-${index}`;
        await eventually(
          async () => {
            for (const client of clients) {
              const response = await client.createTopic(name, 1, 1).catch(() => undefined);
              const error = response?.results[0]!.error;
              if (
                response !== undefined &&
                (error === undefined || error.code === 'TOPIC_ALREADY_EXISTS')
              )
                return;
            }
            throw new Error(`no controller created ${name}`);
          },
          15_000,
          20,
        );
        acknowledged.push(name);
        if (killedAt > 0 && firstSuccessAfterKill === 0) firstSuccessAfterKill = Date.now();
      }
      const takeoverMs = firstSuccessAfterKill - killedAt;
      console.log(`takeover after SIGKILL: ${takeoverMs} ms (lease TTL ${leaseTtlMs} ms)`);
      expect(takeoverMs).toBeLessThan(leaseTtlMs + 1_000 + 500);
      const survivor = clients[1 - activeIndex]!;
      const listed = await survivor.call(survivor.client.listTopics, { includeInternal: false });
      for (const name of acknowledged) expect(listed.names).toContain(name);
    } finally {
      for (const client of clients) client.close();
      await stop();
    }
  });

  it('fences a paused controller: after SIGCONT its writes are refused and it steps down', async () => {
    const { controllers, stop } = await startControllers();
    const clients = controllers.map(
      (controller) => new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`),
    );
    try {
      const first = await findActive(controllers, 10_000);
      const second = 1 - first;
      const broker = new FakeBroker(() => clients[first]!, 0);
      await broker.register();
      expect(
        (await clients[first]!.createTopic('before-pause', 1, 1)).results[0]!.error,
      ).toBeUndefined();

      controllers[first]!.child.kill('SIGSTOP');
      await eventually(
        async () => expect(await activeGauge(controllers[second]!)).toBe(1),
        leaseTtlMs + 5_000,
      );
      await eventually(async () => {
        const response = await clients[second]!.createTopic('during-pause', 1, 1);
        expect(response.results[0]!.error?.code ?? 'NONE').toMatch(/NONE|TOPIC_ALREADY_EXISTS/);
      }, 5_000);

      controllers[first]!.child.kill('SIGCONT');
      // The resumed controller must not write: either it already knows it lost the lease, or its
      // guarded write fails; either way it answers NOT_CONTROLLER.
      const late = await clients[first]!.createTopic('after-pause', 1, 1).then(
        (response) => response.results[0]!.error?.code ?? 'CREATED',
        (error: { code?: string }) => error.code,
      );
      expect(late).toBe('NOT_CONTROLLER');
      expect(await findActive(controllers, 5_000)).toBe(second);
      const listed = await clients[second]!.call(clients[second]!.client.listTopics, {
        includeInternal: false,
      });
      expect(listed.names).toEqual(['before-pause', 'during-pause']);
    } finally {
      for (const client of clients) client.close();
      await stop();
    }
  });

  it('a new controller fences at once a storage node that died in the failover, keeps a live one', async () => {
    const { controllers } = await startControllers();
    const first = await findActive(controllers, 10_000);
    const second = 1 - first;
    const cluster = await StorageTestCluster.start(2, { controllers });
    try {
      await cluster.stopNode(0, 'SIGKILL');
      controllers[first]!.child.kill('SIGSTOP');
      await eventually(
        async () => expect(await activeGauge(controllers[second]!)).toBe(1),
        leaseTtlMs + 5_000,
      );
      const records = () =>
        controllers[second]!.logLines.flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
      const announcement = await eventually(async () => {
        const found = records().find(
          (record) => record['msg'] === 'announced this controller to the brokers it inherited',
        );
        if (found === undefined) throw new Error('no announcement logged yet');
        return found;
      }, 5_000);
      expect(announcement).toMatchObject({ reached: 1, refused: 1, unanswered: 0 });
      await eventually(async () => {
        expect(
          records().find(
            (record) =>
              record['msg'] ===
                'broker fenced: its address refused a connection when this controller took over' &&
              record['brokerId'] === 0,
          ),
        ).toBeDefined();
      }, 5_000);
      // Past the takeover grace, broker 1 (which answered) is still unfenced, broker 0 fenced.
      const client = new ControllerTestClient(`127.0.0.1:${controllers[second]!.grpcPort}`);
      try {
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        const described = await client.call(client.client.describeCluster, {});
        const stateOf = (brokerId: number) =>
          described.brokers.find((broker) => broker.brokerId === brokerId)?.state;
        expect({ 0: stateOf(0), 1: stateOf(1) }).toEqual({ 0: 'FENCED', 1: 'ALIVE' });
      } finally {
        client.close();
      }
    } finally {
      await cluster.stop();
    }
  });
});
