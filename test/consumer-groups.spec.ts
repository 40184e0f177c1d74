// Consumer groups end to end with real processes (a controller, three storage nodes, two
// coordinators, a gateway, and every group member a process of its own using the SDK):
// - Churn: three members on a 12-partition topic while a producer writes numbered records; a
//   member joins, one leaves (SIGTERM), one is SIGKILLed, another joins, and the coordinator
//   that owns the group is SIGKILLed. Checked continuously, from the members' own rebalance
//   callbacks and from the coordinator's DescribeGroup: no partition is ever owned by two
//   members. After the SIGKILL every partition is owned again within the session timeout (plus
//   a heartbeat). Committed offsets never go backwards, across the coordinator's death too. And
//   at-least-once consumption misses no acknowledged record.
// - Broadcast: two groups on one topic each receive every record, and `spool group describe
//   --json` shows their lag at 0.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import * as path from 'node:path';
import { Spool, type Producer } from '@spool/client';
import { groupPartition } from '@spool/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import { GatewayTestClient, startGatewayProcess } from './support/gateway-client';
import { startServiceProcess, workspaceRoot, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const coordinatorSessionTimeoutMs = 3_000;
const memberSessionTimeoutMs = 6_000;
const heartbeatIntervalMs = 500;
const shardCount = 12;
const memberScript = path.join(workspaceRoot, 'test/support/group-member.mjs');
const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');
const execFileAsync = promisify(execFile);

interface MemberEvent {
  event: 'assigned' | 'revoked' | 'lost' | 'record';
  partitions?: Array<{ topic: string; partition: number }>;
  partition?: number;
  offset?: string;
  value?: string;
  atMs: number;
}

/** A group member process and everything it reported. */
class MemberProcess {
  readonly events: MemberEvent[] = [];
  readonly exited: Promise<void>;
  /** When the process stopped consuming for sure: its exit, or the moment it was SIGKILLed. */
  endedAtMs: number | undefined;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    gateway: string,
    groupId: string,
    topic: string,
  ) {
    this.child = spawn(
      process.execPath,
      [memberScript, gateway, groupId, topic, String(memberSessionTimeoutMs)],
      { cwd: workspaceRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let buffered = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.startsWith('{')) this.events.push(JSON.parse(line) as MemberEvent);
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`[${name}] ${chunk}`));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', () => {
        this.endedAtMs ??= Date.now();
        resolve();
      }),
    );
  }

  kill(signal: NodeJS.Signals): void {
    if (signal === 'SIGKILL') this.endedAtMs = Date.now();
    this.child.kill(signal);
  }

  values(): string[] {
    return this.events.filter((event) => event.event === 'record').map((event) => event.value!);
  }

  /** [start, end) of each time this member owned a partition, by partition. */
  ownership(): Array<{ partition: number; fromMs: number; toMs: number; member: string }> {
    const open = new Map<number, number>();
    const intervals: Array<{ partition: number; fromMs: number; toMs: number; member: string }> =
      [];
    for (const event of this.events) {
      for (const { partition } of event.partitions ?? []) {
        if (event.event === 'assigned') open.set(partition, event.atMs);
        else if (open.has(partition)) {
          intervals.push({
            partition,
            fromMs: open.get(partition)!,
            toMs: event.atMs,
            member: this.name,
          });
          open.delete(partition);
        }
      }
    }
    const endMs = this.endedAtMs ?? Number.POSITIVE_INFINITY;
    for (const [partition, fromMs] of open)
      intervals.push({ partition, fromMs, toMs: endMs, member: this.name });
    return intervals;
  }
}

const processes: ServiceProcess[] = [];
const members: MemberProcess[] = [];
let cluster: StorageTestCluster | undefined;
let gatewayClient: GatewayTestClient | undefined;
let spool: Spool | undefined;
afterEach(async () => {
  for (const member of members.splice(0)) {
    member.kill('SIGKILL');
    await member.exited;
  }
  spool = undefined;
  gatewayClient?.close();
  for (const service of processes.splice(0)) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await cluster?.stop();
  cluster = undefined;
});

