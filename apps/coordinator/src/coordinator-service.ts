import { startService, type RunningService, type SettingsSchema } from '@spool/common';
import { protoDescriptorSetPath } from '@spool/protocol';
import { CoordinatorMetrics } from './coordinator-metrics';

/**
 * The coordinator service: owns consumer groups (members, assignments, committed offsets) and hands out producer ids.
 */
export const coordinatorSettings = {
  metricsPerPartition: {
    type: 'boolean',
    default: true,
    description:
      'Export consumer lag per partition; switch off with very many partitions (sum and max stay).',
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
    setup: async (context) => {
      // Registered at start-up so every name is in the scrape before the first group exists.
      new CoordinatorMetrics(context.metrics, {
        metricsPerPartition: context.config.metricsPerPartition,
      });
    },
    ...options,
  });
}
