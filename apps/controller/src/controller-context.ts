import type { Logger } from '@spool/common';
import type { ClusterState } from './cluster-state';
import type { ControllerMetrics } from './controller-metrics';
import type { MetadataWriter } from './metadata-writer';

/** What the active controller's commands share. */
export interface ControllerContext {
  readonly state: ClusterState;
  readonly writer: MetadataWriter;
  readonly logger: Logger;
  readonly metrics: ControllerMetrics;
  readonly settings: {
    readonly brokerSessionTimeoutMs: number;
    readonly defaultReplicationFactor: number;
    readonly defaultPartitionCount: number;
    readonly coordinatorSessionTimeoutMs: number;
    /** Shards of the coordinators: partitions of __consumer_offsets. */
    readonly offsetsTopicPartitionCount: number;
  };
  /** Brokers that may lead or join an ISR now: registered, unfenced, heartbeating, not leaving. */
  liveBrokerIds(): Set<number>;
}