async function startCluster(): Promise<{
  gateway: string;
  coordinators: Map<string, ServiceProcess>;
}> {
  cluster = await StorageTestCluster.start(3, {
    controllerArgs: [
      '--coordinator-session-timeout-ms',
      String(coordinatorSessionTimeoutMs),
      '--offsets-topic-num-partitions',
      String(shardCount),
    ],
  });
  const controllerPort = cluster.controller.grpcPort;
  const coordinatorIds = ['coordinator-a', 'coordinator-b'];
  const started = await Promise.all([
    ...coordinatorIds.map((coordinatorId) =>
      startServiceProcess('coordinator', [
        '--controller-addresses',
        `127.0.0.1:${controllerPort}`,
        '--coordinator-id',
        coordinatorId,
        '--coordinator-session-timeout-ms',
        String(coordinatorSessionTimeoutMs),
        '--group-consumer-session-timeout-ms',
        String(memberSessionTimeoutMs),
        '--group-consumer-heartbeat-interval-ms',
        String(heartbeatIntervalMs),
      ]),
    ),
    startGatewayProcess(controllerPort),
  ]);
  processes.push(...started);
  const gateway = `127.0.0.1:${started[2]!.grpcPort}`;
  gatewayClient = new GatewayTestClient(gateway);
  spool = new Spool({ brokers: [gateway], clientId: 'consumer-groups-test' });
  return {
    gateway,
    coordinators: new Map(coordinatorIds.map((id, index) => [id, started[index]!])),
  };
}

/** The coordinator that owns a group's shard, from the controller's metadata stream. */
async function ownerOf(groupId: string): Promise<string> {
  const watch = cluster!.admin.watch();
  try {
    return await eventually(async () => {
      let owner = '';
      for (const message of watch.messages) {
        for (const shard of message.coordinatorShards)
          if (shard.partition === groupPartition(groupId, shardCount)) owner = shard.coordinatorId;
      }
      if (owner === '') throw new Error(`no owner yet for ${groupId}`);
      return owner;
    }, 10_000);
  } finally {
    watch.stop();
  }
}

