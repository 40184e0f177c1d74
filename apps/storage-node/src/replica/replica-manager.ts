/**
 * The partition replicas this storage node hosts (Kafka's `ReplicaManager`). At start-up it opens
 * every log found in the data directory, recovering those that were not closed cleanly, and
 * reports each recovery. Then it follows the controller's metadata: it creates the logs of
 * replicas newly assigned to this node, deletes those no longer assigned (or whose topic was
 * deleted and re-created: the topic id differs), and applies every leader and ISR change.
 *
 * Each partition folder carries `partition.metadata` with the topic id, as Kafka's does, so a log
 * is never mistaken for the log of a later topic with the same name.
 */
import { SpoolError, type Logger } from '@spool/common';
import type {
  ClusterMetadataCache,
  MetadataChange,
  PartitionMetadata,
  TopicMetadata,
} from '@spool/protocol';
import {
  type Log,
  type LogConfig,
  logConfigFromTopicConfigs,
  type LogCorruption,
  producerStateSettingsDefault,
  type ProducerStateSettings,
  readPartitionTopicId,
  writePartitionTopicId,
  type LogDirectory,
  type LogDirectoryLoadReport,
  type LogDirGuard,
  type RecoveryReport,
  recoveryDidWork,
  verifyLog,
} from '@spool/segment-store';
import type { DataDirectory } from '../data-directory';
import { PartitionReplica, type PartitionAssignment } from './partition-replica';

export interface ReplicaManagerEvents {
  /** A log was opened at start-up or created; `report` says what recovery did. */
  onLogOpened?(replicaName: string, report: RecoveryReport): void;
  /**
   * The controller changed a replica's assignment (replication starts or stops here at a new
   * epoch or role; a leader also sees ISR changes it did not ask for).
   */
  onRoleChange?(replica: PartitionReplica, change: AssignmentChange): void;
  onReplicaRemoved?(replica: PartitionReplica): void;
  /** Start-up verification found a corrupt batch and truncated the log there. */
  onLogCorruption?(replicaName: string, corruption: LogCorruption, bytesTruncated: number): void;
}

/** What an applied assignment changed; previousIsr is the ISR before it. */
export interface AssignmentChange {
  readonly epochChanged: boolean;
  readonly roleChanged: boolean;
  readonly previousIsr?: readonly number[];
}

export interface ReplicaManagerOptions {
  /** Opens the logs: the data directory's recovery points, marker and descriptor bound. */
  readonly logDirectory: LogDirectory;
  /**
   * Read back every log found on disk before its replica is hosted (default true): a clean
   * open trusts the files, and bit rot would otherwise be served or replicated.
   */
  readonly verifyLogsOnStart?: boolean;
  readonly producerStateSettings?: ProducerStateSettings;
  /** The data directory's health: appends refuse while it is offline and report failures. */
  readonly logDir?: LogDirGuard;
}

