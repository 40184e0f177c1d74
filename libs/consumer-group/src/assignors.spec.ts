// Proves the two server-side assignors: `uniform` is balanced (members with the same subscription
// differ by at most one partition), sticky (a joining member takes about P/(N+1) partitions and
// nobody else moves) and idempotent; `range` gives each member of a topic a contiguous range in
// member-id order. Both assign every partition of a subscribed topic exactly once, and only to
// members subscribed to it. Random specs come from fast-check.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AssignmentMemberSpec, AssignmentSpec, TargetAssignment } from './assignor';
import { computeTargetAssignment } from './assignor';
import { partitionCount, partitionList, type PartitionSet } from './partition-set';
import type { AssignorName } from './group-settings';

function spec(
  topics: Record<string, number>,
  members: { id: string; topics: string[]; current?: PartitionSet }[],
): AssignmentSpec {
  return {
    topics: new Map(Object.entries(topics)),
    members: members.map((member): AssignmentMemberSpec => ({
      memberId: member.id,
      subscribedTopics: new Set(member.topics.filter((topic) => topic in topics)),
      currentAssignment: member.current ?? new Map(),
    })),
  };
}

function homogeneous(memberCount: number, topics: Record<string, number>): AssignmentSpec {
  return spec(
    topics,
    Array.from({ length: memberCount }, (_, index) => ({
      id: `member-${String(index).padStart(3, '0')}`,
      topics: Object.keys(topics),
    })),
  );
}

/** Every partition of a subscribed topic once, only to subscribers; throws otherwise. */
function checkComplete(input: AssignmentSpec, result: TargetAssignment): void {
  const owner = new Map<string, string>();
  for (const member of input.members) {
    const assignment = result.get(member.memberId);
    expect(assignment, `entry for ${member.memberId}`).toBeDefined();
    for (const { topic, partition } of partitionList(assignment!)) {
      expect(member.subscribedTopics.has(topic)).toBe(true);
      expect(partition).toBeLessThan(input.topics.get(topic)!);
      const key = `${topic}-${partition}`;
      expect(owner.has(key), `${key} assigned twice`).toBe(false);
      owner.set(key, member.memberId);
    }
  }
  for (const [topic, count] of input.topics) {
    if (!input.members.some((member) => member.subscribedTopics.has(topic))) continue;
    for (let partition = 0; partition < count; partition++) {
      expect(owner.has(`${topic}-${partition}`), `${topic}-${partition} assigned`).toBe(true);
    }
  }
}

function subscriptionKey(member: AssignmentMemberSpec): string {
  return [...member.subscribedTopics].sort().join(',');
}

/** Members with the same subscription differ by at most one partition. */
function checkBalanced(input: AssignmentSpec, result: TargetAssignment): void {
  const countsBySubscription = new Map<string, number[]>();
  for (const member of input.members) {
    const key = subscriptionKey(member);
    const counts = countsBySubscription.get(key) ?? [];
    counts.push(partitionCount(result.get(member.memberId)!));
    countsBySubscription.set(key, counts);
  }
  for (const [key, counts] of countsBySubscription) {
    expect(Math.max(...counts) - Math.min(...counts), `balance of [${key}]`).toBeLessThanOrEqual(1);
  }
}

function moved(before: TargetAssignment, after: TargetAssignment): number {
  let count = 0;
  for (const [memberId, assignment] of before) {
    const next = after.get(memberId);
    for (const { topic, partition } of partitionList(assignment)) {
      if (next === undefined || !next.get(topic)?.has(partition)) count++;
    }
  }
  return count;
}

const randomSpec = fc
  .record({
    topics: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.integer({ min: 1, max: 24 }), {
      minKeys: 1,
    }),
    members: fc.uniqueArray(
      fc.record({
        id: fc.string({ minLength: 1, maxLength: 4 }),
        topics: fc.subarray(['a', 'b', 'c', 'd', 'missing']),
      }),
      { minLength: 1, maxLength: 12, selector: (member) => member.id },
    ),
  })
  .map(({ topics, members }) => spec(topics, members));

