// Proves AlterPartitionReassignments' checks and bookkeeping, in-process over gRPC on the local
// metadata backend with three registered brokers: each refused target is answered on its own
// partition with an error naming it (unknown topic or partition, unregistered or repeated broker,
// an empty set, fewer replicas than min.insync.replicas, a cancel with nothing moving, a partition
// named twice) while the valid ones in the same request start; a started move shows in
// ListPartitionReassignments and in the partition's metadata, and a cancel restores the set.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController } from './controller-service';

let service: RunningService;
let client: ControllerServiceClient;

/** Retries NOT_CONTROLLER only, while the controller wins its election. */
async function untilActive<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if ((error as { code?: string }).code !== 'NOT_CONTROLLER' || Date.now() > deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

beforeAll(async () => {
  const journal = path.join(mkdtempSync(path.join(tmpdir(), 'spool-reassign-')), 'journal');
  service = await startController({
    argv: [
      ...['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
      ...['--metadata-path', journal, '--broker-session-timeout-ms', '60000'],
    ],
    env: {},
    handleSignals: false,
  });
  client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
  for (const brokerId of [0, 1, 2]) {
    await untilActive(() =>
      callOnce(client, client.registerBroker, {
        brokerId,
        rack: '',
        endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1000 + brokerId }],
        incarnationId: `incarnation-${brokerId}`,
      }),
    );
  }
  const created = await callOnce(client, client.createTopics, {
    topics: [
      {
        name: 't',
        numPartitions: 3,
        replicationFactor: 2,
        configs: [{ name: 'min.insync.replicas', value: '2', isDefault: false }],
      },
    ],
    validateOnly: false,
  });
  expect(created.results[0]!.error).toBeUndefined();
});

afterAll(async () => {
  client?.close();
  await service?.stop();
});

async function partition(index: number) {
  const described = await callOnce(client, client.describeTopics, { names: ['t'] });
  return described.topics[0]!.topic!.partitions.find((candidate) => candidate.partition === index)!;
}

async function alter(
  topics: Array<{
    name: string;
    partitions: Array<{ partition: number; replicas: number[]; cancel?: boolean }>;
  }>,
) {
  const response = await callOnce(client, client.alterPartitionReassignments, {
    topics: topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((item) => ({ cancel: false, ...item })),
    })),
  });
  expect(response.error).toBeUndefined();
  return response.topics.flatMap((topic) =>
    topic.partitions.map((item) => ({
      name: `${topic.name}-${item.partition}`,
      code: item.error?.code,
      message: item.error?.message,
    })),
  );
}

describe('AlterPartitionReassignments', () => {
  it('answers each refused partition with an error naming it, and starts the valid ones', async () => {
    const current = await partition(0);
    const added = [0, 1, 2].find((id) => !current.replicas.includes(id))!;
    const results = await alter([
      { name: 'ghost', partitions: [{ partition: 0, replicas: [0, 1] }] },
      {
        name: 't',
        partitions: [
          { partition: 7, replicas: [0, 1] },
          { partition: 1, replicas: [0, 9] },
          { partition: 2, replicas: [1, 1] },
          { partition: 1, replicas: [] },
          { partition: 0, replicas: [current.replicas[0]!, added] },
        ],
      },
    ]);
    expect(results).toEqual([
      {
        name: 'ghost-0',
        code: 'UNKNOWN_TOPIC_OR_PARTITION',
        message: 'topic "ghost" does not exist',
      },
      {
        name: 't-7',
        code: 'UNKNOWN_TOPIC_OR_PARTITION',
        message: 'topic "t" has no partition 7 (it has 3)',
      },
      {
        name: 't-1',
        code: 'INVALID_REPLICA_ASSIGNMENT',
        message: 'partition t-1: broker 9 is not registered (brokers: 0,1,2)',
      },
      {
        name: 't-2',
        code: 'INVALID_REPLICA_ASSIGNMENT',
        message: 'partition t-2: broker 1 is named twice in [1,1]',
      },
      { name: 't-1', code: 'INVALID_REQUEST', message: 'partition t-1 is named twice' },
      { name: 't-0', code: undefined, message: undefined },
    ]);
    const moving = await partition(0);
    expect(moving.addingReplicas).toEqual([added]);
    expect(moving.removingReplicas).toEqual([current.replicas[1]]);
    const listed = await callOnce(client, client.listPartitionReassignments, { topics: [] });
    expect(listed.topics).toEqual([
      {
        name: 't',
        partitions: [
          {
            partition: 0,
            replicas: [current.replicas[0], added, current.replicas[1]],
            addingReplicas: [added],
            removingReplicas: [current.replicas[1]],
          },
        ],
      },
    ]);

    const cancelled = await alter([
      { name: 't', partitions: [{ partition: 0, replicas: [], cancel: true }] },
    ]);
    expect(cancelled).toEqual([{ name: 't-0', code: undefined, message: undefined }]);
    const restored = await partition(0);
    expect([...restored.replicas].sort()).toEqual([...current.replicas].sort());
    expect(restored.addingReplicas).toEqual([]);
  });

  it('refuses an empty set, a set below min.insync.replicas and a cancel with nothing moving', async () => {
    const results = await alter([
      {
        name: 't',
        partitions: [
          { partition: 0, replicas: [] },
          { partition: 1, replicas: [0] },
          { partition: 2, replicas: [], cancel: true },
        ],
      },
    ]);
    expect(results).toEqual([
      {
        name: 't-0',
        code: 'INVALID_REPLICA_ASSIGNMENT',
        message: 'partition t-0: the target replica set is empty',
      },
      {
        name: 't-1',
        code: 'INVALID_REPLICA_ASSIGNMENT',
        message:
          "partition t-1: 1 replicas are fewer than the topic's min.insync.replicas 2: the ISR " +
          'would shrink below it',
      },
      {
        name: 't-2',
        code: 'NO_REASSIGNMENT_IN_PROGRESS',
        message: 'partition t-2 has no reassignment in progress to cancel',
      },
    ]);
    const response = await callOnce(client, client.alterPartitionReassignments, {
      topics: [{ name: 't', partitions: [{ partition: 0, replicas: [0, 1], cancel: true }] }],
    });
    expect(response.error?.code).toBe('INVALID_REQUEST');
    expect(response.error?.message).toBe(
      'partition t-0: cancel takes no replicas (it restores the original ones)',
    );
  });
});