function topicConfigMap(topic: TopicMetadata): Record<string, string> {
  return Object.fromEntries(topic.configs.map((entry) => [entry.name, entry.value]));
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

export class ReplicaManager {
  private readonly replicas = new Map<string, PartitionReplica>();
  /** Each hosted replica's topic id, as its partition.metadata file says. */
  private readonly topicIds = new Map<string, string>();
  /** Logs opened at start-up, waiting for metadata to say whether they are still ours. */
  private readonly unclaimedLogs = new Map<string, { log: Log; topicId: string }>();
  private reconciling = Promise.resolve();

  constructor(
    readonly brokerId: number,
    private readonly dataDirectory: DataDirectory,
    private readonly metadata: ClusterMetadataCache,
    private readonly logger: Logger,
    private readonly events: ReplicaManagerEvents = {},
    private readonly options: ReplicaManagerOptions,
  ) {}

  /**
   * Opens every log on disk, recovering only what needs it, and logs one line per recovered log
   * and one summary (the directory's load report). Never throws for damaged data: recovery cuts
   * and reports it.
   */
  async openLocalLogs(): Promise<LogDirectoryLoadReport> {
    const folders = this.dataDirectory.listPartitionFolders();
    const { logs, report } = await this.options.logDirectory.loadLogs(
      folders.map((folder) => partitionKey(folder.topic, folder.partition)),
      (name) => ({
        onBackgroundError: (error) => this.onBackgroundError(name, error),
      }),
    );
    for (const loaded of logs) {
      const fields = { partition: loaded.folder, ...stringify(loaded.report) };
      // 20,000 lines saying "nothing to do" would bury the ones that matter.
      if (recoveryDidWork(loaded.report)) this.logger.info(fields, 'log recovered');
      else this.logger.debug(fields, loaded.report.clean ? 'log opened' : 'log recovered');
      this.events.onLogOpened?.(loaded.folder, loaded.report);
      this.unclaimedLogs.set(loaded.folder, {
        log: loaded.log,
        topicId: readPartitionTopicId(loaded.log.directory),
      });
    }
    return report;
  }

  /** A flush that failed: logged, and the data directory taken offline if the disk failed. */
  private onBackgroundError(name: string, error: unknown): void {
    this.logger.error({ err: error, partition: name }, 'background flush failed');
    this.options.logDir?.report(error);
  }

  get(topic: string, partition: number): PartitionReplica | undefined {
    return this.replicas.get(partitionKey(topic, partition));
  }

  all(): IterableIterator<PartitionReplica> {
    return this.replicas.values();
  }

  /** The replica, or the error Kafka answers for a partition this node cannot serve. */
  require(topic: string, partition: number): PartitionReplica {
    const replica = this.get(topic, partition);
    if (replica !== undefined) return replica;
    const known = this.metadata.partition(topic, partition);
    if (known === undefined) {
      throw new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `this node knows no partition ${topic}-${partition}`,
      );
    }
    throw new SpoolError(
      'NOT_LEADER_OR_FOLLOWER',
      `broker ${this.brokerId} does not host ${topic}-${partition}; broker ${known.leaderId} leads it`,
      { details: { leader: String(known.leaderId) } },
    );
  }

  /**
   * Applies the metadata cache to the hosted replicas; changes are applied one after another.
   * With a delta (`change`), only what it names is looked at: a failover that moves thousands of
   * leaderships in chunks costs each chunk its own partitions, not every hosted replica. Without
   * one, or with a snapshot, everything is (and local logs no longer assigned are deleted).
   * Either way the cache's current state is applied, so a later change is never undone.
   */
  reconcile(change?: MetadataChange, nowMs = Date.now()): Promise<void> {
    this.reconciling = this.reconciling
      .then(() =>
        change === undefined || change.snapshot
          ? this.reconcileAll(nowMs)
          : this.reconcileChange(change, nowMs),
      )
      .catch((error: unknown) => {
        this.logger.error({ err: error }, 'applying metadata to local replicas failed');
      });
    return this.reconciling;
  }

  private async reconcileAll(nowMs: number): Promise<void> {
    const assigned = new Set<string>();
    for (const topic of this.metadata.topics.values()) {
      for (const name of await this.reconcileTopic(topic, nowMs)) assigned.add(name);
    }
    for (const [name, replica] of this.replicas) {
      if (!assigned.has(name)) await this.remove(replica);
    }
    for (const [name, unclaimed] of this.unclaimedLogs) {
      if (assigned.has(name)) continue;
      this.logger.info({ partition: name }, 'deleting a local log no longer assigned to this node');
      await unclaimed.log.delete();
      this.unclaimedLogs.delete(name);
    }
  }

  private async reconcileChange(change: MetadataChange, nowMs: number): Promise<void> {
    for (const name of change.deletedTopics) await this.removeTopicReplicas(name, new Set());
    for (const name of change.changedTopics) {
      const topic = this.metadata.topics.get(name);
      if (topic === undefined) await this.removeTopicReplicas(name, new Set());
      else await this.removeTopicReplicas(name, await this.reconcileTopic(topic, nowMs));
    }
    const configs = new Map<string, LogConfig>();
    for (const changed of change.changedPartitions) {
      const topic = this.metadata.topics.get(changed.topic);
      const partition = this.metadata.partition(changed.topic, changed.partition);
      if (topic === undefined || partition === undefined) continue;
      let config = configs.get(topic.name);
      if (config === undefined) {
        config = logConfigFromTopicConfigs(topicConfigMap(topic));
        configs.set(topic.name, config);
      }
      const assigned = await this.reconcilePartition(topic, partition, config, nowMs);
      const hosted = this.replicas.get(partitionKey(topic.name, partition.partition));
      if (!assigned && hosted !== undefined) await this.remove(hosted);
    }
  }

  /** Applies one topic; returns the names of its partitions assigned to this node. */
  private async reconcileTopic(topic: TopicMetadata, nowMs: number): Promise<Set<string>> {
    const assigned = new Set<string>();
    const config = logConfigFromTopicConfigs(topicConfigMap(topic));
    for (const partition of topic.partitions) {
      if (await this.reconcilePartition(topic, partition, config, nowMs)) {
        assigned.add(partitionKey(topic.name, partition.partition));
      }
    }
    return assigned;
  }

  /** Removes the hosted replicas of `topicName` not in `keep`. */
  private async removeTopicReplicas(topicName: string, keep: ReadonlySet<string>): Promise<void> {
    for (const replica of [...this.replicas.values()]) {
      if (replica.topic === topicName && !keep.has(replica.name)) await this.remove(replica);
    }
  }

  /**
   * Hosts, updates or (when the topic id changed) replaces one partition's replica; returns
   * whether the partition is assigned to this node.
   */
  private async reconcilePartition(
    topic: TopicMetadata,
    partition: PartitionMetadata,
    config: LogConfig,
    nowMs: number,
  ): Promise<boolean> {
    if (!partition.replicas.includes(this.brokerId)) return false;
    const name = partitionKey(topic.name, partition.partition);
    const assignment: PartitionAssignment = {
      leaderId: partition.leaderId,
      leaderEpoch: partition.leaderEpoch,
      partitionEpoch: partition.partitionEpoch,
      replicas: partition.replicas,
      isr: partition.isr,
    };
    let replica = this.replicas.get(name);
    if (replica !== undefined && this.topicIdOf(replica) !== topic.topicId) {
      await this.remove(replica);
      replica = undefined;
    }
    if (replica === undefined) {
      await this.host(topic, partition.partition, assignment, config);
      return true;
    }
    replica.log.updateConfig(config);
    if (
      replica.assignment.leaderEpoch !== assignment.leaderEpoch ||
      replica.assignment.partitionEpoch !== assignment.partitionEpoch
    ) {
      const previousIsr = replica.assignment.isr;
      const change = { ...replica.applyAssignment(assignment, nowMs), previousIsr };
      if (change.epochChanged || change.roleChanged) {
        this.logger.info(
          {
            partition: name,
            role: replica.role,
            leaderEpoch: assignment.leaderEpoch,
            isr: assignment.isr,
          },
          'replica role changed',
        );
      }
      this.events.onRoleChange?.(replica, change);
    }
    return true;
  }

  private async host(
    topic: TopicMetadata,
    partition: number,
    assignment: PartitionAssignment,
    config: LogConfig,
  ): Promise<void> {
    const name = partitionKey(topic.name, partition);
    const log = await this.claimOrCreateLog(topic, partition);
    log.updateConfig(config);
    this.topicIds.set(name, topic.topicId);
    const replica = new PartitionReplica(
      topic.name,
      partition,
      log,
      this.brokerId,
      assignment,
      this.options.producerStateSettings ?? producerStateSettingsDefault,
      this.options.logDir,
    );
    this.replicas.set(name, replica);
    const rebuild = replica.producerStateRebuild;
    this.logger.info(
      {
        partition: name,
        role: replica.role,
        leaderEpoch: assignment.leaderEpoch,
        producers: replica.producerState.producers.producerCount,
        producerSnapshotOffset: rebuild.snapshotOffset?.toString(),
        producerBatchesReplayed: rebuild.batchesReplayed,
      },
      'replica hosted',
    );
    for (const problem of rebuild.problems) {
      this.logger.warn({ partition: name, problem }, 'producer state snapshot skipped');
    }
    this.events.onRoleChange?.(replica, { epochChanged: true, roleChanged: true });
  }

  private async claimOrCreateLog(topic: TopicMetadata, partition: number): Promise<Log> {
    const name = partitionKey(topic.name, partition);
    const unclaimed = this.unclaimedLogs.get(name);
    if (unclaimed !== undefined) {
      this.unclaimedLogs.delete(name);
      if (unclaimed.topicId === topic.topicId || unclaimed.topicId === '') {
        writePartitionTopicId(unclaimed.log.directory, topic.topicId);
        if (this.options.verifyLogsOnStart ?? true) await this.verify(name, unclaimed.log);
        return unclaimed.log;
      }
      this.logger.warn(
        { partition: name },
        'local log belongs to an older topic of the same name; deleting it',
      );
      await unclaimed.log.delete();
    }
    const directory = this.dataDirectory.partitionDirectory(topic.name, partition);
    const { log, report } = await this.options.logDirectory.openLog(name, {
      config: logConfigFromTopicConfigs(topicConfigMap(topic)),
      onBackgroundError: (error) => this.onBackgroundError(name, error),
    });
    writePartitionTopicId(directory, topic.topicId);
    this.events.onLogOpened?.(name, report);
    return log;
  }

  /**
   * Reads the log back before its replica serves anything. At the first corrupt batch the log
   * is truncated: a follower then fetches that batch and the rest again from its leader, and a
   * leader serves only what is intact (what was above the damage on this disk alone is lost,
   * as it would be with the disk). Either way no corrupt byte is ever sent.
   */
  private async verify(name: string, log: Log): Promise<void> {
    const report = await verifyLog(log);
    if (report.corruption === undefined) {
      this.logger.info(
        {
          partition: name,
          batchesVerified: report.batchesVerified,
          bytesVerified: report.bytesVerified,
          durationMs: report.durationMs,
        },
        'log verified',
      );
      return;
    }
    const corruption = report.corruption;
    const { bytesTruncated } = log.truncateTo(corruption.offset);
    this.logger.error(
      {
        partition: name,
        offset: corruption.offset.toString(),
        file: corruption.filePath,
        position: corruption.position,
        problem: corruption.problem,
        bytesTruncated,
        logEndOffset: log.logEndOffset.toString(),
      },
      `corrupt batch on disk in ${corruption.filePath} at byte ${corruption.position} ` +
        `(offset ${corruption.offset}); truncated the log there to fetch the rest again`,
    );
    this.events.onLogCorruption?.(name, corruption, bytesTruncated);
  }

  /** The topic id the replica's log belongs to: remembered when hosted, so no file is read. */
  private topicIdOf(replica: PartitionReplica): string {
    return this.topicIds.get(replica.name) ?? readPartitionTopicId(replica.log.directory);
  }

  private async remove(replica: PartitionReplica): Promise<void> {
    this.replicas.delete(replica.name);
    this.topicIds.delete(replica.name);
    this.events.onReplicaRemoved?.(replica);
    replica.wake();
    this.logger.info(
      { partition: replica.name },
      'replica removed from this node; deleting its log',
    );
    await replica.log.delete();
  }

  /**
   * Checkpoints every HW (periodically and at shutdown): one file for the data directory,
   * written only when a HW moved (log-directory.ts).
   */
  checkpointHighWatermarks(): void {
    try {
      this.options.logDirectory.checkpointHighWatermarks();
    } catch (error) {
      this.logger.warn({ err: error }, 'high watermark checkpoint failed');
    }
  }

  /** Forgets producers idle past producer.id.expiration.ms, in every hosted partition. */
  removeExpiredProducers(nowMs = Date.now()): void {
    for (const replica of this.replicas.values()) {
      const removed = replica.producerState.removeExpiredProducers(nowMs);
      if (removed > 0) {
        this.logger.info({ partition: replica.name, removed }, 'expired idle producer ids');
      }
    }
  }

  /**
   * Clean close of every log, so the next start does not rescan; each partition's producer
   * state is snapshotted at its log end first, so the next start replays no batch headers.
   */
  async closeAll(): Promise<void> {
    await this.reconciling;
    this.checkpointHighWatermarks();
    for (const replica of this.replicas.values()) {
      try {
        replica.producerState.takeSnapshot(true);
      } catch (error) {
        // The next start replays from an older snapshot instead: slower, not wrong.
        this.logger.warn({ err: error, partition: replica.name }, 'producer snapshot failed');
      }
      await replica.log.close();
    }
    for (const unclaimed of this.unclaimedLogs.values()) await unclaimed.log.close();
    this.replicas.clear();
    this.unclaimedLogs.clear();
  }
}

function stringify(report: RecoveryReport): Record<string, unknown> {
  return {
    ...report,
    logStartOffset: report.logStartOffset.toString(),
    logEndOffset: report.logEndOffset.toString(),
  };
}
