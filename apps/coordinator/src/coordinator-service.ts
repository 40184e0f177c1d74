import * as os from 'node:os';
import { ConfigError, startService, type RunningService, type SettingsSchema } from '@spool/common';
import { CoordinatorServiceService, protoDescriptorSetPath } from '@spool/protocol';
import { coordinatorHandlers, type CoordinatorRuntime } from './coordinator-rpc';
import { CoordinatorParts } from './coordinator-runtime';
import { checkpointIntervalEntriesDefault } from './shard-manager';

/**
 * The coordinator service: owns consumer groups (members, assignments, committed offsets) and
 * hands out producer ids. The controller gives each coordinator a share of the
 * __consumer_offsets partitions (shards); a coordinator serves the groups that hash to its
 * shards, keeping their state as records in those partitions.
 */
export const coordinatorSettings = {
  metricsPerPartition: {
    type: 'boolean',
    default: true,
    description:
      'Export consumer lag per partition; switch off with very many partitions (sum and max stay).',
  },
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
  offsetsCheckpointIntervalRecords: {
    type: 'integer',
    default: checkpointIntervalEntriesDefault,
    min: 10,
    max: 100_000_000,
    description:
      'Records written to a __consumer_offsets partition before its coordinator checkpoints it ' +
      "(rewrites the groups' live state and deletes the records before it), so a takeover " +
      'replays only the live state and what followed.',
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
        const parts = new CoordinatorParts({
          coordinatorId,
          endpoints: [{ name: 'grpc', host: context.advertisedHost, port: grpcPort }],
          controllerAddresses: config.controllerAddresses,
          coordinatorSessionTimeoutMs: config.coordinatorSessionTimeoutMs,
          timeouts: {
            sessionTimeoutMs: config.groupConsumerSessionTimeoutMs,
            heartbeatIntervalMs: config.groupConsumerHeartbeatIntervalMs,
          },
          logger,
          metrics,
          metricsPerPartition: config.metricsPerPartition,
          offsetsCheckpointIntervalRecords: config.offsetsCheckpointIntervalRecords,
          transportSecurity: context.transportSecurity,
        });
        runtime = parts.runtime;
        parts.start();
        void parts.link.firstSnapshotApplied.then(() => {
          readiness.satisfy('metadata');
          logger.info({ coordinatorId }, 'coordinator following the cluster metadata');
        });
        context.onShutdown(() => parts.shutDown());
        context.onShutdownAfterDrain(async () => parts.close());
      });
    },
  });
}
