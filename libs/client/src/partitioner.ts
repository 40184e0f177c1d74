import { partitionForKey } from './murmur2';
import type { TopicPartitions } from './topic-metadata';

/**
 * Kafka's default partitioner. A record with a key goes to toPositive(murmur2(key)) % partitions,
 * so a key lands on the same partition number as in Kafka. Records without a key stick to one
 * partition per topic until a batch of that partition is closed for sending, then move to another
 * partition chosen at random among those with a leader (KIP-480's sticky partitioner): batches
 * fill up instead of every record opening a batch of its own on the next partition.
 */
export class DefaultPartitioner {
  private readonly stickyPartitionByTopic = new Map<string, number>();
  private readonly partitionsByTopic = new Map<string, TopicPartitions>();

  constructor(private readonly random: () => number = Math.random) {}

  partition(key: Buffer | null, partitions: TopicPartitions): number {
    if (key !== null) return partitionForKey(key, partitions.partitionCount);
    this.partitionsByTopic.set(partitions.topic, partitions);
    const sticky = this.stickyPartitionByTopic.get(partitions.topic);
    if (sticky !== undefined && sticky < partitions.partitionCount) return sticky;
    return this.nextStickyPartition(partitions, sticky);
  }

  /**
   * A batch of `partition` was closed (full, lingered long enough, or flushed) and is on its way:
   * if keyless records were sticking to that partition, they move on.
   */
  onBatchClosed(topic: string, partition: number): void {
    if (this.stickyPartitionByTopic.get(topic) !== partition) return;
    const partitions = this.partitionsByTopic.get(topic);
    if (partitions !== undefined) this.nextStickyPartition(partitions, partition);
  }

  /** Kafka's StickyPartitionCache.nextPartition: never the previous one if there is a choice. */
  private nextStickyPartition(partitions: TopicPartitions, previous: number | undefined): number {
    const candidates = partitions.availablePartitions;
    let next: number;
    if (candidates.length === 0) {
      next = this.randomIndex(partitions.partitionCount);
    } else if (candidates.length === 1) {
      next = candidates[0]!;
    } else {
      const others = candidates.filter((candidate) => candidate !== previous);
      next = others[this.randomIndex(others.length)]!;
    }
    this.stickyPartitionByTopic.set(partitions.topic, next);
    return next;
  }

  private randomIndex(length: number): number {
    return Math.min(length - 1, Math.floor(this.random() * length));
  }
}
