// Proves the storage node's own gauges read the data directory at scrape time: an unwritable or
// missing directory counts as an offline log directory with no free bytes, and the per-partition
// series disappear when switched off while the node-wide ones stay.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { RequestMetrics, renderMetrics } from '@spool/common';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { DataDirectory } from './data-directory';
import { StorageMetrics } from './storage-metrics';

const root = mkdtempSync(path.join(tmpdir(), 'storage-metrics-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function directoryAt(directory: string): DataDirectory {
  return {
    root: directory,
    freeBytes: () => 1_000,
    totalBytes: () => 4_000,
  } as unknown as DataDirectory;
}

async function scrape(directory: string, metricsPerPartition: boolean): Promise<string> {
  const registry = new Registry();
  new StorageMetrics(
    registry,
    new RequestMetrics(registry),
    () => undefined,
    directoryAt(directory),
    metricsPerPartition,
  );
  return renderMetrics(registry);
}

describe('StorageMetrics', () => {
  it('reports a writable data directory online with its free bytes', async () => {
    const text = await scrape(root, true);
    expect(text).toContain('spool_offline_log_directories 0');
    expect(text).toContain('spool_disk_free_bytes 1000');
    expect(text).toContain('spool_disk_total_bytes 4000');
  });

  it('reports a missing data directory offline, with no free bytes', async () => {
    const text = await scrape(path.join(root, 'unmounted'), true);
    expect(text).toContain('spool_offline_log_directories 1');
    expect(text).toContain('spool_disk_free_bytes 0');
  });

  it('drops the per-partition series when switched off', async () => {
    const on = await scrape(root, true);
    const off = await scrape(root, false);
    for (const name of [
      'spool_log_size_bytes',
      'spool_log_segments',
      'spool_log_start_offset',
      'spool_log_end_offset',
      'spool_high_watermark',
      'spool_follower_lag_records',
    ]) {
      expect(on).toContain(`# TYPE ${name} gauge`);
      expect(off).not.toContain(`# TYPE ${name} `);
    }
    expect(off).toContain('# TYPE spool_under_replicated_partitions gauge');
    expect(off).toContain('# TYPE spool_produce_stage_duration_seconds histogram');
  });
});
