import type { RebalanceListener } from './consumer-group-session';
import type { ConsumedMessage } from './message';

/** What applications pass to and receive from the consumer (KafkaJS's shapes). */

export interface ConsumerSubscription extends RebalanceListener {
  readonly topics?: readonly (string | RegExp)[];
  readonly topic?: string | RegExp;
  /**
   * Start at the log start offset instead of the high watermark (KafkaJS's fromBeginning); in a
   * group, only where the group has no committed offset.
   */
  readonly fromBeginning?: boolean;
}

export interface PartitionOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

export interface AssignedPartition {
  readonly topic: string;
  readonly partition: number;
  /** Where to start; autoOffsetReset decides if absent. */
  readonly offset?: bigint;
}

/** KafkaJS's TopicPartitions for pause and resume: every partition of the topic if absent. */
export interface PartitionSelection {
  readonly topic: string;
  readonly partitions?: readonly number[];
}

export interface EachMessagePayload {
  readonly topic: string;
  readonly partition: number;
  readonly message: ConsumedMessage;
}

export interface ConsumerBatch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: bigint;
  readonly messages: readonly ConsumedMessage[];
  firstOffset(): bigint | null;
  lastOffset(): bigint;
}

export interface EachBatchPayload {
  readonly batch: ConsumerBatch;
  /** False once stop or close began. */
  isRunning(): boolean;
  /** True once a seek, pause or reset made this batch's partition move elsewhere. */
  isStale(): boolean;
}

export interface ConsumerRunConfig {
  readonly eachMessage?: (payload: EachMessagePayload) => Promise<void>;
  readonly eachBatch?: (payload: EachBatchPayload) => Promise<void>;
}
