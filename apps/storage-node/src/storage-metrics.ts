import * as fs from 'node:fs';
import {
  registerTextGaugeFamily,
  requestDurationBucketsSeconds,
  type RequestMetrics,
} from '@spool/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DataDirectory } from './data-directory';
import type { PartitionReplica } from './replica/partition-replica';
import type { ReplicaManager } from './replica/replica-manager';

/**
 * The storage node's Prometheus metrics, under the names a Kafka operator looks for. Per-partition
 * gauges are computed at scrape time from the hosted replicas and can be switched off for nodes
 * with very many partitions (`--metrics-per-partition false`). Request count, errors and latency
 * per API are the common `spool_request*` series: the gRPC server records its calls, the fetch
 * handlers record the data port's.
 */
export class StorageMetrics {
  readonly messagesIn: Counter<'topic'>;
  readonly bytesIn: Counter<'topic'>;
  readonly bytesOut: Counter<'topic'>;
  /** Produce time by stage: queue, local_append, replication_wait (Kafka's Produce breakdown). */
  readonly produceStageDuration: Histogram<'stage'>;
  readonly recoverySegmentsScanned: Counter;
  readonly isrShrinks: Counter;
  readonly isrExpands: Counter;
  readonly reassignmentBytesIn: Counter;
  readonly reassignmentThrottled: Counter;
  /** The replication throttles' rates in effect (static or dynamic), 0 while off. */
  readonly replicationThrottledRate: Gauge<'side'>;
  readonly recoveryBytesTruncated: Counter;
  readonly corruptBatchesFound: Counter;