describe('uniform assignor', () => {
  it('assigns everything once and balances homogeneous groups', () => {
    for (const [memberCount, topics] of [
      [1, { t: 6 }],
      [3, { t: 10 }],
      [4, { a: 3, b: 5, c: 1 }],
      [7, { t: 3 }],
      [50, { a: 500, b: 37 }],
    ] as const) {
      const input = homogeneous(memberCount, topics);
      const result = computeTargetAssignment('uniform', input);
      checkComplete(input, result);
      checkBalanced(input, result);
    }
  });

  it('spreads each topic across members when subscriptions are the same', () => {
    const input = homogeneous(3, { a: 3, b: 3 });
    const result = computeTargetAssignment('uniform', input);
    for (const assignment of result.values()) {
      expect(assignment.get('a')?.size).toBe(1);
      expect(assignment.get('b')?.size).toBe(1);
    }
  });

  it('moves only about P/(N+1) partitions when a member joins, and nothing else', () => {
    for (const [memberCount, partitions] of [
      [3, 12],
      [4, 100],
      [9, 64],
      [1, 7],
    ]) {
      const topics = { t: partitions };
      const input = homogeneous(memberCount, topics);
      const before = computeTargetAssignment('uniform', input);
      const grown = spec(topics, [
        ...input.members.map((member) => ({
          id: member.memberId,
          topics: ['t'],
          current: before.get(member.memberId)!,
        })),
        { id: 'newcomer', topics: ['t'] },
      ]);
      const after = computeTargetAssignment('uniform', grown);
      checkComplete(grown, after);
      checkBalanced(grown, after);
      const movedCount = moved(before, after);
      expect(movedCount).toBe(partitionCount(after.get('newcomer')!));
      expect(movedCount).toBeLessThanOrEqual(Math.ceil(partitions / (memberCount + 1)));
    }
  });

  it("moves only the departed member's partitions when a member leaves", () => {
    const topics = { a: 20, b: 13 };
    const input = homogeneous(5, topics);
    const before = computeTargetAssignment('uniform', input);
    const remaining = spec(
      topics,
      input.members.slice(1).map((member) => ({
        id: member.memberId,
        topics: ['a', 'b'],
        current: before.get(member.memberId)!,
      })),
    );
    const after = computeTargetAssignment('uniform', remaining);
    checkBalanced(remaining, after);
    before.delete(input.members[0]!.memberId);
    expect(moved(before, after)).toBe(0);
  });

  it('balances members with different subscriptions among each subscription', () => {
    fc.assert(
      fc.property(randomSpec, (input) => {
        const result = computeTargetAssignment('uniform', input);
        checkComplete(input, result);
        checkBalanced(input, result);
      }),
      { numRuns: 300 },
    );
  });

  it('is idempotent: its own output as the current assignment moves nothing', () => {
    fc.assert(
      fc.property(randomSpec, (input) => {
        const first = computeTargetAssignment('uniform', input);
        const again = computeTargetAssignment('uniform', {
          topics: input.topics,
          members: input.members.map((member) => ({
            ...member,
            currentAssignment: first.get(member.memberId)!,
          })),
        });
        expect(moved(first, again)).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('drops current partitions of topics a member no longer subscribes to or that shrank', () => {
    const input = spec({ a: 2 }, [
      {
        id: 'x',
        topics: ['a'],
        current: new Map([
          ['a', new Set([0, 1, 5])],
          ['gone', new Set([0])],
        ]),
      },
    ]);
    expect(partitionList(computeTargetAssignment('uniform', input).get('x')!)).toEqual([
      { topic: 'a', partition: 0 },
      { topic: 'a', partition: 1 },
    ]);
  });
});

describe('range assignor', () => {
  it("matches Kafka's range assignor: contiguous ranges in member-id order, extras first", () => {
    const input = spec({ t0: 3, t1: 3 }, [
      { id: 'c1', topics: ['t0', 't1'] },
      { id: 'c0', topics: ['t0', 't1'] },
    ]);
    const result = computeTargetAssignment('range', input);
    expect(partitionList(result.get('c0')!).map((tp) => `${tp.topic}-${tp.partition}`)).toEqual([
      't0-0',
      't0-1',
      't1-0',
      't1-1',
    ]);
    expect(partitionList(result.get('c1')!).map((tp) => `${tp.topic}-${tp.partition}`)).toEqual([
      't0-2',
      't1-2',
    ]);
  });

  it('assigns a topic only among its subscribers, balanced per topic', () => {
    fc.assert(
      fc.property(randomSpec, (input) => {
        const result = computeTargetAssignment('range', input);
        checkComplete(input, result);
        for (const topic of input.topics.keys()) {
          const counts = input.members
            .filter((member) => member.subscribedTopics.has(topic))
            .map((member) => result.get(member.memberId)!.get(topic)?.size ?? 0);
          if (counts.length === 0) continue;
          expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('gives members without subscribed topics an empty assignment', () => {
    for (const assignor of ['range', 'uniform'] as AssignorName[]) {
      const result = computeTargetAssignment(assignor, spec({ t: 2 }, [{ id: 'x', topics: [] }]));
      expect(result.get('x')!.size).toBe(0);
    }
  });
});
