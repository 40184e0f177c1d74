// Proves the gateway's group routing against two fake coordinators on loopback, with metadata
// applied by hand: a group call goes to the owner of the group's shard; NOT_COORDINATOR from a
// coordinator that lost the shard is retried once the metadata names the new owner; with no
// owner at all the call ends before its deadline with COORDINATOR_NOT_AVAILABLE in the answer;
// ListGroups merges every coordinator's groups; InitProducerId moves on from a coordinator that
// cannot be reached.
import { GrpcServer, SpoolError, createLogger } from '@spool/common';
import {
  CoordinatorServiceService,
  groupPartition,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type WatchMetadataResponse,
} from '@spool/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorRouter } from './coordinator-router';
import { groupHandlers } from './group-handlers';
import { createMetadataLink } from './metadata-link';

const logger = createLogger({ service: 'test', level: 'silent' });

class FakeCoordinator {
  readonly server = new GrpcServer(logger, { maxMessageBytes: 1 << 20, descriptorSetPaths: [] });
  readonly fetches: string[] = [];
  port = 0;
  owns = false;

  constructor(readonly coordinatorId: string) {}

  async start(): Promise<void> {
    const refuse = () => Promise.reject(new SpoolError('UNSUPPORTED_VERSION', 'not faked'));
    this.server.addService(CoordinatorServiceService, {
      ...Object.fromEntries(Object.keys(CoordinatorServiceService).map((name) => [name, refuse])),
      offsetFetch: async (request: OffsetFetchRequest): Promise<OffsetFetchResponse> => {
        this.fetches.push(request.groupId);
        return this.owns
          ? {
              error: undefined,
              offsets: [
                {
                  topic: 't',
                  partition: 0,
                  offset: 7n,
                  metadata: this.coordinatorId,
                  commitTimestampMs: 1n,
                  error: undefined,
                },
              ],
            }
          : {
              error: { code: 'NOT_COORDINATOR', message: 'not mine', retriable: true },
              offsets: [],
            };
      },
      listGroups: async () => ({
        groups: [{ groupId: `group-of-${this.coordinatorId}`, state: 'STABLE' }],
      }),
      initProducerId: async () => ({ error: undefined, producerId: 42n, producerEpoch: 0 }),
    });
    this.port = await this.server.listen('127.0.0.1', 0);
  }
}

function metadataMessage(
  version: bigint,
  coordinators: FakeCoordinator[],
  owners: Map<number, string>,
  extraCoordinators: Array<{ coordinatorId: string; port: number }> = [],
): WatchMetadataResponse {
  return {
    metadataVersion: version,
    snapshot: true,
    brokers: [],
    topics: [],
    deletedTopics: [],
    deletedBrokers: [],
    controllerAddress: '',
    coordinators: [
      ...coordinators.map((coordinator) => ({
        coordinatorId: coordinator.coordinatorId,
        port: coordinator.port,
      })),
      ...extraCoordinators,
    ].map(({ coordinatorId, port }) => ({
      coordinatorId,
      endpoints: [{ name: 'grpc', host: '127.0.0.1', port }],
    })),
    deletedCoordinators: [],
    changedPartitions: [],
    coordinatorShards: Array.from({ length: 50 }, (_, partition) => ({
      partition,
      coordinatorId: owners.get(partition) ?? '',
      shardEpoch: Number(version),
    })),
  };
}

describe('group routing', () => {
  const a = new FakeCoordinator('a');
  const b = new FakeCoordinator('b');
  // Never started: the test feeds the metadata cache itself.
  const link = createMetadataLink(['127.0.0.1:1'], logger);
  const router = new CoordinatorRouter(link);
  const handlers = groupHandlers(router);
  const shard = groupPartition('billing', 50);

  beforeAll(async () => {
    await a.start();
    await b.start();
  });
  afterAll(async () => {
    router.close();
    link.stop();
    await a.server.shutdown(100);
    await b.server.shutdown(100);
  });

  it('follows NOT_COORDINATOR to the new owner once the metadata moves the shard', async () => {
    link.metadata.apply(metadataMessage(1n, [a, b], new Map([[shard, 'a']])));
    b.owns = true;
    setTimeout(
      () => link.metadata.apply(metadataMessage(2n, [a, b], new Map([[shard, 'b']]))),
      300,
    );
    const response = await handlers.offsetFetch({ groupId: 'billing', partitions: [] });
    expect(response.error).toBeUndefined();
    expect(response.offsets[0]!.metadata).toBe('b');
    expect(a.fetches.length).toBeGreaterThanOrEqual(1);
    expect(b.fetches).toEqual(['billing']);
  });

  it('answers COORDINATOR_NOT_AVAILABLE before the deadline when no one owns the shard', async () => {
    link.metadata.apply(metadataMessage(3n, [a, b], new Map()));
    const startedMs = Date.now();
    const response = await handlers.offsetFetch({ groupId: 'billing', partitions: [] }, {
      getDeadline: () => new Date(Date.now() + 800),
    } as never);
    expect(response.error).toMatchObject({ code: 'COORDINATOR_NOT_AVAILABLE', retriable: true });
    expect(Date.now() - startedMs).toBeLessThan(800);
  });

  it('merges ListGroups and finds a live coordinator for InitProducerId', async () => {
    link.metadata.apply(
      metadataMessage(4n, [a, b], new Map(), [{ coordinatorId: '0-unreachable', port: 1 }]),
    );
    const producer = await handlers.initProducerId({ producerId: -1n, producerEpoch: -1 });
    expect(producer).toMatchObject({ error: undefined, producerId: 42n });
    link.metadata.apply(metadataMessage(5n, [a, b], new Map()));
    const listed = await handlers.listGroups({});
    expect(listed.groups.map((group) => group.groupId)).toEqual(['group-of-a', 'group-of-b']);
  });
});
