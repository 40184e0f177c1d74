import type { ReplicaManager } from '../replica/replica-manager';
import type { StorageMetrics } from '../storage-metrics';

/** What the storage service's handlers use (storage-rpc.ts). */
export interface StorageHandlerDependencies {
  readonly replicas: () => ReplicaManager;
  readonly topicConfig: (topic: string, name: string) => string | undefined;
  readonly metrics: StorageMetrics;
  /**
   * The slow-disk test hook's (given only when the fault suite turns it on, see
   * slow-disk-test-hook.ts): it runs before each leader append.
   */
  readonly beforeLogAppend?: () => void;
}
