import * as path from 'node:path';
import type { Logger } from '@spool/common';
import {
  CleanerCheckpoint,
  LogCleaner,
  type CleanerLog,
  type LogCleanerSettings,
} from '@spool/segment-store';
import type { PartitionCleanerState } from '@spool/protocol';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PartitionReplica } from './replica/partition-replica';
import type { ReplicaManager } from './replica/replica-manager';

/**
 * The storage node's log cleaner (Kafka's log.cleaner.enable with one cleaner thread): every
 * hosted replica, leader or follower, cleans its own compacted log; nothing of compaction crosses
 * the network, and replicas agree because each keeps every key's latest record below its own
 * cleaning point. One pass at a time (libs/segment-store's cleaner/log-cleaner.ts), its CPU work
 * in the cleaner's one worker thread (cleaner-thread.ts) and its reads, appends and swaps in
 * short asynchronous steps on the event loop: a pass that cleaned a log is followed by the next
 * at once, one that found nothing to clean by a wait of `backoffMs` (log.cleaner.backoff.ms).
 * A crash of the thread fails its pass only: the log is marked uncleanable (logged, counted) and
 * the next pass starts a new thread.
 *
 * Metrics, under Kafka's names where it has them: the largest dirty ratio of the node's compacted
 * logs (max-dirty-percent), bytes read and written and records removed by cleaning, the last
 * pass's duration, uncleanable partitions (with the reason in the log line that marked them), and
 * crashes of the cleaner's thread.
 */
export interface LogCleanerRunner {
  readonly cleaner: LogCleaner;
  /**
   * The cleaner's view of each compacted log at its last look, for the controller (heartbeats)
   * and `spool topic describe`; at most `cleanerStatesReportedMax`.
   */
  partitionStates(): PartitionCleanerState[];
  /** A replica's log was deleted from this node: its checkpoint entry goes too. */
  forget(replica: PartitionReplica): void;
  /**
   * Stops after the pass in progress ends its current step, then ends the cleaner's thread;
   * resolves once both have.
   */
  stop(): Promise<void>;
}

export function startLogCleaner(
  replicas: ReplicaManager,
  options: {
    dataDirectory: string;
    settings: LogCleanerSettings;
    backoffMs: number;
    logger: Logger;
    registry: Registry;
    /** Also export each compacted partition's dirty ratio and cleaning point. */
    metricsPerPartition: boolean;
  },
): LogCleanerRunner {
  const { logger } = options;
  const cleaner = new LogCleaner(options.settings);
  const checkpoint = CleanerCheckpoint.load(options.dataDirectory);
  for (const problem of checkpoint.problems) logger.warn({ problem }, 'cleaner checkpoint');
  const metrics = registerCleanerMetrics(options.registry, cleaner, options.metricsPerPartition);
  cleaner.start().then(
    () => logger.debug('log cleaner thread started'),
    (error: unknown) => logger.error({ err: error }, 'log cleaner thread failed to start'),
  );
  const reportedUncleanable = new Set<string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const cleanerLogs = (): CleanerLog[] =>
    [...replicas.all()].map((replica) => ({
      log: replica.log,
      checkpoint,
      producerLastOffsets: () => replica.producerState.producers.lastBatchOffsets(),
    }));

  const pass = async (): Promise<boolean> => {
    try {
      const result = await cleaner.cleanFilthiest(cleanerLogs());
      if (result === undefined) return false;
      metrics.bytesRead.inc(result.bytesRead);
      metrics.bytesWritten.inc(result.bytesWritten);
      metrics.recordsRemoved.inc(result.recordsRemoved);
      metrics.passDuration.set(result.durationMs / 1000);
      logger.info(
        {
          partition: result.folder,
          dirtyRatio: Number(result.dirtyRatio.toFixed(3)),
          firstDirtyOffset: result.firstDirtyOffset.toString(),
          endOffset: result.endOffset.toString(),
          bytesRead: result.bytesRead,
          bytesWritten: result.bytesWritten,
          recordsRemoved: result.recordsRemoved,
          segmentsBefore: result.segmentsBefore,
          segmentsAfter: result.segmentsAfter,
          ms: Math.round(result.durationMs),
          aborted: result.aborted,
        },
        'log cleaner pass',
      );
      return !result.aborted;
    } catch (error) {
      for (const { folder, reason } of cleaner.statistics().uncleanable) {
        if (reportedUncleanable.has(folder)) continue;
        reportedUncleanable.add(folder);
        logger.error({ partition: folder, reason }, 'log cleaner: partition marked uncleanable');
      }
      if (reportedUncleanable.size === 0) logger.warn({ err: error }, 'log cleaner pass failed');
      return false;
    }
  };

  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().then((cleaned) => {
        running = undefined;
        schedule(cleaned ? 0 : options.backoffMs);
      });
    }, delayMs);
    timer.unref();
  };
  schedule(options.backoffMs);

  return {
    cleaner,
    partitionStates: () =>
      cleaner
        .logStates()
        .slice(0, cleanerStatesReportedMax)
        .map((state) => ({
          ...topicPartitionOfFolder(state.folder),
          firstDirtyOffset: state.firstDirtyOffset,
          dirtyRatio: state.dirtyRatio,
          uncleanableReason: state.uncleanableReason ?? '',
          brokerId: 0,
        })),
    forget: (replica) => checkpoint.remove(path.basename(replica.log.directory)),
    stop: async () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      cleaner.stop();
      await running;
      await cleaner.close();
    },
  };
}

