/**
 * The storage node's bound on open log files (`log.open.files.max`): the FileHandleCache every
 * log of the node shares (libs/segment-store file-handle-cache.ts), checked at start-up against
 * the process's open-file limit, and its figures as Prometheus metrics.
 */
import * as fs from 'node:fs';
import { ConfigError } from '@spool/common';
import { FileHandleCache } from '@spool/segment-store';
import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * Descriptors kept free for everything that is not a log file: client and replica connections,
 * the gRPC and metrics listeners, pipes, checkpoint writes, and what pinned transfers take past
 * the bound.
 */
export const nonLogDescriptorsReserved = 1024;

/**
 * The node's cache of log descriptors. Refuses a bound that, with the reserve, does not fit the
 * process's soft RLIMIT_NOFILE (Node raises it to the hard limit at start): the node would
 * otherwise fail with EMFILE at some later open instead of at start-up.
 */
export function createLogFileHandleCache(
  openFilesMax: number,
  limitsText: string | undefined = readProcessLimits(),
): FileHandleCache {
  const processLimit = openFilesLimitOf(limitsText);
  if (processLimit !== undefined && openFilesMax + nonLogDescriptorsReserved > processLimit) {
    throw new ConfigError(
      `setting log.open.files.max is ${openFilesMax}, but this process may open only ` +
        `${processLimit} files (ulimit -n), and ${nonLogDescriptorsReserved} of them are kept ` +
        `for connections: lower log.open.files.max to at most ` +
        `${processLimit - nonLogDescriptorsReserved}, or raise the limit`,
    );
  }
  return new FileHandleCache(openFilesMax);
}

/** The soft "Max open files" of /proc/self/limits; undefined when unknown or unlimited. */
export function openFilesLimitOf(limitsText: string | undefined): number | undefined {
  const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(limitsText ?? '');
  if (match === null || match[1] === 'unlimited') return undefined;
  return Number(match[1]);
}

function readProcessLimits(): string | undefined {
  try {
    return fs.readFileSync('/proc/self/limits', 'utf8');
  } catch {
    // Not Linux: no limit to check against here.
    return undefined;
  }
}

/** spool_log_open_files, spool_log_open_files_max and the evictions and opens counters. */
export function registerLogOpenFileMetrics(registry: Registry, cache: FileHandleCache): void {
  new Gauge({
    name: 'spool_log_open_files',
    help:
      'Log segment and index files this node holds open now (bounded by log.open.files.max; ' +
      'pinned transfers may pass it briefly).',
    registers: [registry],
    collect() {
      this.set(cache.statistics.openFiles);
    },
  });
  new Gauge({
    name: 'spool_log_open_files_max',
    help: 'The bound on open log files (log.open.files.max).',
    registers: [registry],
    collect() {
      this.set(cache.statistics.openFilesMax);
    },
  });
  // Counters that read a running total at scrape time: reset to it, as prom-client offers no set.
  const totalCounter = (name: string, help: string, total: () => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(total());
      },
    });
  };
  totalCounter(
    'spool_log_open_file_evictions_total',
    'Log files closed because log.open.files.max files were open (reopened on their next use).',
    () => cache.statistics.evictionsTotal,
  );
  totalCounter(
    'spool_log_file_opens_total',
    'Opens of log segment and index files, first ones and reopens after an eviction.',
    () => cache.statistics.opensTotal,
  );
}
