// Proves what `spool bench partitions` prints: nearest-rank quantiles (p50 of 1..100 is 50, p99
// is 99, one sample is every quantile), one JSON line with --json, and tables that carry every
// figure and name an error.
import { describe, expect, it } from 'vitest';
import {
  formatPartitionsResult,
  quantile,
  type PartitionsBenchResult,
} from './bench-partitions-report';

const result: PartitionsBenchResult = {
  mode: 'partitions',
  settings: {
    nodes: 3,
    replicationFactor: 3,
    topicPartitionsMax: 10_000,
    idleSeconds: 10,
    settleSeconds: 5,
  },
  create: [
    {
      partitions: 1_000,
      topics: 1,
      existingPartitions: 0,
      createMs: 412.6,
      leadersMs: 430,
      inSyncMs: 1_900,
    },
  ],
  idle: [
    {
      partitions: 2_000,
      partitionsInCluster: 2_050,
      windowSeconds: 10,
      clusterCpuPercent: 7.5,
      processes: [
        { name: 'controller', pid: 11, cpuPercent: 1.5, rssMb: 90 },
        { name: 'storage-node-0', pid: 12, cpuPercent: 6, rssMb: 180.5 },
      ],
      supervisor: { name: 'spool dev', pid: 10, cpuPercent: 0.1, rssMb: 60 },
      storageNodes: [
        {
          name: 'storage-node-0',
          openDescriptors: 4_321,
          logOpenFiles: 4_000,
          logOpenFilesMax: 4_096,
        },
      ],
    },
  ],
  failover: {
    partitions: 2_050,
    brokerId: 2,
    partitionsLed: 683,
    partitionsMoved: 683,
    p50Ms: 812,
    p99Ms: 1_650,
    maxMs: 1_702,
    fencedMs: 120,
  },
  startup: {
    partitions: 2_050,
    clusterInSyncMs: 25_000,
    nodes: [
      {
        brokerId: 2,
        cleanShutdown: false,
        logsLoaded: 2_050,
        logsRecovered: 17,
        segmentsRecovered: 17,
        bytesTruncated: 0,
        durationMs: 3_100,
      },
    ],
    afterCleanStop: null,
    afterKill: {
      brokerId: 1,
      signal: 'SIGKILL',
      stopMs: 5,
      backoffMs: 500,
      startedMs: 4_200,
      inSyncMs: 9_000,
      report: {
        cleanShutdown: false,
        logsLoaded: 2_050,
        logsRecovered: 3,
        segmentsRecovered: 3,
        bytesTruncated: 12,
        durationMs: 2_000,
      },
    },
  },
  errors: ['no storage-node-0 back in the ISR of its partitions after 600 s'],
};

describe('bench partitions report', () => {
  it('takes quantiles by nearest rank', () => {
    const hundred = Array.from({ length: 100 }, (_, index) => index + 1);
    expect(quantile(hundred, 0.5)).toBe(50);
    expect(quantile(hundred, 0.99)).toBe(99);
    expect(quantile(hundred, 1)).toBe(100);
    expect(quantile([7], 0.5)).toBe(7);
    expect(quantile([7], 0.99)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it('prints one JSON line with --json', () => {
    const text = formatPartitionsResult(result, true);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(text)).toEqual(result);
  });

  it('prints every figure in tables and names the error', () => {
    const text = formatPartitionsResult(result, false);
    for (const expected of [
      '1000',
      '0.413 s',
      '0.430 s',
      '1.900 s',
      'idle at 2000 partitions (2050 with internal topics)',
      '180.5',
      '4321',
      '4000 / 4096',
      '7.5',
      'storage-node-2',
      '683',
      '0.812 s / 1.650 s / 1.702 s',
      '0.120 s',
      '25.0 s',
      'crash',
      '3.100 s',
      'SIGKILL',
      '4.200 s',
      '9.000 s',
      '3 of 2050 (crash)',
      'error: no storage-node-0 back in the ISR',
    ]) {
      expect(text).toContain(expected);
    }
  });
});
