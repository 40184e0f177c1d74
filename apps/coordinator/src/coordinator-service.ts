import * as os from 'node:os';
import { ConfigError, startService, type RunningService, type SettingsSchema } from '@spool/common';
import { CoordinatorServiceService, protoDescriptorSetPath } from '@spool/protocol';
import { ControllerLink } from './controller-link';
import { CoordinatorMetrics } from './coordinator-metrics';
import { coordinatorHandlers, type CoordinatorRuntime } from './coordinator-rpc';
import { GroupCoordinator } from './group-coordinator';
import { GroupMaintenance } from './group-maintenance';
import { PartitionLeaders } from './partition-leaders';
import { ProducerIdManager } from './producer-id-manager';
import { ShardManager } from './shard-manager';

/**
 * The coordinator service: owns consumer groups (members, assignments, committed offsets) and
 * hands out producer ids. The controller gives each coordinator a share of the
 * __consumer_offsets partitions (shards); a coordinator serves the groups that hash to its
 * shards, keeping their state as records in those partitions.
 */
export const coordinatorSettings = {
  controllerAddresses: {
    type: 'list',
    default: ['127.0.0.1:9093'],
    description: 'Controller gRPC addresses (host:port); any of them, the active one is found.',
  },
  coordinatorId: {
    type: 'string',
    default: '',
    pattern: /^[a-zA-Z0-9._:-]{0,128}$/,
    description:
      'This coordinator\'s stable id (the pod name on Kubernetes); empty means "<hostname>:<grpc port>".',
  },
  coordinatorSessionTimeoutMs: {
    type: 'integer',
    default: 9_000,
    min: 200,
    max: 600_000,
    description:
      'With no controller reached for this long the coordinator stops serving its shards; set ' +
      "it like the controller's coordinator.session.timeout.ms.",
  },
  groupConsumerSessionTimeoutMs: {
    type: 'integer',
    default: 45_000,
    min: 100,
    max: 3_600_000,
    description:
      'A group member silent this long is removed and its partitions reassigned ' +
      '(group.consumer.session.timeout.ms).',
  },
  groupConsumerHeartbeatIntervalMs: {
    type: 'integer',
    default: 5_000,
    min: 10,
    max: 3_600_000,
    description: 'How often members are told to heartbeat (group.consumer.heartbeat.interval.ms).',
  },
} as const satisfies SettingsSchema;

export const coordinatorDefaultPorts = { grpcPort: 9094, metricsPort: 9194 } as const;

export function startCoordinator(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'coordinator',
    settings: coordinatorSettings,
    defaultPorts: coordinatorDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    ...options,
    setup: async (context) => {
      const { config, logger, metrics, readiness, grpc } = context;
      if (config.groupConsumerHeartbeatIntervalMs >= config.groupConsumerSessionTimeoutMs) {
        throw new ConfigError(
          `invalid value for setting group.consumer.heartbeat.interval.ms: ` +
            `${config.groupConsumerHeartbeatIntervalMs}; it must be below ` +
            `group.consumer.session.timeout.ms (${config.groupConsumerSessionTimeoutMs})`,
        );
      }
      // Everything that needs the coordinator id (and so the bound port) starts after listen;
      // until then calls answer COORDINATOR_NOT_AVAILABLE.
      let runtime: CoordinatorRuntime | undefined;
      grpc.addService(
        CoordinatorServiceService,
        coordinatorHandlers(() => runtime),
      );
      readiness.require('metadata');

      context.afterListen(async ({ grpcPort }) => {
        const coordinatorId =
          config.coordinatorId === '' ? `${os.hostname()}:${grpcPort}` : config.coordinatorId;
        const shardsHolder: { shards?: ShardManager; maintenance?: GroupMaintenance } = {};
        const link = new ControllerLink(
          {
            coordinatorId,
            endpoints: [{ name: 'grpc', host: context.advertisedHost, port: grpcPort }],
            controllerAddresses: config.controllerAddresses,
            sessionTimeoutMs: config.coordinatorSessionTimeoutMs,
            onShards: (shards) => shardsHolder.shards?.onShards(shards),
          },
          logger.child({ component: 'controller-link' }),
        );
        const leaders = new PartitionLeaders(link);
        const shards = new ShardManager({
          coordinatorId,
          link,
          leaders,
          timeouts: {
            sessionTimeoutMs: config.groupConsumerSessionTimeoutMs,
            heartbeatIntervalMs: config.groupConsumerHeartbeatIntervalMs,
          },
          logger: logger.child({ component: 'shards' }),
          onLoaded: (shard) => shardsHolder.maintenance?.onShardLoaded(shard),
        });
        shardsHolder.shards = shards;
        const coordinatorMetrics = new CoordinatorMetrics(metrics, {
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
        });
        const groups = new GroupCoordinator({
          link,
          shards,
          leaders,
          metrics: coordinatorMetrics,
          logger: logger.child({ component: 'groups' }),
        });
        const producerIds = new ProducerIdManager({
          allocateBlock: () => link.allocateProducerIds(),
        });
        const maintenance = new GroupMaintenance(
          link,
          shards,
          groups,
          coordinatorMetrics,
          logger.child({ component: 'group-maintenance' }),
        );
        shardsHolder.maintenance = maintenance;
        runtime = { groups, shards, leaders, metadata: link.metadata, producerIds };
        link.start();
        maintenance.start();
        void link.firstSnapshotApplied.then(() => {
          readiness.satisfy('metadata');
          logger.info({ coordinatorId }, 'coordinator following the cluster metadata');
        });
        context.onShutdown(async () => {
          maintenance.stop();
          shards.stop();
          await link.shutDown();
        });
        context.onShutdownAfterDrain(async () => {
          link.stop();
          leaders.close();
        });
      });
    },
  });
}
