import { startService, type RunningService, type SettingsSchema } from '@spool/common';
import { protoDescriptorSetPath } from '@spool/protocol';

/**
 * The storage-node service: hosts partition replicas on its own disk, takes produce requests for the partitions it leads and serves fetches through its data port.
 */
export const storageNodeSettings = {} as const satisfies SettingsSchema;

export const storageNodeDefaultPorts = { grpcPort: 9092, metricsPort: 9192 } as const;

export function startStorageNode(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'storage-node',
    settings: storageNodeSettings,
    defaultPorts: storageNodeDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    setup: async () => {},
    ...options,
  });
}
