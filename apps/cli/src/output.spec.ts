// Proves what people and scripts read: tables align, JSON keeps offsets exact as strings, a
// consumed record prints as its value or as one JSON line, and partition health is counted as
// online, offline or under-replicated.
import type { ConsumedMessage, TopicDescription } from '@spool/client';
import type { DescribeClusterResponse } from '@spool/protocol';
import { describe, expect, it } from 'vitest';
import { formatClusterStatus, toClusterStatus } from './cluster-command';
import { formatConsumedMessage } from './consume-command';
import { formatTable, toJsonLine } from './output';
import { formatProduceSummary } from './produce-command';
import { formatTopicDescription, partitionState } from './topic-commands';

const message: ConsumedMessage = {
  topic: 't',
  partition: 3,
  offset: 9007199254740993n,
  timestamp: 1700000000000n,
  key: Buffer.from('k'),
  value: Buffer.from('v'),
  headers: [{ key: 'h', value: Buffer.from('x') }],
};

const notMoving = { addingReplicas: [], removingReplicas: [], replicaCleaners: [] };

const topic: TopicDescription = {
  name: 't',
  topicId: 'id-1',
  internal: false,
  partitions: [
    {
      partition: 0,
      leaderId: 0,
      leaderEpoch: 1,
      replicas: [0, 1, 2],
      isr: [0, 1, 2],
      offline: false,
      ...notMoving,
    },
    {
      partition: 1,
      leaderId: 1,
      leaderEpoch: 0,
      replicas: [1, 2, 0],
      isr: [1],
      offline: false,
      ...notMoving,
    },
    {
      partition: 2,
      leaderId: -1,
      leaderEpoch: 4,
      replicas: [2],
      isr: [],
      offline: true,
      ...notMoving,
    },
  ],
  configEntries: [
    { name: 'retention.ms', value: '1000', isDefault: false },
    { name: 'cleanup.policy', value: 'delete', isDefault: true },
  ],
};

describe('formatTable', () => {
  it('pads every column but the last to its widest cell', () => {
    expect(
      formatTable(
        ['A', 'LONGER'],
        [
          ['wide-cell', 1],
          ['x', 22],
        ],
      ),
    ).toBe('A          LONGER\nwide-cell  1\nx          22\n');
  });
});

describe('consumed records', () => {
  it('prints the value alone as text', () => {
    expect(formatConsumedMessage(message, 'text')).toBe('v\n');
    expect(formatConsumedMessage({ ...message, value: null }, 'text')).toBe('\n');
  });

  it('prints one JSON object per line with the offset exact', () => {
    const line = formatConsumedMessage(message, 'json');
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toEqual({
      topic: 't',
      partition: 3,
      offset: '9007199254740993',
      key: 'k',
      value: 'v',
      timestamp: 1700000000000,
      headers: [{ key: 'h', value: 'x' }],
    });
    expect(toJsonLine({ offset: 1n })).toBe('{"offset":"1"}');
  });
});

describe('topic describe', () => {
  it('tables leader, replicas and ISR per partition with its state', () => {
    const text = formatTopicDescription(topic);
    expect(text).toContain('PARTITION  LEADER  EPOCH  REPLICAS  ISR    STATE');
    expect(text).toContain('0          0       1      0,1,2     0,1,2  online');
    expect(text).toContain('1          1       0      1,2,0     1      under-replicated');
    expect(text).toContain('2          -1      4      2                offline');
    expect(text).toContain('configs: retention.ms=1000\n');
    expect(partitionState(topic.partitions[0]!)).toBe('online');
    expect(text).not.toContain('log cleaner:');
  });

  it("tables a compacted topic's cleaner state on each replica that reported it", () => {
    const cleaner = (brokerId: number, firstDirtyOffset: bigint, uncleanableReason?: string) => ({
      brokerId,
      firstDirtyOffset,
      dirtyRatio: 0.25,
      ...(uncleanableReason === undefined ? {} : { uncleanableReason }),
    });
    const [first, second] = topic.partitions;
    const text = formatTopicDescription({
      ...topic,
      partitions: [
        { ...first!, replicaCleaners: [cleaner(0, 40n), cleaner(2, 12n, 'thread crashed')] },
        { ...second!, replicaCleaners: [cleaner(1, 9n)] },
      ],
    });
    expect(text).toContain(
      'log cleaner:\n' +
        'PARTITION  BROKER  ROLE      FIRST-DIRTY-OFFSET  DIRTY-RATIO  UNCLEANABLE-REASON\n' +
        '0          0       leader    40                  0.250        -\n' +
        '0          2       follower  12                  0.250        thread crashed\n' +
        '1          1       leader    9                   0.250        -\n',
    );
  });
});

describe('cluster status', () => {
  it('counts partitions by state and lists brokers with their endpoints', () => {
    const cluster: DescribeClusterResponse = {
      clusterId: 'c-1',
      controllerId: -1,
      controllerAddress: '127.0.0.1:7000',
      metadataVersion: 5n,
      brokers: [
        {
          brokerId: 0,
          rack: 'r1',
          brokerEpoch: 1n,
          state: 'ALIVE',
          decommissioned: false,
          endpoints: [{ name: 'grpc', host: 'h', port: 1 }],
        },
      ],
    };
    const status = toClusterStatus(cluster, [topic]);
    expect(status.partitions).toEqual({
      online: 1,
      offline: 1,
      'under-replicated': 1,
      total: 3,
    });
    const text = formatClusterStatus(status);
    expect(text).toContain('controller  127.0.0.1:7000');
    expect(text).toContain('0       r1    ALIVE  2         grpc://h:1');
    expect(text).toContain('3 in 1 topics: 1 online, 1 offline, 1 under-replicated');
    expect(status.brokers[0]).toMatchObject({ replicas: 2, decommission: 'none' });
  });

  it('shows a decommissioned broker in progress while it holds replicas, then removable', () => {
    const broker = (brokerId: number) => ({
      brokerId,
      rack: '',
      brokerEpoch: 1n,
      state: 'ALIVE',
      decommissioned: true,
      endpoints: [],
    });
    const cluster: DescribeClusterResponse = {
      clusterId: 'c-1',
      controllerId: -1,
      controllerAddress: '',
      metadataVersion: 5n,
      brokers: [broker(2), broker(7)],
    };
    const internal: TopicDescription = { ...topic, name: '__consumer_offsets', internal: true };
    const status = toClusterStatus(cluster, [], [internal]);
    expect(status.brokers.map((entry) => [entry.id, entry.replicas, entry.decommission])).toEqual([
      [2, 3, 'in-progress'],
      [7, 0, 'removable'],
    ]);
    const text = formatClusterStatus(status);
    expect(text).toContain('ALIVE,DECOMMISSIONING');
    expect(text).toContain('ALIVE,REMOVABLE');
  });
});

describe('produce summary', () => {
  it('reports records, seconds and the rate', () => {
    expect(formatProduceSummary(20000, 2000)).toBe(
      'produced 20000 records in 2.00 s (10000 records/s)',
    );
  });
});
