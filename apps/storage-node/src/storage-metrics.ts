import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DataDirectory } from './data-directory';
import type { PartitionReplica } from './partition-replica';
import type { ReplicaManager } from './replica-manager';

/**
 * The storage node's Prometheus metrics, under the names a Kafka operator looks for. Per-partition
 * gauges are computed at scrape time from the hosted replicas and can be switched off for nodes
 * with very many partitions (`perPartitionMetrics`).
 */
export class StorageMetrics {
  readonly messagesIn: Counter<'topic'>;
  readonly bytesIn: Counter<'topic'>;
  readonly bytesOut: Counter<'topic'>;
  readonly requestDuration: Histogram<'api'>;
  readonly requestErrors: Counter<'api' | 'code'>;
  readonly recoverySegmentsScanned: Counter;
  readonly isrShrinks: Counter;
  readonly isrExpands: Counter;
  readonly recoveryBytesTruncated: Counter;

  constructor(
    registry: Registry,
    replicas: () => ReplicaManager | undefined,
    dataDirectory: DataDirectory,
    perPartitionMetrics: boolean,
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
    this.requestDuration = new Histogram({
      name: 'spool_request_duration_seconds',
      help: 'Time to answer a request, by API (Append, ListOffsets, DeleteRecords, Fetch).',
      labelNames: ['api'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.requestErrors = new Counter({
      name: 'spool_request_errors_total',
      help: 'Requests or partitions answered with an error, by API and error code.',
      labelNames: ['api', 'code'],
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
    this.isrShrinks = new Counter({
      name: 'spool_isr_shrinks_total',
      help: 'ISR shrinks made by this node as leader (a follower fell behind).',
      registers: [registry],
    });
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
        this.set(dataDirectory.freeBytes());
      },
    });
    new Gauge({
      name: 'spool_disk_total_bytes',
      help: 'Size of the file system of the data directory.',
      registers: [registry],
      collect() {
        this.set(dataDirectory.totalBytes());
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
    if (!perPartitionMetrics) return;
    const perPartition = (
      name: string,
      help: string,
      value: (replica: PartitionReplica) => number,
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['topic', 'partition'],
        registers: [registry],
        collect() {
          this.reset();
          const manager = replicas();
          if (manager === undefined) return;
          for (const replica of manager.all()) {
            this.set(
              { topic: replica.topic, partition: String(replica.partition) },
              value(replica),
            );
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
    const perFollower = (
      name: string,
      help: string,
      value: (replica: PartitionReplica, followerEnd: bigint) => number,
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['topic', 'partition', 'follower'],
        registers: [registry],
        collect() {
          this.reset();
          for (const replica of ledPartitions()) {
            for (const [followerId, follower] of replica.followers) {
              if (follower.logEndOffset < 0n) continue;
              const labels = {
                topic: replica.topic,
                partition: String(replica.partition),
                follower: String(followerId),
              };
              this.set(labels, value(replica, follower.logEndOffset));
            }
          }
        },
      });
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
