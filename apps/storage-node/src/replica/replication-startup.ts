/**
 * What a storage node starts once it listens (its endpoints are known): the controller link
 * (registration, heartbeats, the metadata watch), the replica fetchers and the ISR manager that
 * the role changes drive (replication-roles.ts), the readiness that waits for the first metadata
 * and for this node's replicas to be in sync, and the controlled shutdown at the end.
 */
import type { Logger, ServiceContext } from '@spool/common';
import type {
  ClusterMetadataCache,
  Endpoint,
  PartitionCleanerState,
  PartitionReplicaSize,
} from '@spool/protocol';
import type { AppendStreams } from '../append-streams';
import { ControllerLink } from '../controller-link';
import type { LogDirHealth } from '../log-dir-health';
import type { StorageMetrics } from '../storage-metrics';
import type { storageNodeSettings } from '../storage-node-service';
import { IsrManager } from './isr-manager';
import { ReplicaFetcherManager } from './replica-fetcher-manager';
import type { ReplicationThrottles } from './replication-throttles';
import type { ReplicaManager } from './replica-manager';
import { waitForReplicasInSync } from './replica-sync-readiness';
import type { ReplicationRoles } from './replication-roles';

export interface ReplicationStartOptions {
  readonly brokerId: number;
  readonly rack: string;
  readonly endpoints: readonly Endpoint[];
  readonly logger: Logger;
  readonly metadata: ClusterMetadataCache;
  readonly replicas: ReplicaManager;
  readonly replication: ReplicationRoles;
  readonly storageMetrics: StorageMetrics;
  readonly logDirHealth: LogDirHealth;
  readonly appendStreams: AppendStreams;
  /** The slow-disk test hook's, when the fault suite turns it on (slow-disk-test-hook.ts). */
  readonly beforeLogAppend: (() => void) | undefined;
  /** The log cleaner's state for the heartbeats (none while the cleaner is off). */
  readonly cleanerStates: () => PartitionCleanerState[];
  /** The reassignment throttles; every heartbeat answer may change their rates. */
  readonly throttles: ReplicationThrottles;
  /** Told the controller link once it exists (a data directory change heartbeats at once). */
  readonly onLink: (link: ControllerLink) => void;
}

export function startReplication(
  context: ServiceContext<typeof storageNodeSettings>,
  options: ReplicationStartOptions,
): void {
  const { config, readiness } = context;
  const { brokerId, logger, metadata, replicas, replication, storageMetrics } = options;
  const link = new ControllerLink(
    {
      brokerId,
      rack: options.rack,
      endpoints: options.endpoints,
      controllerAddresses: config.controllerAddresses,
      heartbeatIntervalMs: config.brokerHeartbeatIntervalMs,
      logDirOffline: () => options.logDirHealth.offline,
      cleanerStates: options.cleanerStates,
      replicaSizes: () => {
        const sizes: PartitionReplicaSize[] = [];
        for (const replica of replicas.all()) {
          const sizeBytes = BigInt(replica.log.sizeBytes);
          sizes.push({ topic: replica.topic, partition: replica.partition, sizeBytes });
        }
        return sizes;
      },
      onDynamicConfigs: (configs) => {
        for (const { name, rate } of options.throttles.applyDynamicConfigs(configs)) {
          logger.info({ config: name, rateBytesPerSecond: rate }, 'replication throttle changed');
        }
        storageMetrics.replicationThrottledRate.set(
          { side: 'leader' },
          options.throttles.leader.rateBytesPerSecond,
        );
        storageMetrics.replicationThrottledRate.set(
          { side: 'follower' },
          options.throttles.follower.rateBytesPerSecond,
        );
      },
      transportSecurity: context.transportSecurity,
    },
    metadata,
    logger.child({ component: 'controller-link' }),
  );
  options.onLink(link);
  replication.fetchers = new ReplicaFetcherManager({
    brokerId,
    brokerEpoch: () => link.brokerEpoch,
    fetchMaxBytes: config.replicaFetchMaxBytes,
    fetchWaitMaxMs: config.replicaFetchWaitMaxMs,
    logger: logger.child({ component: 'replica-fetcher' }),
    metadata,
    beforeLogAppend: options.beforeLogAppend,
    transportSecurity: context.transportSecurity,
    throttle: options.throttles.follower,
    onReassignmentBytes: (bytes) => storageMetrics.reassignmentBytesIn.inc(bytes),
    onThrottled: () => storageMetrics.reassignmentThrottled.inc(),
  });
  replication.isr = new IsrManager({
    brokerId,
    replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
    alterPartition: (request) => link.alterPartition(request),
    logger: logger.child({ component: 'isr' }),
    onShrink: () => storageMetrics.isrShrinks.inc(),
    onExpand: () => storageMetrics.isrExpands.inc(),
  });
  const isrTimer = setInterval(
    () => {
      for (const replica of replicas.all()) replication.isr?.maybeUpdate(replica);
    },
    Math.max(50, Math.floor(config.replicaLagTimeMaxMs / 2)),
  );
  isrTimer.unref();
  metadata.onChange((change) => void replicas.reconcile(change));
  void link
    .start()
    .catch((error: unknown) => logger.error({ err: error }, 'controller link failed'));
  readiness.require('replicas in sync');
  void link.firstSnapshotApplied.then(async () => {
    await replicas.reconcile();
    readiness.satisfy('metadata');
    await waitForReplicasInSync(
      replicas,
      brokerId,
      metadata,
      config.replicaSyncReadinessTimeoutMs,
      logger,
    );
    readiness.satisfy('replicas in sync');
  });
  context.onShutdown(async () => {
    // Controlled shutdown: leaderships move to other ISR members while this node still
    // serves, so producers see one quick NOT_LEADER_OR_FOLLOWER instead of an outage.
    try {
      const remaining = await link.controlledShutdown();
      logger.info({ remainingLeaderships: remaining }, 'controlled shutdown done');
    } catch (error) {
      logger.warn({ err: error }, 'controlled shutdown failed; stopping anyway');
    }
    clearInterval(isrTimer);
    replication.isr?.stop();
    await replication.fetchers?.stop();
    link.stop();
    // Once the leaderships are gone: the gateways' append streams finish what they started
    // and end, so the drain that follows does not wait for them.
    options.appendStreams.stop();
  });
}