/** Writes numbered records until stopped; resolves with the acknowledged values. */
function produceContinuously(producer: Producer, topic: string) {
  const acknowledged: string[] = [];
  let stopped = false;
  const done = (async () => {
    for (let sequence = 0; !stopped; sequence++) {
      const values = Array.from({ length: 20 }, (_, index) => `v-${sequence}-${index}`);
      await producer.send({ topic, messages: values.map((value) => ({ value })) });
      acknowledged.push(...values);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    acknowledged,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

describe('consumer groups', () => {
  it('keeps single ownership and misses no record through member and coordinator churn', async () => {
    const { gateway, coordinators } = await startCluster();
    const topic = 'churn';
    const groupId = 'workers';
    await cluster!.createTopic(topic, 12, 3);
    const producer = spool!.producer({ acks: 'all', lingerMs: 5 });
    const production = produceContinuously(producer, topic);

    // The coordinator's view, read continuously: never a partition in two assignments, and
    // committed offsets that never go backwards.
    const violations: string[] = [];
    const committed = new Map<number, bigint>();
    let watching = true;
    let describeCalls = 0;
    const watcher = (async () => {
      while (watching) {
        try {
          const described = await gatewayClient!.call(
            gatewayClient!.client.describeGroup,
            { groupId },
            2_000,
          );
          describeCalls++;
          const owners = new Map<number, string>();
          for (const member of described.members) {
            for (const { partition } of member.assignment) {
              const other = owners.get(partition);
              if (other !== undefined)
                violations.push(
                  `coordinator: ${topic}-${partition} in ${other} and ${member.memberId}`,
                );
              owners.set(partition, member.memberId);
            }
          }
          const fetched = await gatewayClient!.call(
            gatewayClient!.client.offsetFetch,
            { groupId, partitions: [] },
            2_000,
          );
          for (const offset of fetched.offsets) {
            const previous = committed.get(offset.partition) ?? -1n;
            if (offset.offset >= 0n && offset.offset < previous)
              violations.push(
                `offset of ${topic}-${offset.partition} went back ${previous}→${offset.offset}`,
              );
            if (offset.offset > previous) committed.set(offset.partition, offset.offset);
          }
        } catch {
          // A coordinator moving: the gateway answers once the new owner serves the group.
        }
        await sleep(100);
      }
    })();

    const start = (name: string) => {
      const member = new MemberProcess(name, gateway, groupId, topic);
      members.push(member);
      return member;
    };
    const ownedPartitions = async () => {
      const described = await gatewayClient!.call(gatewayClient!.client.describeGroup, { groupId });
      return described.members.flatMap((member) =>
        member.assignment.map((entry) => entry.partition),
      );
    };
    const waitUntilAllOwned = (timeoutMs: number) =>
      eventually(async () => {
        const owned = await ownedPartitions();
        if (new Set(owned).size !== 12) throw new Error(`${owned.length} of 12 partitions owned`);
      }, timeoutMs);

    const [first, second] = [start('member-1'), start('member-2')];
    start('member-3');
    await waitUntilAllOwned(30_000);
    await sleep(2_000);
    start('member-4');
    await sleep(3_000);
    first.kill('SIGTERM');
    await first.exited;
    await sleep(3_000);

    // SIGKILL: the coordinator evicts the member after the session timeout and gives its
    // partitions to the others at their next heartbeat.
    const killedAtMs = Date.now();
    second.kill('SIGKILL');
    await second.exited;
    await eventually(async () => {
      const described = await gatewayClient!.call(gatewayClient!.client.describeGroup, { groupId });
      if (described.members.length !== 2) throw new Error(`${described.members.length} members`);
    }, memberSessionTimeoutMs + 10_000);
    await waitUntilAllOwned(10_000);
    const reownedAfterMs = Date.now() - killedAtMs;
    console.log(`every partition owned again ${reownedAfterMs} ms after the SIGKILL`);
    expect(reownedAfterMs).toBeLessThanOrEqual(
      memberSessionTimeoutMs + 3 * heartbeatIntervalMs + 2_000,
    );

    start('member-5');
    await sleep(3_000);

    // The coordinator that owns the group dies; the other replays the shard and serves it.
    const owner = await ownerOf(groupId);
    const coordinatorKilledAtMs = Date.now();
    coordinators.get(owner)!.child.kill('SIGKILL');
    await coordinators.get(owner)!.exited;
    const before = describeCalls;
    await eventually(async () => {
      if (describeCalls <= before) throw new Error('no DescribeGroup answered since the SIGKILL');
    }, 30_000);
    console.log(
      `group served again ${Date.now() - coordinatorKilledAtMs} ms after its coordinator's SIGKILL`,
    );
    await waitUntilAllOwned(20_000);
    await sleep(2_000);

    await production.stop();
    await producer.disconnect();
    const acknowledged = new Set(production.acknowledged);
    console.log(`${acknowledged.size} records acknowledged`);
    await eventually(async () => {
      const processed = new Set(members.flatMap((member) => member.values()));
      const missing = [...acknowledged].filter((value) => !processed.has(value));
      if (missing.length > 0)
        throw new Error(`${missing.length} acknowledged records not processed`);
    }, 30_000);

    watching = false;
    await watcher;
    // The members' own view: intervals of ownership of one partition never overlap.
    const intervals = members.flatMap((member) => member.ownership());
    for (const a of intervals) {
      for (const b of intervals) {
        if (a === b || a.member === b.member || a.partition !== b.partition) continue;
        if (a.fromMs < b.toMs && b.fromMs < a.toMs)
          violations.push(
            `members: ${topic}-${a.partition} owned by ${a.member} [${a.fromMs},${a.toMs}) and ` +
              `${b.member} [${b.fromMs},${b.toMs})`,
          );
      }
    }
    expect(violations).toEqual([]);
    expect(describeCalls).toBeGreaterThan(50);
    expect(committed.size).toBe(12);
  }, 240_000);

  it('delivers every record to each of two groups (broadcast)', async () => {
    const { gateway } = await startCluster();
    const topic = 'news';
    await cluster!.createTopic(topic, 3, 3);
    const producer = spool!.producer({ acks: 'all' });
    const values = Array.from({ length: 300 }, (_, index) => `news-${index}`);
    await producer.send({ topic, messages: values.map((value) => ({ value })) });
    await producer.disconnect();
    const readers = ['analytics', 'archive'].map((groupId) => {
      const member = new MemberProcess(groupId, gateway, groupId, topic);
      members.push(member);
      return member;
    });
    await eventually(async () => {
      for (const reader of readers) {
        const received = new Set(reader.values());
        if (received.size !== values.length)
          throw new Error(`${reader.name} has ${received.size} of ${values.length}`);
      }
    }, 60_000);
    for (const reader of readers) expect(new Set(reader.values())).toEqual(new Set(values));

    // The operator's view: `spool group describe --json` with lag 0 once the commits land.
    await eventually(async () => {
      const { stdout } = await execFileAsync(
        process.execPath,
        [cliEntryPoint, 'group', 'describe', 'analytics', '--json', '--gateway', gateway],
        { cwd: workspaceRoot },
      );
      const described = JSON.parse(stdout) as {
        partitions: Array<{
          topic: string;
          partition: number;
          committedOffset: string | null;
          highWatermark: string;
          lag: string;
        }>;
      };
      expect(described.partitions).toHaveLength(3);
      const total = described.partitions.reduce(
        (sum, entry) => sum + Number(entry.highWatermark),
        0,
      );
      expect(total).toBe(values.length);
      for (const partition of described.partitions) {
        expect(partition.topic).toBe(topic);
        // A partition that got no record has nothing committed: its lag is unknown (-1), as
        // kafka-consumer-groups prints "-".
        if (partition.highWatermark === '0') continue;
        expect(partition.lag).toBe('0');
        expect(partition.committedOffset).toBe(partition.highWatermark);
      }
    }, 20_000);
  }, 120_000);
});
