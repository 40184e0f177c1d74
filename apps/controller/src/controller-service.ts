import { startService, type RunningService, type SettingsSchema } from '@spool/common';
import { protoDescriptorSetPath } from '@spool/protocol';

/**
 * The controller service: the cluster's brain. It owns brokers, topics, partitions, leaders, ISR and epochs in the metadata store and pushes every change to the other services.
 */
export const controllerSettings = {} as const satisfies SettingsSchema;

export const controllerDefaultPorts = { grpcPort: 9093, metricsPort: 9193 } as const;

export function startController(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'controller',
    settings: controllerSettings,
    defaultPorts: controllerDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    setup: async () => {},
    ...options,
  });
}
