// Proves the /proc readers of `spool bench partitions` on this very process: CPU seconds grow
// with work done, the resident set is of a plausible size, an opened file adds a descriptor, a
// dead pid does not exist; and the Prometheus text reader takes samples by name, labels or not.
import { closeSync, openSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  cpuSeconds,
  metricValues,
  openDescriptorCount,
  processExists,
  residentBytes,
} from './bench-partitions-proc';

describe.runIf(process.platform === 'linux')('bench partitions /proc readers', () => {
  it('reads CPU seconds that grow with work', () => {
    const before = cpuSeconds(process.pid);
    const untilMs = performance.now() + 100;
    let spin = 0;
    while (performance.now() < untilMs) spin += 1;
    expect(spin).toBeGreaterThan(0);
    expect(cpuSeconds(process.pid)).toBeGreaterThan(before);
  });

  it('reads the resident set in bytes', () => {
    const bytes = residentBytes(process.pid);
    expect(bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(bytes).toBeLessThan(8 * 1024 * 1024 * 1024);
  });

  it('counts an opened file as one more descriptor', () => {
    const before = openDescriptorCount(process.pid);
    const descriptor = openSync('/proc/self/stat', 'r');
    try {
      expect(openDescriptorCount(process.pid)).toBe(before + 1);
    } finally {
      closeSync(descriptor);
    }
  });

  it('tells a live pid from a dead one', () => {
    expect(processExists(process.pid)).toBe(true);
    const exited = spawnSync(process.execPath, ['-e', '0']);
    expect(processExists(exited.pid!)).toBe(false);
  });
});

describe('bench partitions metric reader', () => {
  it('takes samples by name with or without labels, sums series, leaves out the rest', () => {
    const text = [
      '# HELP spool_log_open_files Log files open.',
      '# TYPE spool_log_open_files gauge',
      'spool_log_open_files{service="storage-node"} 800',
      'spool_log_open_files{service="storage-node",kind="index"} 12',
      'spool_log_open_files_max 4096',
      'spool_log_open_file_evictions_total{service="storage-node"} 3',
      '',
    ].join('\n');
    const values = metricValues(text, ['spool_log_open_files', 'spool_log_open_files_max', 'x']);
    expect(Object.fromEntries(values)).toEqual({
      spool_log_open_files: 812,
      spool_log_open_files_max: 4096,
    });
  });
});
