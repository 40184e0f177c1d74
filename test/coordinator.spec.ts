// Proves the coordinator runtime with real processes on loopback (a controller on local
// metadata, three storage nodes, two coordinators, a gateway), through the gateway's group RPCs:
// the coordinators register and share the __consumer_offsets shards; a group member joins and
// is given every partition; offsets commit and fetch; DescribeGroup reports the lag from the
// partition leaders' high watermarks (and the owner's metrics the lag per partition, sum and max);
// a commit from a stale member epoch (a zombie) or an unknown member is refused.
// The owner checkpoints its shard every few commits (the live state rewritten, the records
// before it deleted), so the partition's log start moves past 0.
// Then the coordinator that owns the group is SIGKILLed: the other takes its shard within the
// coordinator session timeout (plus the replay, from the checkpoint), serves the committed
// offsets, which are read continuously during the failover and never go backwards, and the
// member keeps its partitions.
import { callOnce } from '@spool/common';
import { OffsetSpec, groupPartition, type OffsetFetchResponse } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventually } from './support/controller-client';
import { GatewayTestClient, startGatewayProcess } from './support/gateway-client';
import { startServiceProcess, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const coordinatorSessionTimeoutMs = 3_000;
// Fewer shards than the default 50 keep the test light on a busy machine; the controller's unit
// test covers the default.
const shardCount = 12;
const topic = 'orders';
const groupId = 'billing';
const checkpointIntervalRecords = 10;

let cluster: StorageTestCluster | undefined;
const processes: ServiceProcess[] = [];
const clients: GatewayTestClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const process of processes.splice(0)) {
    process.child.kill('SIGKILL');
    await process.exited;
  }
  await cluster?.stop();
  cluster = undefined;
});

async function startCoordinator(controllerPort: number, coordinatorId: string) {
  const coordinator = await startServiceProcess('coordinator', [
    '--controller-addresses',
    `127.0.0.1:${controllerPort}`,
    '--coordinator-id',
    coordinatorId,
    '--coordinator-session-timeout-ms',
    String(coordinatorSessionTimeoutMs),
    '--group-consumer-session-timeout-ms',
    '30000',
    '--group-consumer-heartbeat-interval-ms',
    '1000',
    // Checkpoints every few commits, so the takeover below replays from a checkpoint.
    '--offsets-checkpoint-interval-records',
    String(checkpointIntervalRecords),
  ]);
  processes.push(coordinator);
  return coordinator;
}

function committedOf(response: OffsetFetchResponse): Map<number, bigint> {
  return new Map(response.offsets.map((offset) => [offset.partition, offset.offset]));
}

