/**
 * The order in which `spool bench partitions` grows its cluster: every --partitions size is
 * reached by creating topics, and each --create size is one of those creations, timed. A timed
 * creation goes in at the first idle size it fits under, so the partitions measured idle include
 * it (a create of 10,000 on the way to 20,000); untimed fillers make up the rest.
 */

export interface TopicToCreate {
  readonly name: string;
  readonly partitions: number;
}

export type PartitionsStep =
  | {
      readonly kind: 'create';
      /** timed: a --create size, measured; otherwise a filler up to the next idle size. */
      readonly timed: boolean;
      readonly partitions: number;
      /** existingPartitions: what the benchmark had created before this step. */
      readonly existingPartitions: number;
      /** topics: of at most topicPartitionsMax partitions each, created in one request. */
      readonly topics: readonly TopicToCreate[];
    }
  | { readonly kind: 'idle'; readonly partitions: number };

/**
 * The steps for ascending `createSizes` and `partitionSizes`; `unplaced` holds the create sizes
 * that fit under no idle size (the caller refuses them).
 */
export function planPartitionsSteps(
  createSizes: readonly number[],
  partitionSizes: readonly number[],
  topicPartitionsMax: number,
): { steps: PartitionsStep[]; unplaced: number[] } {
  const steps: PartitionsStep[] = [];
  const pending = [...createSizes];
  let total = 0;
  const create = (partitions: number, timed: boolean): void => {
    const index = steps.length;
    const topics: TopicToCreate[] = [];
    for (let left = partitions; left > 0; left -= topicPartitionsMax) {
      topics.push({
        name: `bench-partitions-${index}-${topics.length}`,
        partitions: Math.min(left, topicPartitionsMax),
      });
    }
    steps.push({ kind: 'create', timed, partitions, existingPartitions: total, topics });
    total += partitions;
  };
  for (const size of partitionSizes) {
    while (pending.length > 0 && total + pending[0]! <= size) create(pending.shift()!, true);
    // A create too big for this size waits for the next one.
    if (total < size) create(size - total, false);
    steps.push({ kind: 'idle', partitions: size });
  }
  return { steps, unplaced: pending };
}
