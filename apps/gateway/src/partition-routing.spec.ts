// Proves the gateway's routing rules on a hand-built metadata cache: a partition goes to its
// leader; an unknown topic and a partition out of range are UNKNOWN_TOPIC_OR_PARTITION naming
// the topic or the partition; an offline partition or a leader without the needed endpoint is
// LEADER_NOT_AVAILABLE; items group by leader in order; a partition named twice is found.
import { describe, expect, it } from 'vitest';
import { ClusterMetadataCache } from '@spool/protocol';
import { testBroker, testSnapshot, testTopic } from './testing/cluster-metadata';
import { duplicatePositions, groupByLeader, routeOf } from './partition-routing';

function metadata(): ClusterMetadataCache {
  const cache = new ClusterMetadataCache();
  const withoutData = testBroker(2, 9002, 0);
  cache.apply(
    testSnapshot(
      5n,
      [
        testBroker(0, 9000, 9100),
        testBroker(1, 9001, 9101),
        { ...withoutData, endpoints: withoutData.endpoints.slice(0, 1) },
      ],
      [testTopic('orders', [0, 1, -1, 2])],
    ),
  );
  return cache;
}

describe('routeOf', () => {
  it('routes to the leader or names why it cannot', () => {
    const cache = metadata();
    expect(routeOf(cache, { topic: 'orders', partition: 1 }, 'data')).toEqual({
      kind: 'leader',
      leaderId: 1,
      leaderEpoch: 1,
    });

    const unknownTopic = routeOf(cache, { topic: 'payments', partition: 0 }, 'grpc');
    expect(unknownTopic.kind === 'failed' && unknownTopic.error.code).toBe(
      'UNKNOWN_TOPIC_OR_PARTITION',
    );
    expect(unknownTopic.kind === 'failed' && unknownTopic.error.message).toContain('"payments"');

    const outOfRange = routeOf(cache, { topic: 'orders', partition: 7 }, 'grpc');
    expect(outOfRange.kind === 'failed' && outOfRange.error.code).toBe(
      'UNKNOWN_TOPIC_OR_PARTITION',
    );
    expect(outOfRange.kind === 'failed' && outOfRange.error.message).toMatch(
      /partition 7 of topic "orders" does not exist; the topic has 4 partitions/,
    );

    const offline = routeOf(cache, { topic: 'orders', partition: 2 }, 'grpc');
    expect(offline.kind === 'failed' && offline.error.code).toBe('LEADER_NOT_AVAILABLE');
    expect(offline.kind === 'failed' && offline.error.retriable).toBe(true);
    expect(offline.kind === 'failed' && offline.error.message).toContain('orders-2');

    // Broker 2 registered no data port: produce can reach it, fetch cannot.
    expect(routeOf(cache, { topic: 'orders', partition: 3 }, 'grpc').kind).toBe('leader');
    const noDataPort = routeOf(cache, { topic: 'orders', partition: 3 }, 'data');
    expect(noDataPort.kind === 'failed' && noDataPort.error.message).toMatch(
      /data endpoint of broker 2, leader of orders-3/,
    );
  });
});

describe('groupByLeader and duplicatePositions', () => {
  it('groups items by leader in their order and finds repeated partitions', () => {
    const items = [
      { topic: 'a', partition: 0, leader: 1 },
      { topic: 'a', partition: 1, leader: 2 },
      { topic: 'b', partition: 0, leader: 1 },
      { topic: 'a', partition: 0, leader: 1 },
    ];
    const groups = groupByLeader(items, (item) => item.leader);
    expect([...groups.keys()]).toEqual([1, 2]);
    expect(groups.get(1)!.map((item) => `${item.topic}-${item.partition}`)).toEqual([
      'a-0',
      'b-0',
      'a-0',
    ]);
    expect([...duplicatePositions(items)]).toEqual([3]);
    // "a" partition 10 and "a1" partition 0 must not be taken for one another.
    expect(
      duplicatePositions([
        { topic: 'a', partition: 10 },
        { topic: 'a1', partition: 0 },
      ]).size,
    ).toBe(0);
  });
});
