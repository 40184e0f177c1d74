// Proves the metadata cache follows the controller's stream: a snapshot replaces everything,
// deltas replace and delete what they name (whole topics or single partitions), stale deltas are
// ignored, listeners hear each change.
import { describe, expect, it } from 'vitest';
import { ClusterMetadataCache } from './cluster-metadata-cache';

const topic = (name: string, leaderId: number) => ({
  name,
  topicId: `${name}-id`,
  partitions: [
    {
      topic: name,
      partition: 0,
      leaderId,
      leaderEpoch: 1,
      replicas: [0, 1],
      isr: [0, 1],
      partitionEpoch: 1,
      offline: false,
      addingReplicas: [],
      removingReplicas: [],
    },
  ],
  configs: [{ name: 'min.insync.replicas', value: '2', isDefault: false }],
  internal: false,
});
const broker = (brokerId: number) => ({
  brokerId,
  rack: '',
  endpoints: [{ name: 'data', host: '127.0.0.1', port: 9000 + brokerId }],
  brokerEpoch: 5n,
  state: 'ALIVE',
  decommissioned: false,
});
const message = (version: bigint, snapshot: boolean, extra: object) => ({
  metadataVersion: version,
  snapshot,
  brokers: [],
  topics: [],
  deletedTopics: [],
  deletedBrokers: [],
  controllerAddress: 'c:1',
  coordinators: [],
  deletedCoordinators: [],
  coordinatorShards: [],
  changedPartitions: [],
  ...extra,
});

describe('ClusterMetadataCache', () => {
  it('applies snapshots and deltas in version order', () => {
    const cache = new ClusterMetadataCache();
    const versions: bigint[] = [];
    cache.onChange((change) => versions.push(change.version));
    cache.apply(
      message(10n, true, {
        brokers: [broker(0), broker(1)],
        topics: [topic('a', 0), topic('b', 1)],
      }),
    );
    expect(cache.partition('a', 0)?.leaderId).toBe(0);
    expect(cache.endpoint(1, 'data')).toEqual({ host: '127.0.0.1', port: 9001 });
    expect(cache.topicConfig('a', 'min.insync.replicas')).toBe('2');
    cache.apply(message(11n, false, { topics: [topic('a', 1)], deletedTopics: ['b'] }));
    expect(cache.partition('a', 0)?.leaderId).toBe(1);
    expect(cache.topics.has('b')).toBe(false);
    cache.apply(message(9n, false, { topics: [topic('a', 0)] }));
    expect(cache.partition('a', 0)?.leaderId).toBe(1);
    cache.apply(message(12n, true, { brokers: [broker(0)], topics: [] }));
    expect([...cache.topics.keys()]).toEqual([]);
    expect([...cache.brokers.keys()]).toEqual([0]);
    expect(versions).toEqual([10n, 11n, 12n]);
    expect(cache.controllerAddress).toBe('c:1');
  });

  it('follows coordinators and shard owners through snapshots and deltas', () => {
    const cache = new ClusterMetadataCache();
    const coordinator = (coordinatorId: string, port: number) => ({
      coordinatorId,
      endpoints: [{ name: 'grpc', host: '127.0.0.1', port }],
    });
    const changes: number[][] = [];
    cache.onChange((change) => changes.push([...change.changedShards]));
    cache.apply(
      message(1n, true, {
        coordinators: [coordinator('a', 1), coordinator('b', 2)],
        coordinatorShards: [
          { partition: 0, coordinatorId: 'a', shardEpoch: 1 },
          { partition: 1, coordinatorId: 'b', shardEpoch: 1 },
        ],
      }),
    );
    expect(cache.coordinatorShardCount).toBe(2);
    expect(cache.shardOwner(1)?.coordinatorId).toBe('b');
    expect(cache.coordinatorEndpoint('b', 'grpc')).toEqual({ host: '127.0.0.1', port: 2 });
    cache.apply(
      message(2n, false, {
        deletedCoordinators: ['b'],
        coordinatorShards: [{ partition: 1, coordinatorId: '', shardEpoch: 2 }],
      }),
    );
    expect(cache.shardOwner(1)).toBeUndefined();
    expect(cache.coordinatorEndpoint('b', 'grpc')).toBeUndefined();
    expect(cache.coordinatorShards.get(1)?.shardEpoch).toBe(2);
    expect(changes).toEqual([[0, 1], [1]]);
    cache.apply(message(3n, true, {}));
    expect(cache.coordinators.size).toBe(0);
    expect(cache.coordinatorShardCount).toBe(0);
  });

  it('replaces single partitions of a delta without touching the rest of their topic', () => {
    const cache = new ClusterMetadataCache();
    const wide = (name: string, count: number, leaderId: number) => ({
      ...topic(name, leaderId),
      partitions: Array.from({ length: count }, (_, partition) => ({
        ...topic(name, leaderId).partitions[0]!,
        partition,
      })),
    });
    cache.apply(message(1n, true, { topics: [wide('a', 4, 0), wide('b', 2, 0)] }));
    const before = cache.topics.get('a')!;
    const changes: Array<{ topics: string[]; partitions: string[] }> = [];
    cache.onChange((change) =>
      changes.push({
        topics: [...change.changedTopics],
        partitions: change.changedPartitions.map((p) => `${p.topic}-${p.partition}`),
      }),
    );
    const moved = { ...before.partitions[2]!, leaderId: 1, leaderEpoch: 2 };
    cache.apply(
      message(2n, false, {
        changedPartitions: [
          moved,
          { ...moved, topic: 'gone', partition: 0 },
          { ...moved, partition: 9 },
        ],
      }),
    );
    expect(cache.partition('a', 2)?.leaderId).toBe(1);
    expect(cache.topics.get('a')!.partitions.map((p) => p.leaderId)).toEqual([0, 0, 1, 0]);
    // The topic was replaced, not mutated: a reader holding the old one still sees it whole.
    expect(before.partitions[2]!.leaderId).toBe(0);
    expect(cache.topicConfig('a', 'min.insync.replicas')).toBe('2');
    expect(cache.partition('b', 1)?.leaderId).toBe(0);
    // Partitions of an unknown topic, or past a topic's end, are skipped and not reported.
    expect(changes).toEqual([{ topics: [], partitions: ['a-2'] }]);
  });

  it('finds partitions listed out of order', () => {
    const cache = new ClusterMetadataCache();
    const shuffled = {
      ...topic('s', 0),
      partitions: [1, 0].map((partition) => ({
        ...topic('s', partition).partitions[0]!,
        partition,
      })),
    };
    cache.apply(message(1n, true, { topics: [shuffled] }));
    expect(cache.partition('s', 0)?.leaderId).toBe(0);
    expect(cache.partition('s', 1)?.leaderId).toBe(1);
    expect(cache.partition('s', 2)).toBeUndefined();
  });
});