  constructor(
    registry: Registry,
    readonly requests: RequestMetrics,
    replicas: () => ReplicaManager | undefined,
    dataDirectory: DataDirectory,
    metricsPerPartition: boolean,
    minInsync: (replica: PartitionReplica) => number = () => 1,
  ) {
    this.messagesIn = new Counter({
      name: 'spool_messages_in_total',
      help: 'Records appended by this node as leader, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    });
    this.bytesIn = new Counter({
      name: 'spool_bytes_in_total',
      help: 'Record batch bytes appended by this node as leader, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    });
    this.bytesOut = new Counter({
      name: 'spool_bytes_out_total',
      help: 'Record batch bytes sent by this node to consumers and followers, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    });
    this.produceStageDuration = new Histogram({
      name: 'spool_produce_stage_duration_seconds',
      help:
        'Time a partition of an Append spends in each stage: queue (from the request reaching ' +
        'the handler to its local append starting), local_append (validating and writing the ' +
        'log) and replication_wait (acks=all, until the high watermark passes it).',
      labelNames: ['stage'],
      buckets: requestDurationBucketsSeconds,
      registers: [registry],
    });
    this.recoverySegmentsScanned = new Counter({
      name: 'spool_log_recovery_segments_scanned_total',
      help: 'Segments scanned by log recovery at start-up (0 after a clean shutdown).',
      registers: [registry],
    });
    this.recoveryBytesTruncated = new Counter({
      name: 'spool_log_recovery_bytes_truncated_total',
      help: 'Bytes cut from logs by recovery at start-up (torn or corrupt tails).',
      registers: [registry],
    });
    this.corruptBatchesFound = new Counter({
      name: 'spool_log_corrupt_batches_found_total',
      help:
        'Corrupt batches found by reading local logs back at start-up; each cut its log there ' +
        'to be fetched again from the leader.',
      registers: [registry],
    });
    this.isrShrinks = new Counter({
      name: 'spool_isr_shrinks_total',
      help: 'ISR shrinks made by this node as leader (a follower fell behind).',
      registers: [registry],
    });
    this.reassignmentBytesIn = new Counter({
      name: 'spool_reassignment_bytes_in_total',
      help:
        "Bytes fetched into replicas a reassignment adds to this node (Kafka's " +
        'ReassignmentBytesInPerSec): the data moved by reassignments.',
      registers: [registry],
    });
    this.reassignmentThrottled = new Counter({
      name: 'spool_reassignment_throttled_total',
      help:
        'Times a catching-up replica waited for follower.replication.throttled.rate: how often ' +
        'the reassignment throttle was in effect.',
      registers: [registry],
    });
    this.replicationThrottledRate = new Gauge({
      name: 'spool_replication_throttled_rate_bytes',
      help:
        'The reassignment throttle in effect on this node, bytes/s by side (leader: ' +
        'leader.replication.throttled.rate, follower: follower.replication.throttled.rate); ' +
        '0 while that throttle is off.',
      labelNames: ['side'],
      registers: [registry],
    });
    for (const side of ['leader', 'follower']) this.replicationThrottledRate.set({ side }, 0);
    this.isrExpands = new Counter({
      name: 'spool_isr_expands_total',
      help: 'ISR expansions made by this node as leader (a follower caught up).',
      registers: [registry],
    });
    const ledPartitions = function* (): Generator<PartitionReplica> {
      const manager = replicas();
      if (manager === undefined) return;
      for (const replica of manager.all()) if (replica.isLeader) yield replica;
    };
    new Gauge({
      name: 'spool_under_replicated_partitions',
      help: 'Partitions this node leads whose ISR is smaller than their replica set.',
      registers: [registry],
      collect() {
        let count = 0;
        for (const replica of ledPartitions()) {
          if (replica.assignment.isr.length < replica.assignment.replicas.length) count++;
        }
        this.set(count);
      },
    });
    new Gauge({
      name: 'spool_under_min_isr_partitions',
      help: 'Partitions this node leads whose ISR is smaller than min.insync.replicas.',
      registers: [registry],
      collect() {
        let count = 0;
        for (const replica of ledPartitions()) {
          if (replica.assignment.isr.length < minInsync(replica)) count++;
        }
        this.set(count);
      },
    });
    new Gauge({
      name: 'spool_disk_free_bytes',
      help: 'Free bytes on the file system of the data directory.',
      registers: [registry],
      collect() {
        // A directory that cannot be statted has no free space to offer.
        this.set(isWritableDirectory(dataDirectory.root) ? dataDirectory.freeBytes() : 0);
      },
    });
    new Gauge({
      name: 'spool_offline_log_directories',
      help:
        'Log directories this node cannot write (missing, unmounted or read-only); 0 or 1, as ' +
        'a node has one.',
      registers: [registry],
      collect() {
        this.set(isWritableDirectory(dataDirectory.root) ? 0 : 1);
      },
    });
    new Gauge({
      name: 'spool_disk_total_bytes',
      help: 'Size of the file system of the data directory.',
      registers: [registry],
      collect() {
        if (isWritableDirectory(dataDirectory.root)) this.set(dataDirectory.totalBytes());
      },
    });
    new Gauge({
      name: 'spool_partitions',
      help: 'Partition replicas hosted by this node, by role.',
      labelNames: ['role'],
      registers: [registry],
      collect() {
        const manager = replicas();
        if (manager === undefined) return;
        let leaders = 0;
        let followers = 0;
        for (const replica of manager.all()) {
          if (replica.isLeader) leaders++;
          else followers++;
        }
        this.set({ role: 'leader' }, leaders);
        this.set({ role: 'follower' }, followers);
      },
    });
    if (!metricsPerPartition) return;
    // Thousands of series each: rendered as text at scrape time (text-metric-family.ts says why).
    const perPartition = (
      name: string,
      help: string,
      value: (replica: PartitionReplica) => number,
    ): void =>
      registerTextGaugeFamily(registry, {
        name,
        help,
        labelNames: ['topic', 'partition'],
        collect(emit) {
          const manager = replicas();
          if (manager === undefined) return;
          for (const replica of manager.all()) {
            emit([replica.topic, String(replica.partition)], value(replica));
          }
        },
      });
    const perFollower = (
      name: string,
      help: string,
      value: (replica: PartitionReplica, followerEnd: bigint) => number,
    ): void =>
      registerTextGaugeFamily(registry, {
        name,
        help,
        labelNames: ['topic', 'partition', 'follower'],
        collect(emit) {
          for (const replica of ledPartitions()) {
            for (const [followerId, follower] of replica.followers) {
              if (follower.logEndOffset < 0n) continue;
              emit(
                [replica.topic, String(replica.partition), String(followerId)],
                value(replica, follower.logEndOffset),
              );
            }
          }
        },
      });
    perPartition(
      'spool_log_size_bytes',
      'Bytes in the partition log on this node.',
      (replica) => replica.log.sizeBytes,
    );
    perPartition(
      'spool_log_segments',
      'Segments in the partition log on this node.',
      (replica) => replica.log.segmentCount,
    );
    perPartition(
      'spool_log_start_offset',
      'Log start offset of the partition on this node.',
      (replica) => Number(replica.log.logStartOffset),
    );
    perPartition(
      'spool_log_end_offset',
      'Log end offset of the partition on this node.',
      (replica) => Number(replica.log.logEndOffset),
    );
    perFollower(
      'spool_follower_lag_records',
      'How far each follower is behind this leader, in records (leader log end − follower log end).',
      (replica, followerEnd) => Number(replica.log.logEndOffset - followerEnd),
    );
    perFollower(
      'spool_follower_lag_bytes',
      'How far each follower is behind this leader, in bytes of log it has yet to fetch.',
      (replica, followerEnd) => replica.log.sizeBytesFrom(followerEnd),
    );
    perPartition(
      'spool_high_watermark',
      'High watermark of the partition as known to this node.',
      (replica) => Number(replica.highWatermark),
    );
  }
}

function isWritableDirectory(directory: string): boolean {
  try {
    fs.accessSync(directory, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