/**
 * A bound on one heartbeat's cleaner report: about 60 bytes an entry keeps it near 1 MiB, under
 * gRPC's 4 MiB message limit, with far more compacted partitions than one node should lead.
 */
const cleanerStatesReportedMax = 16_384;

/** A log folder's name is `<topic>-<partition>`; topic names may hold dashes themselves. */
function topicPartitionOfFolder(folder: string): { topic: string; partition: number } {
  const split = folder.lastIndexOf('-');
  return { topic: folder.slice(0, split), partition: Number(folder.slice(split + 1)) };
}

function registerCleanerMetrics(
  registry: Registry,
  cleaner: LogCleaner,
  metricsPerPartition: boolean,
) {
  if (metricsPerPartition) {
    const partitionLabels = (folder: string) => {
      const { topic, partition } = topicPartitionOfFolder(folder);
      return { topic, partition: String(partition) };
    };
    new Gauge({
      name: 'spool_log_cleaner_partition_dirty_ratio',
      help: "A compacted partition's dirty share of its cleanable bytes, at the cleaner's last look.",
      labelNames: ['topic', 'partition'],
      registers: [registry],
      collect() {
        this.reset();
        for (const state of cleaner.logStates()) {
          this.set(partitionLabels(state.folder), state.dirtyRatio);
        }
      },
    });
    new Gauge({
      name: 'spool_log_cleaner_partition_first_dirty_offset',
      help: "Where a compacted partition's dirty section starts: it is cleaned below this offset.",
      labelNames: ['topic', 'partition'],
      registers: [registry],
      collect() {
        this.reset();
        for (const state of cleaner.logStates()) {
          this.set(partitionLabels(state.folder), Number(state.firstDirtyOffset));
        }
      },
    });
  }
  new Gauge({
    name: 'spool_log_cleaner_max_dirty_ratio',
    help:
      "The largest share of dirty bytes among this node's compacted logs at the cleaner's last " +
      "choice (Kafka's max-dirty-percent, as a ratio).",
    registers: [registry],
    collect() {
      this.set(cleaner.statistics().maxDirtyRatio);
    },
  });
  new Gauge({
    name: 'spool_log_cleaner_uncleanable_partitions',
    help:
      "Compacted partitions the cleaner stopped cleaning after an error (Kafka's " +
      'uncleanable-partitions-count); the reason is in the log line "partition marked uncleanable".',
    registers: [registry],
    collect() {
      this.set(cleaner.statistics().uncleanable.length);
    },
  });
  new Gauge({
    name: 'spool_log_cleaner_thread_crashes',
    help:
      "Times the log cleaner's worker thread died during a pass; each marked that pass's " +
      'partition uncleanable, and the next pass started a new thread.',
    registers: [registry],
    collect() {
      this.set(cleaner.statistics().threadCrashes);
    },
  });
  new Gauge({
    name: 'spool_log_cleaner_throttled_seconds',
    help: 'Time the cleaner waited for log.cleaner.io.max.bytes.per.second.',
    registers: [registry],
    collect() {
      this.set(cleaner.statistics().throttledMs / 1000);
    },
  });
  return {
    bytesRead: new Counter({
      name: 'spool_log_cleaner_bytes_read_total',
      help: 'Bytes of log the cleaner read (offset maps and the segments it rewrote).',
      registers: [registry],
    }),
    bytesWritten: new Counter({
      name: 'spool_log_cleaner_bytes_written_total',
      help: 'Bytes of cleaned segments the cleaner wrote.',
      registers: [registry],
    }),
    recordsRemoved: new Counter({
      name: 'spool_log_cleaner_records_removed_total',
      help: 'Records the cleaner removed: older values of a key, expired tombstones, keyless records.',
      registers: [registry],
    }),
    passDuration: new Gauge({
      name: 'spool_log_cleaner_last_pass_seconds',
      help: "How long the cleaner's last pass over a log took (Kafka's cleaner-recopy time).",
      registers: [registry],
    }),
  };
}
