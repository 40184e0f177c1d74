/**
 * The coordinator's parts, wired: the controller link (heartbeats, metadata), the partition
 * leaders, the shard manager, the group calls, their periodic maintenance, producer ids and the
 * metrics. Built once the gRPC port is bound, since the coordinator registers its endpoint.
 */
import type { Logger, TransportSecurity } from '@spool/common';
import type { Endpoint } from '@spool/protocol';
import type { Registry } from 'prom-client';
import { ControllerLink } from './controller-link';
import { CoordinatorMetrics } from './coordinator-metrics';
import type { CoordinatorRuntime } from './coordinator-rpc';
import { GroupCoordinator } from './group-coordinator';
import { GroupMaintenance } from './group-maintenance';
import type { GroupTimeouts } from '@spool/consumer-group';
import { PartitionLeaders } from './partition-leaders';
import { ProducerIdManager } from './producer-id-manager';
import { ShardManager } from './shard-manager';

export interface CoordinatorRuntimeOptions {
  readonly coordinatorId: string;
  readonly endpoints: readonly Endpoint[];
  readonly controllerAddresses: readonly string[];
  readonly coordinatorSessionTimeoutMs: number;
  readonly timeouts: GroupTimeouts;
  readonly logger: Logger;
  readonly metrics: Registry;
  /** False leaves out per-partition lag series (sum and max per group stay). */
  readonly metricsPerPartition?: boolean;
  /** Entries written to a shard between checkpoints (ShardManager, point 4). */
  readonly offsetsCheckpointIntervalRecords?: number;
  /** TLS to the controllers and storage nodes (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity | undefined;
}

export class CoordinatorParts {
  readonly link: ControllerLink;
  readonly runtime: CoordinatorRuntime;
  private readonly leaders: PartitionLeaders;
  private readonly shards: ShardManager;
  private readonly maintenance: GroupMaintenance;

  constructor(options: CoordinatorRuntimeOptions) {
    const { logger } = options;
    // The link and the shard manager call parts built after them; none runs before start().
    const late: {
      shards?: ShardManager;
      maintenance?: GroupMaintenance;
      metrics?: CoordinatorMetrics;
    } = {};
    this.link = new ControllerLink(
      {
        coordinatorId: options.coordinatorId,
        endpoints: options.endpoints,
        controllerAddresses: options.controllerAddresses,
        sessionTimeoutMs: options.coordinatorSessionTimeoutMs,
        onShards: (owned) => late.shards?.onShards(owned),
        transportSecurity: options.transportSecurity,
      },
      logger.child({ component: 'controller-link' }),
    );
    this.leaders = new PartitionLeaders(this.link, options.transportSecurity);
    const shards = new ShardManager({
      coordinatorId: options.coordinatorId,
      link: this.link,
      leaders: this.leaders,
      timeouts: options.timeouts,
      logger: logger.child({ component: 'shards' }),
      onLoaded: (shard) => late.maintenance?.onShardLoaded(shard),
      checkpointIntervalEntries: options.offsetsCheckpointIntervalRecords,
      onCheckpoint: (_shard, entries) => {
        late.metrics?.offsetsCheckpoints.inc();
        late.metrics?.offsetsCheckpointEntries.inc(entries);
      },
    });
    late.shards = shards;
    this.shards = shards;
    const metrics = new CoordinatorMetrics(
      options.metrics,
      {
        *groups() {
          for (const shard of shards.activeShards())
            for (const group of shard.groups.values())
              yield {
                groupId: group.groupId,
                state: group.state,
                members: group.describeMembers().length,
              };
        },
        shardsOwned: () => shards.heldShards.length,
      },
      options.metricsPerPartition ?? true,
    );
    late.metrics = metrics;
    const groups = new GroupCoordinator({
      link: this.link,
      shards,
      leaders: this.leaders,
      metrics,
      logger: logger.child({ component: 'groups' }),
    });
    this.maintenance = new GroupMaintenance(
      this.link,
      shards,
      groups,
      metrics,
      logger.child({ component: 'group-maintenance' }),
    );
    late.maintenance = this.maintenance;
    const producerIds = new ProducerIdManager({
      allocateBlock: () => this.link.allocateProducerIds(),
    });
    this.runtime = {
      groups,
      shards,
      leaders: this.leaders,
      metadata: this.link.metadata,
      producerIds,
    };
  }

  start(): void {
    this.link.start();
    this.maintenance.start();
  }

  /** Stops serving, then hands the shards off through the controller at once. */
  async shutDown(): Promise<void> {
    this.maintenance.stop();
    this.shards.stop();
    await this.link.shutDown();
  }

  close(): void {
    this.link.stop();
    this.leaders.close();
  }
}
