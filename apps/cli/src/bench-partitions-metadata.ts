import type { ClusterMetadataCache, PartitionMetadata } from '@spool/protocol';
import type { TopicToCreate } from './bench-partitions-plan';

/**
 * The conditions `spool bench partitions` waits for, asked of the controller's metadata as a
 * follower holds it (bench-partitions-cluster.ts's MetadataWatch). Pure reads of the cache.
 */

export function hasLeader(partition: PartitionMetadata): boolean {
  return !partition.offline && partition.leaderId >= 0;
}

/** A leader and every replica in the ISR: what `spool dev` calls in sync. */
export function isInSync(partition: PartitionMetadata): boolean {
  return (
    hasLeader(partition) && partition.replicas.every((replica) => partition.isr.includes(replica))
  );
}

/** Every topic listed is in the metadata with all its partitions, each passing `test`. */
export function topicsPass(
  metadata: ClusterMetadataCache,
  topics: readonly TopicToCreate[],
  test: (partition: PartitionMetadata) => boolean,
): boolean {
  return topics.every((expected) => {
    const topic = metadata.topics.get(expected.name);
    return (
      topic !== undefined &&
      topic.partitions.length === expected.partitions &&
      topic.partitions.every(test)
    );
  });
}

/** Every broker from 0 to count - 1 registered and alive, every partition of every topic in sync. */
export function clusterInSync(metadata: ClusterMetadataCache, brokerCount: number): boolean {
  for (let brokerId = 0; brokerId < brokerCount; brokerId++) {
    if (metadata.brokers.get(brokerId)?.state !== 'ALIVE') return false;
  }
  for (const topic of metadata.topics.values()) {
    if (!topic.partitions.every(isInSync)) return false;
  }
  return true;
}

/** How many partition replicas the metadata assigns to `brokerId`. */
export function replicasAssigned(metadata: ClusterMetadataCache, brokerId: number): number {
  let count = 0;
  for (const topic of metadata.topics.values()) {
    for (const partition of topic.partitions) if (partition.replicas.includes(brokerId)) count++;
  }
  return count;
}

export function partitionCount(metadata: ClusterMetadataCache): number {
  let count = 0;
  for (const topic of metadata.topics.values()) count += topic.partitions.length;
  return count;
}

/**
 * The broker registered again (an epoch above `epochBefore`), alive, and in the ISR of every
 * partition it holds a replica of: a restarted node fully back.
 */
export function brokerBackInSync(
  metadata: ClusterMetadataCache,
  brokerId: number,
  epochBefore: bigint,
): boolean {
  const broker = metadata.brokers.get(brokerId);
  if (broker === undefined || broker.state !== 'ALIVE' || broker.brokerEpoch <= epochBefore) {
    return false;
  }
  for (const topic of metadata.topics.values()) {
    for (const partition of topic.partitions) {
      if (partition.replicas.includes(brokerId) && !partition.isr.includes(brokerId)) return false;
    }
  }
  return true;
}

/** The storage node that leads the most partitions, and those partitions by topic. */
export function busiestLeader(
  metadata: ClusterMetadataCache,
  brokerCount: number,
): { brokerId: number; led: Map<string, Set<number>>; count: number } {
  const led = Array.from({ length: brokerCount }, () => new Map<string, Set<number>>());
  const counts = new Array<number>(brokerCount).fill(0);
  for (const topic of metadata.topics.values()) {
    for (const partition of topic.partitions) {
      const byTopic = led[partition.leaderId];
      if (byTopic === undefined || partition.offline) continue;
      let numbers = byTopic.get(topic.name);
      if (numbers === undefined) byTopic.set(topic.name, (numbers = new Set()));
      numbers.add(partition.partition);
      counts[partition.leaderId]! += 1;
    }
  }
  const brokerId = counts.indexOf(Math.max(...counts));
  return { brokerId, led: led[brokerId]!, count: counts[brokerId]! };
}

/** What keeps the cluster from being in sync, in one line: brokers, then a few partitions. */
export function describeOutOfSync(
  metadata: ClusterMetadataCache,
  brokerCount: number,
  partitionsShownMax = 3,
): string {
  const parts: string[] = [];
  for (let brokerId = 0; brokerId < brokerCount; brokerId++) {
    const state = metadata.brokers.get(brokerId)?.state ?? 'not registered';
    if (state !== 'ALIVE') parts.push(`broker ${brokerId} ${state}`);
  }
  const outOfSync: string[] = [];
  let total = 0;
  for (const topic of metadata.topics.values()) {
    for (const partition of topic.partitions) {
      total += 1;
      if (isInSync(partition)) continue;
      outOfSync.push(
        `${topic.name}-${partition.partition} (leader ${partition.leaderId}, replicas ` +
          `${partition.replicas.join(',')}, isr ${partition.isr.join(',') || 'none'})`,
      );
    }
  }
  if (outOfSync.length > 0) {
    parts.push(
      `${outOfSync.length} of ${total} partitions out of sync, such as ` +
        outOfSync.slice(0, partitionsShownMax).join(', '),
    );
  }
  return parts.join('; ');
}