describe('coordinator', () => {
  it('serves a group through the gateway and survives the SIGKILL of its coordinator', async () => {
    cluster = await StorageTestCluster.start(3, {
      controllerArgs: [
        '--coordinator-session-timeout-ms',
        String(coordinatorSessionTimeoutMs),
        '--offsets-topic-num-partitions',
        String(shardCount),
      ],
    });
    const controllerPort = cluster.controller.grpcPort;
    const [coordinatorA, coordinatorB, gatewayProcess] = await Promise.all([
      startCoordinator(controllerPort, 'coordinator-a'),
      startCoordinator(controllerPort, 'coordinator-b'),
      startGatewayProcess(controllerPort),
    ]);
    const coordinators = new Map([
      ['coordinator-a', coordinatorA],
      ['coordinator-b', coordinatorB],
    ]);
    processes.push(gatewayProcess);
    const gateway = new GatewayTestClient(`127.0.0.1:${gatewayProcess.grpcPort}`);
    clients.push(gateway);
    await cluster.createTopic(topic, 4, 3);
    // Ten records in each partition: the high watermark DescribeGroup measures lag against.
    await Promise.all(
      [0, 1, 2, 3].map((partition) =>
        cluster!.append(
          topic,
          partition,
          encodeRecordBatch({
            baseOffset: 0n,
            records: Array.from({ length: 10 }, (_, record) => ({
              key: null,
              value: Buffer.from(`${partition}-${record}`),
              timestampMs: BigInt(Date.now()),
            })),
          }),
        ),
      ),
    );

    // The two coordinators share the shards, half each.
    const watch = cluster.admin.watch();
    const shardOwners = await eventually(async () => {
      const shards = new Map<number, { coordinatorId: string; shardEpoch: number }>();
      for (const message of watch.messages) {
        if (message.snapshot) shards.clear();
        for (const shard of message.coordinatorShards) shards.set(shard.partition, shard);
      }
      const counts = new Map<string, number>();
      for (const shard of shards.values())
        counts.set(shard.coordinatorId, (counts.get(shard.coordinatorId) ?? 0) + 1);
      if (
        counts.get('coordinator-a') !== shardCount / 2 ||
        counts.get('coordinator-b') !== shardCount / 2
      )
        throw new Error(`shards not shared yet: ${JSON.stringify([...counts])}`);
      return shards;
    }, 15_000);
    watch.stop();
    const shard = groupPartition(groupId, shardCount);
    const owner = shardOwners.get(shard)!;

    // A member joins (retrying while the shard loads) and is given all four partitions.
    const join = await eventually(async () => {
      const response = await gateway.call(gateway.client.consumerGroupHeartbeat, {
        groupId,
        memberId: '',
        memberEpoch: 0,
        instanceId: '',
        subscribedTopics: [topic],
        subscribedRegex: '',
        ownedPartitions: [],
        rebalanceTimeoutMs: 30_000,
        assignor: 'uniform',
        rackId: '',
        clientId: '',
        clientHost: '',
        memberType: '',
      });
      if (response.error !== undefined)
        throw new Error(`${response.error.code}: ${response.error.message}`);
      return response;
    }, 20_000);
    expect(join.memberId).not.toBe('');
    expect(join.memberEpoch).toBeGreaterThan(0);
    expect(join.heartbeatIntervalMs).toBe(1_000);
    const assigned = join.assignment!.partitions.map((partition) => partition.partition).sort();
    expect(assigned).toEqual([0, 1, 2, 3]);
    const member = { memberId: join.memberId, memberEpoch: join.memberEpoch };
    const heartbeat = () =>
      gateway.call(gateway.client.consumerGroupHeartbeat, {
        groupId,
        ...member,
        instanceId: '',
        subscribedTopics: [topic],
        subscribedRegex: '',
        ownedPartitions: join.assignment!.partitions,
        rebalanceTimeoutMs: 30_000,
        assignor: 'uniform',
        rackId: '',
        clientId: '',
        clientHost: '',
        memberType: '',
      });
    expect((await heartbeat()).error).toBeUndefined();

    // Offsets commit and fetch; DescribeGroup shows the member and the lag (10 records each).
    const commit = (memberEpoch: number, offsets: bigint[]) =>
      gateway.call(gateway.client.offsetCommit, {
        groupId,
        memberId: member.memberId,
        memberEpoch,
        offsets: offsets.map((offset, partition) => ({
          topic,
          partition,
          offset,
          metadata: `commit ${offset}`,
          leaderEpoch: -1,
        })),
      });
    const committed = await commit(member.memberEpoch, [2n, 4n, 6n, 10n]);
    expect(committed.results.map((result) => result.error)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const fetched = await gateway.call(gateway.client.offsetFetch, { groupId, partitions: [] });
    expect(fetched.error).toBeUndefined();
    expect(committedOf(fetched)).toEqual(
      new Map([
        [0, 2n],
        [1, 4n],
        [2, 6n],
        [3, 10n],
      ]),
    );
    expect(fetched.offsets[0]!.metadata).toBe('commit 2');
    expect(fetched.offsets[0]!.commitTimestampMs).toBeGreaterThan(0n);
    const described = await gateway.call(gateway.client.describeGroup, { groupId });
    expect(described.error).toBeUndefined();
    expect(described.state).toBe('STABLE');
    expect(described.members.map((entry) => entry.memberId)).toEqual([member.memberId]);
    // The gateway names the member's address; the SDK-less call here sends no client id.
    expect(described.members[0]!.clientHost).toBe('127.0.0.1');
    expect(described.members[0]!.memberType).toBe('consumer');
    expect(described.members[0]!.subscribedTopics).toEqual([topic]);
    expect(described.assignor).toBe('uniform');
    expect(
      described.partitions.map((partition) => [
        partition.partition,
        partition.committedOffset,
        partition.highWatermark,
        partition.lag,
      ]),
    ).toEqual([
      [0, 2n, 10n, 8n],
      [1, 4n, 10n, 6n],
      [2, 6n, 10n, 4n],
      [3, 10n, 10n, 0n],
    ]);
    const listed = await gateway.call(gateway.client.listGroups, {});
    expect(listed.groups).toContainEqual({ groupId, state: 'STABLE' });

    // A zombie (an older member epoch, or a member that is not in the group) cannot commit.
    const stale = await commit(member.memberEpoch - 1, [9n, 9n, 9n, 9n]);
    expect(stale.results[0]!.error?.code).toBe('STALE_MEMBER_EPOCH');
    const unknown = await gateway.call(gateway.client.offsetCommit, {
      groupId,
      memberId: 'not-a-member',
      memberEpoch: member.memberEpoch,
      offsets: [{ topic, partition: 0, offset: 9n, metadata: '', leaderEpoch: -1 }],
    });
    expect(unknown.results[0]!.error?.code).toBe('UNKNOWN_MEMBER_ID');
    // Enough commits for a few checkpoints: the owner rewrites the live state and deletes the
    // records before it, so the shard's partition no longer starts at 0.
    for (let round = 0; round < 8; round++) await commit(member.memberEpoch, [3n, 5n, 7n, 10n]);
    const offsetsLogStart = await eventually(async () => {
      const leader = await cluster!.leaderOf('__consumer_offsets', shard);
      const client = cluster!.storageClient(leader);
      try {
        const listed = await callOnce(client, client.listOffsets, {
          partitions: [
            {
              topic: '__consumer_offsets',
              partition: shard,
              spec: OffsetSpec.OFFSET_SPEC_EARLIEST,
              timestampMs: 0n,
            },
          ],
        });
        const start = listed.results[0]!.offset;
        if (start === 0n) throw new Error('no checkpoint has deleted anything yet');
        return start;
      } finally {
        client.close();
      }
    }, 10_000);
    expect(offsetsLogStart).toBeGreaterThan(0n);

    // Offsets are read continuously from here: they must never go backwards.
    const highest = new Map<number, bigint>();
    let reads = 0;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const response = await gateway
          .call(gateway.client.offsetFetch, { groupId, partitions: [] }, 5_000)
          .catch(() => undefined);
        if (response?.error === undefined && response !== undefined) {
          for (const [partition, offset] of committedOf(response)) {
            expect(offset).toBeGreaterThanOrEqual(highest.get(partition) ?? -1n);
            highest.set(partition, offset);
          }
          reads++;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    await eventually(async () => {
      if (reads < 3) throw new Error('the poller has not read yet');
    }, 5_000);
    const readsBeforeKill = reads;

    // SIGKILL the owner: the other coordinator takes the shard and serves the same offsets.
    const killedAtMs = Date.now();
    const victim = coordinators.get(owner.coordinatorId)!;
    victim.child.kill('SIGKILL');
    await victim.exited;
    const afterTakeover = await eventually(async () => {
      const response = await gateway.call(
        gateway.client.offsetFetch,
        { groupId, partitions: [] },
        5_000,
      );
      if (response.error !== undefined) throw new Error(response.error.code);
      return response;
    }, 20_000);
    const takeoverMs = Date.now() - killedAtMs;
    expect(takeoverMs).toBeLessThan(coordinatorSessionTimeoutMs + 5_000);
    expect(committedOf(afterTakeover)).toEqual(
      new Map([
        [0, 3n],
        [1, 5n],
        [2, 7n],
        [3, 10n],
      ]),
    );
    // The member, replayed with a fresh session, keeps its epoch and partitions.
    const resumed = await heartbeat();
    expect(resumed.error).toBeUndefined();
    expect(resumed.memberEpoch).toBe(member.memberEpoch);
    expect((await commit(member.memberEpoch, [4n, 5n, 7n, 10n])).results[0]!.error).toBeUndefined();
    const stillStale = await commit(member.memberEpoch - 1, [0n, 0n, 0n, 0n]);
    expect(stillStale.results[0]!.error?.code).toBe('STALE_MEMBER_EPOCH');
    // Three more reads after the last commit: offsets still never went backwards.
    const readsAfterCommits = reads + 3;
    await vi.waitFor(() => expect(reads).toBeGreaterThanOrEqual(readsAfterCommits), {
      timeout: 10_000,
      interval: 20,
    });
    polling = false;
    await poller;
    expect(reads).toBeGreaterThan(readsBeforeKill);
    console.info(`takeover in ${takeoverMs} ms; ${reads} offset reads, none went backwards`);
    expect(highest.get(0)).toBe(4n);

    // The survivor owns every shard now, and reports the group's lag in its metrics.
    const afterDescribe = await gateway.call(gateway.client.describeGroup, { groupId });
    expect(afterDescribe.partitions.map((partition) => partition.lag)).toEqual([6n, 5n, 3n, 0n]);
    const survivor = [...coordinators.entries()].find(([id]) => id !== owner.coordinatorId)![1];
    const metrics = await (await fetch(`http://127.0.0.1:${survivor.metricsPort}/metrics`)).text();
    expect(metrics).toContain(
      `spool_coordinator_shards_owned{service="coordinator"} ${shardCount}`,
    );
    expect(metrics).toMatch(
      /spool_consumer_group_lag\{[^}]*group="billing"[^}]*partition="0"[^}]*\} 6/,
    );
    expect(metrics).toMatch(/spool_consumer_group_lag_sum\{[^}]*group="billing"[^}]*\} 14/);
    expect(metrics).toMatch(/spool_consumer_group_lag_max\{[^}]*group="billing"[^}]*\} 6/);
    expect(metrics).toMatch(/spool_offset_commits_total\{[^}]*group="billing"[^}]*\} 4/);
    expect(metrics).toMatch(/spool_consumer_group_members\{[^}]*group="billing"[^}]*\} 1/);
    expect(metrics).toMatch(/spool_consumer_groups\{[^}]*state="STABLE"[^}]*\} 1/);

    // The new owner published the shard under a higher epoch.
    const rewatch = cluster.admin.watch();
    const moved = await eventually(async () => {
      const found = rewatch.messages[0]?.coordinatorShards.find(
        (candidate) => candidate.partition === shard,
      );
      if (found === undefined) throw new Error('no snapshot yet');
      return found;
    }, 5_000);
    rewatch.stop();
    expect(moved.coordinatorId).not.toBe(owner.coordinatorId);
    expect(moved.shardEpoch).toBeGreaterThan(owner.shardEpoch);
    const offsetsTopic = await cluster.admin.call(cluster.admin.client.describeTopics, {
      names: ['__consumer_offsets'],
    });
    expect(offsetsTopic.topics[0]!.topic!.internal).toBe(true);
    expect(offsetsTopic.topics[0]!.topic!.partitions).toHaveLength(shardCount);
    expect(offsetsTopic.topics[0]!.topic!.partitions[0]!.replicas).toHaveLength(3);
  });
});
