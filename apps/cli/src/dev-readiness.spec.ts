// Proves what `spool dev` calls in sync: every storage node alive, and every partition with a
// leader and all its replicas in the ISR; anything else is named, broker or partition.
import type { ClusterDescription, TopicDescription } from '@spool/client';
import { describe, expect, it } from 'vitest';
import { describeOutOfSync, isInSync, syncReport } from './dev-readiness';

const cluster = (states: string[]): ClusterDescription => ({
  clusterId: 'c',
  controllerId: -1,
  brokers: states.map((state, nodeId) => ({
    nodeId,
    rack: '',
    state,
    decommissioned: false,
    endpoints: [],
  })),
});

const topic = (
  name: string,
  partitions: Array<{ leaderId: number; replicas: number[]; isr: number[] }>,
): TopicDescription => ({
  name,
  topicId: name,
  internal: name.startsWith('__'),
  configEntries: [],
  partitions: partitions.map((partition, index) => ({
    partition: index,
    leaderEpoch: 0,
    offline: partition.leaderId < 0,
    addingReplicas: [],
    removingReplicas: [],
    replicaCleaners: [],
    ...partition,
  })),
});

describe('syncReport', () => {
  it('is in sync when every broker is alive and every ISR has every replica', () => {
    const report = syncReport(
      cluster(['ALIVE', 'ALIVE']),
      [
        topic('orders', [{ leaderId: 0, replicas: [0, 1], isr: [1, 0] }]),
        topic('__consumer_offsets', [{ leaderId: 1, replicas: [1, 0], isr: [1, 0] }]),
      ],
      [0, 1],
    );
    expect(isInSync(report)).toBe(true);
    expect(report).toMatchObject({ partitionsTotal: 2, partitionsInSync: 2 });
  });

  it('names a fenced or missing broker and each partition out of sync', () => {
    const report = syncReport(
      cluster(['ALIVE', 'FENCED']),
      [
        topic('orders', [
          { leaderId: 0, replicas: [0, 1], isr: [0] },
          { leaderId: -1, replicas: [1, 2], isr: [1] },
          { leaderId: 0, replicas: [0, 2], isr: [0, 2] },
        ]),
      ],
      [0, 1, 2],
    );
    expect(isInSync(report)).toBe(false);
    expect(report.partitionsInSync).toBe(1);
    expect(describeOutOfSync(report)).toBe(
      'broker 1 FENCED; broker 2 not registered; 2 of 3 partitions out of sync: ' +
        'orders-0 (leader 0, replicas 0,1, isr 0), orders-1 (leader -1, replicas 1,2, isr 1)',
    );
  });

  it('shows the first few partitions out of sync and counts the rest', () => {
    const partitions = Array.from({ length: 8 }, () => ({
      leaderId: 0,
      replicas: [0, 1],
      isr: [0],
    }));
    const report = syncReport(cluster(['ALIVE', 'ALIVE']), [topic('t', partitions)], [0, 1]);
    expect(describeOutOfSync(report, 2)).toBe(
      '8 of 8 partitions out of sync: t-0 (leader 0, replicas 0,1, isr 0), ' +
        't-1 (leader 0, replicas 0,1, isr 0), and 6 more',
    );
  });
});
