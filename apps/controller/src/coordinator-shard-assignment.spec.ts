// Proves the shard assignment is balanced, moves as few shards as possible when coordinators
// come and go, and bumps the shard epoch of exactly the shards that changed owner.
import { describe, expect, it } from 'vitest';
import { reassignShards, type ShardOwnership } from './coordinator-shard-assignment';

function apply(
  current: Map<number, ShardOwnership>,
  changes: readonly ShardOwnership[],
): Map<number, ShardOwnership> {
  const next = new Map(current);
  for (const change of changes) next.set(change.partition, change);
  return next;
}

function counts(assignment: Map<number, ShardOwnership>): Record<string, number> {
  const result: Record<string, number> = {};
  for (const shard of assignment.values())
    result[shard.coordinatorId] = (result[shard.coordinatorId] ?? 0) + 1;
  return result;
}

describe('reassignShards', () => {
  it('gives every shard to the only coordinator, at epoch 1', () => {
    const changes = reassignShards(new Map(), 50, ['a']);
    expect(changes).toHaveLength(50);
    expect(changes.every((shard) => shard.coordinatorId === 'a' && shard.shardEpoch === 1)).toBe(
      true,
    );
  });

  it('moves only the new share to a joining coordinator and keeps the rest', () => {
    const one = apply(new Map(), reassignShards(new Map(), 50, ['a']));
    const changes = reassignShards(one, 50, ['a', 'b']);
    expect(changes).toHaveLength(25);
    expect(changes.every((shard) => shard.coordinatorId === 'b' && shard.shardEpoch === 2)).toBe(
      true,
    );
    const two = apply(one, changes);
    expect(counts(two)).toEqual({ a: 25, b: 25 });
    expect(reassignShards(two, 50, ['b', 'a'])).toEqual([]);
  });

  it('hands a leaving coordinator’s shards to the others, balanced, touching nothing else', () => {
    let assignment = apply(new Map(), reassignShards(new Map(), 50, ['a', 'b', 'c']));
    expect(Object.values(counts(assignment)).sort()).toEqual([16, 17, 17]);
    const ownedByC = [...assignment.values()].filter((shard) => shard.coordinatorId === 'c');
    const changes = reassignShards(assignment, 50, ['a', 'b']);
    expect(changes.map((shard) => shard.partition).sort((l, r) => l - r)).toEqual(
      ownedByC.map((shard) => shard.partition).sort((l, r) => l - r),
    );
    assignment = apply(assignment, changes);
    expect(counts(assignment)).toEqual({ a: 25, b: 25 });
  });

  it('leaves shards unowned, epoch bumped, when no coordinator is live', () => {
    const one = apply(new Map(), reassignShards(new Map(), 4, ['a']));
    const changes = reassignShards(one, 4, []);
    expect(changes).toEqual(
      [0, 1, 2, 3].map((partition) => ({
        partition,
        coordinatorId: '',
        shardEpoch: 2,
      })),
    );
    expect(reassignShards(apply(one, changes), 4, [])).toEqual([]);
  });
});
