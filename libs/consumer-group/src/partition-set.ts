import type { TopicPartitionRecord } from './group-records';

/**
 * A set of partitions grouped by topic (topic → partition numbers): the form every assignment
 * takes inside the state machine. Records and responses use sorted lists instead; the helpers
 * here convert between the two and do the set algebra reconciliation needs. A topic with no
 * partitions is never kept as an empty entry, so two equal sets have equal keys.
 */
export type PartitionSet = Map<string, Set<number>>;

export function partitionSetOf(list: Iterable<TopicPartitionRecord>): PartitionSet {
  const set: PartitionSet = new Map();
  for (const { topic, partition } of list) addPartition(set, topic, partition);
  return set;
}

/** Sorted by topic, then partition: the canonical order of records and responses. */
export function partitionList(set: PartitionSet): TopicPartitionRecord[] {
  const list: TopicPartitionRecord[] = [];
  for (const topic of [...set.keys()].sort()) {
    for (const partition of [...set.get(topic)!].sort((a, b) => a - b)) {
      list.push({ topic, partition });
    }
  }
  return list;
}

export function addPartition(set: PartitionSet, topic: string, partition: number): void {
  let partitions = set.get(topic);
  if (partitions === undefined) {
    partitions = new Set();
    set.set(topic, partitions);
  }
  partitions.add(partition);
}

export function removePartition(set: PartitionSet, topic: string, partition: number): void {
  const partitions = set.get(topic);
  if (partitions === undefined) return;
  partitions.delete(partition);
  if (partitions.size === 0) set.delete(topic);
}

export function hasPartition(set: PartitionSet, topic: string, partition: number): boolean {
  return set.get(topic)?.has(partition) ?? false;
}

export function partitionCount(set: PartitionSet): number {
  let count = 0;
  for (const partitions of set.values()) count += partitions.size;
  return count;
}

export function clonePartitionSet(set: PartitionSet): PartitionSet {
  const copy: PartitionSet = new Map();
  for (const [topic, partitions] of set) copy.set(topic, new Set(partitions));
  return copy;
}

/** Partitions of `left` that are also in `right`. */
export function intersectPartitions(left: PartitionSet, right: PartitionSet): PartitionSet {
  const result: PartitionSet = new Map();
  for (const [topic, partitions] of left) {
    for (const partition of partitions) {
      if (hasPartition(right, topic, partition)) addPartition(result, topic, partition);
    }
  }
  return result;
}

/** Partitions of `left` that are not in `right`. */
export function subtractPartitions(left: PartitionSet, right: PartitionSet): PartitionSet {
  const result: PartitionSet = new Map();
  for (const [topic, partitions] of left) {
    for (const partition of partitions) {
      if (!hasPartition(right, topic, partition)) addPartition(result, topic, partition);
    }
  }
  return result;
}

export function isPartitionSubset(subset: PartitionSet, superset: PartitionSet): boolean {
  for (const [topic, partitions] of subset) {
    for (const partition of partitions) {
      if (!hasPartition(superset, topic, partition)) return false;
    }
  }
  return true;
}

export function partitionSetsEqual(left: PartitionSet, right: PartitionSet): boolean {
  return partitionCount(left) === partitionCount(right) && isPartitionSubset(left, right);
}

export function partitionsIntersect(left: PartitionSet, right: PartitionSet): boolean {
  for (const [topic, partitions] of left) {
    for (const partition of partitions) {
      if (hasPartition(right, topic, partition)) return true;
    }
  }
  return false;
}
