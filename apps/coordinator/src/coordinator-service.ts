import { startService, type RunningService, type SettingsSchema } from '@spool/common';
import { protoDescriptorSetPath } from '@spool/protocol';

/**
 * The coordinator service: owns consumer groups (members, assignments, committed offsets) and hands out producer ids.
 */
export const coordinatorSettings = {} as const satisfies SettingsSchema;

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
    setup: async () => {},
    ...options,
  });
}
