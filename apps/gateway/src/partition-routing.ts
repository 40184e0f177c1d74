/**
 * Where a partition's requests go, from the gateway's copy of the metadata: its leader, or the
 * reason there is none. Pure functions over the metadata cache, so the routing rules are tested
 * without a cluster.
 */
import type { ClusterMetadataCache } from '@spool/protocol';
import { SpoolError } from '@spool/common';

export interface TopicPartitionKey {
  readonly topic: string;
  readonly partition: number;
}

export type PartitionRoute =
  | { readonly kind: 'leader'; readonly leaderId: number; readonly leaderEpoch: number }
  | { readonly kind: 'failed'; readonly error: SpoolError };

/** Kafka's name for a partition in logs and messages: `orders-3`. */
export function partitionName(key: TopicPartitionKey): string {
  return `${key.topic}-${key.partition}`;
}

/** The leader of a partition and the listener the request needs on it. */
export function routeOf(
  metadata: ClusterMetadataCache,
  key: TopicPartitionKey,
  endpointName: 'grpc' | 'data',
): PartitionRoute {
  const topic = metadata.topics.get(key.topic);
  if (topic === undefined) {
    return {
      kind: 'failed',
      error: new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${key.topic}" does not exist`),
    };
  }
  // O(1): a 10,000-partition topic is not scanned per produced batch.
  const partition = metadata.partition(key.topic, key.partition);
  if (partition === undefined) {
    return {
      kind: 'failed',
      error: new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `partition ${key.partition} of topic "${key.topic}" does not exist; the topic has ` +
          `${topic.partitions.length} partitions`,
      ),
    };
  }
  if (partition.offline || partition.leaderId < 0) {
    return {
      kind: 'failed',
      error: new SpoolError(
        'LEADER_NOT_AVAILABLE',
        `${partitionName(key)} has no live leader right now`,
      ),
    };
  }
  if (metadata.endpoint(partition.leaderId, endpointName) === undefined) {
    return {
      kind: 'failed',
      error: new SpoolError(
        'LEADER_NOT_AVAILABLE',
        `the ${endpointName} endpoint of broker ${partition.leaderId}, leader of ` +
          `${partitionName(key)}, is not known`,
      ),
    };
  }
  return { kind: 'leader', leaderId: partition.leaderId, leaderEpoch: partition.leaderEpoch };
}

/** Items grouped by their leader, each group in the items' order. */
export function groupByLeader<Item>(
  items: readonly Item[],
  leaderOf: (item: Item) => number,
): Map<number, Item[]> {
  const groups = new Map<number, Item[]>();
  for (const item of items) {
    const leaderId = leaderOf(item);
    const group = groups.get(leaderId);
    if (group === undefined) groups.set(leaderId, [item]);
    else group.push(item);
  }
  return groups;
}

/**
 * The positions of items that name a partition an earlier item already named. A request may
 * name each partition once: two appends to one partition in one request would race each other.
 */
export function duplicatePositions(items: readonly TopicPartitionKey[]): Set<number> {
  const seen = new Set<string>();
  const duplicates = new Set<number>();
  items.forEach((item, position) => {
    const key = `${item.partition}:${item.topic}`;
    if (seen.has(key)) duplicates.add(position);
    seen.add(key);
  });
  return duplicates;
}
