/**
 * Which live coordinator owns each __consumer_offsets partition (shard). The assignment is
 * balanced (shard counts differ by at most one) and sticky: a shard moves only when its owner
 * left or owns more than its share, because every move makes the new owner replay the shard
 * and the group's members wait meanwhile.
 *
 * 1. Shards whose owner is not live (or that have no record yet) are free.
 * 2. Each live coordinator's share is floor(shards / coordinators); the coordinators that own
 *    the most already get the `shards % coordinators` extra ones, so fewer shards move.
 * 3. A coordinator above its share frees its highest-numbered shards.
 * 4. Free shards go, lowest first, to the coordinator furthest below its share.
 * 5. Every shard whose owner changed gets the next shard epoch, which fences what the previous
 *    owner may still write.
 */
export interface ShardOwnership {
  readonly partition: number;
  /** Empty when no live coordinator owns the shard. */
  readonly coordinatorId: string;
  readonly shardEpoch: number;
}

/** The shards whose owner changes, with their new owner and epoch; nothing when none does. */
export function reassignShards(
  current: ReadonlyMap<number, ShardOwnership>,
  shardCount: number,
  liveCoordinators: readonly string[],
): ShardOwnership[] {
  const live = [...new Set(liveCoordinators)].sort();
  const owned = new Map<string, number[]>(live.map((id) => [id, []]));
  const free: number[] = [];
  // Point 1.
  for (let partition = 0; partition < shardCount; partition++) {
    const owner = current.get(partition)?.coordinatorId ?? '';
    const shards = owned.get(owner);
    if (shards === undefined) free.push(partition);
    else shards.push(partition);
  }
  if (live.length > 0) {
    // Point 2.
    const base = Math.floor(shardCount / live.length);
    let extra = shardCount % live.length;
    const share = new Map<string, number>();
    const byOwnedDescending = [...live].sort(
      (left, right) =>
        owned.get(right)!.length - owned.get(left)!.length || left.localeCompare(right),
    );
    for (const id of byOwnedDescending) {
      share.set(id, base + (extra > 0 ? 1 : 0));
      if (extra > 0) extra--;
    }
    // Point 3.
    for (const id of live) {
      const shards = owned.get(id)!.sort((left, right) => left - right);
      while (shards.length > share.get(id)!) free.push(shards.pop()!);
    }
    // Point 4.
    free.sort((left, right) => left - right);
    for (const partition of free) {
      let target = live[0]!;
      for (const id of live) {
        const room = share.get(id)! - owned.get(id)!.length;
        if (room > share.get(target)! - owned.get(target)!.length) target = id;
      }
      owned.get(target)!.push(partition);
    }
  }
  const ownerOf = new Map<number, string>();
  for (const [id, shards] of owned) for (const partition of shards) ownerOf.set(partition, id);
  // Point 5.
  const changes: ShardOwnership[] = [];
  for (let partition = 0; partition < shardCount; partition++) {
    const before = current.get(partition);
    const owner = ownerOf.get(partition) ?? '';
    if (before !== undefined && before.coordinatorId === owner) continue;
    changes.push({ partition, coordinatorId: owner, shardEpoch: (before?.shardEpoch ?? 0) + 1 });
  }
  return changes;
}
