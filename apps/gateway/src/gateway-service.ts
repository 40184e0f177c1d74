import { startService, type RunningService, type SettingsSchema } from '@spool/common';
import { protoDescriptorSetPath } from '@spool/protocol';

/**
 * The gateway service: the stateless front door: it routes produce and fetch requests to partition leaders and fronts the admin and group calls.
 */
export const gatewaySettings = {} as const satisfies SettingsSchema;

export const gatewayDefaultPorts = { grpcPort: 9090, metricsPort: 9190 } as const;

export function startGateway(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'gateway',
    settings: gatewaySettings,
    defaultPorts: gatewayDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    setup: async () => {},
    ...options,
  });
}
