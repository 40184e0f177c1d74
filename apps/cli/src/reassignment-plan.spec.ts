// Proves the reassignment plan file and its generation: every malformed plan is refused with a
// message naming the file and the entry; generated plans spread replicas evenly onto a new
// broker while moving as little as possible, keep each partition on distinct racks, spread
// preferred leaders, and in evacuate mode move only the replicas of the leaving broker.
import { describe, expect, it } from 'vitest';
import {
  checkPlanAgainstCluster,
  generatePlan,
  parsePlan,
  type PlanEntry,
} from './reassignment-plan';

const plan = (partitions: unknown) => JSON.stringify({ version: 1, partitions });

describe('parsePlan', () => {
  it('reads a plan in Kafka format', () => {
    expect(parsePlan(plan([{ topic: 't', partition: 0, replicas: [1, 2] }]), 'p.json')).toEqual({
      version: 1,
      partitions: [{ topic: 't', partition: 0, replicas: [1, 2] }],
    });
  });

  it.each([
    ['{', /plan p.json is not JSON/],
    ['[]', /must be a JSON object/],
    [JSON.stringify({ version: 2, partitions: [] }), /version 2; only 1/],
    [plan([]), /non-empty "partitions"/],
    [plan([{ partition: 0, replicas: [1] }]), /partitions\[0\] has no "topic"/],
    [
      plan([{ topic: 't', partition: -1, replicas: [1] }]),
      /partitions\[0\] \(t\) has no "partition"/,
    ],
    [plan([{ topic: 't', partition: 0, replicas: [] }]), /partitions\[0\] \(t-0\) has an empty/],
    [plan([{ topic: 't', partition: 0, replicas: ['a'] }]), /\(t-0\) has no "replicas" list/],
    [plan([{ topic: 't', partition: 0, replicas: [1, 1] }]), /\(t-0\) names broker 1 twice/],
    [
      plan([
        { topic: 't', partition: 0, replicas: [1] },
        { topic: 't', partition: 0, replicas: [2] },
      ]),
      /partitions\[1\] \(t-0\) repeats partitions\[0\]/,
    ],
  ])('refuses %s', (text, message) => {
    expect(() => parsePlan(text, 'p.json')).toThrow(message);
    expect(() => parsePlan(text, 'p.json')).toThrow(
      expect.objectContaining({ code: 'INVALID_REPLICA_ASSIGNMENT' }),
    );
  });

  it('names an unknown topic, partition or broker', () => {
    const counts = new Map([['t', 2]]);
    const check = (entry: PlanEntry) => () =>
      checkPlanAgainstCluster({ version: 1, partitions: [entry] }, 'p.json', counts, [0, 1, 2]);
    expect(check({ topic: 'u', partition: 0, replicas: [0] })).toThrow(
      'plan p.json, partitions[0] (u-0): topic "u" does not exist',
    );
    expect(check({ topic: 't', partition: 2, replicas: [0] })).toThrow(/has 2 partitions/);
    expect(check({ topic: 't', partition: 1, replicas: [0, 7] })).toThrow(
      /broker 7 is not in the cluster \(brokers 0,1,2\)/,
    );
    expect(check({ topic: 't', partition: 1, replicas: [0, 2] })).not.toThrow();
  });
});

/** Replicas per broker once `plan` is applied to `current`. */
function loads(current: readonly PlanEntry[], moved: readonly PlanEntry[]): Map<number, number> {
  const result = new Map<number, number>();
  for (const entry of current) {
    const next = moved.find((m) => m.topic === entry.topic && m.partition === entry.partition);
    for (const id of (next ?? entry).replicas) result.set(id, (result.get(id) ?? 0) + 1);
  }
  return result;
}

describe('generatePlan', () => {
  const threeBrokers: PlanEntry[] = [
    { topic: 't', partition: 0, replicas: [0, 1, 2] },
    { topic: 't', partition: 1, replicas: [1, 2, 0] },
    { topic: 't', partition: 2, replicas: [2, 0, 1] },
    { topic: 't', partition: 3, replicas: [0, 2, 1] },
  ];
  const brokers = [0, 1, 2, 3].map((id) => ({ id, rack: '' }));

  it('spreads replicas evenly onto a new broker, moving one replica per changed partition', () => {
    const generated = generatePlan(threeBrokers, brokers, { kind: 'balance' });
    expect([...loads(threeBrokers, generated.partitions).values()]).toEqual([3, 3, 3, 3]);
    expect(generated.partitions).toHaveLength(3);
    for (const entry of generated.partitions) {
      const before = threeBrokers.find((e) => e.partition === entry.partition)!;
      expect(entry.replicas.filter((id) => !before.replicas.includes(id))).toEqual([3]);
      expect(new Set(entry.replicas).size).toBe(3);
    }
  });

  it('leaves a balanced assignment alone', () => {
    const generated = generatePlan(threeBrokers, brokers.slice(0, 3), { kind: 'balance' });
    expect(generated.partitions).toEqual([]);
  });

  it('keeps partitions on distinct racks', () => {
    const racked = [
      { id: 0, rack: 'a' },
      { id: 1, rack: 'a' },
      { id: 2, rack: 'b' },
      { id: 3, rack: 'b' },
    ];
    const current = [
      { topic: 't', partition: 0, replicas: [0, 4] },
      { topic: 't', partition: 1, replicas: [2, 4] },
    ];
    const generated = generatePlan(current, racked, { kind: 'evacuate', leavingBrokerId: 4 });
    for (const entry of generated.partitions) {
      const racks = entry.replicas.map((id) => racked.find((b) => b.id === id)!.rack);
      expect(new Set(racks).size).toBe(2);
    }
  });

  it('in evacuate mode moves only the leaving broker replicas', () => {
    const generated = generatePlan(
      threeBrokers,
      [0, 1, 3].map((id) => ({ id, rack: '' })),
      { kind: 'evacuate', leavingBrokerId: 2 },
    );
    expect(generated.partitions).toHaveLength(4);
    for (const entry of generated.partitions) {
      const before = threeBrokers.find((e) => e.partition === entry.partition)!;
      expect(entry.replicas).not.toContain(2);
      expect([...entry.replicas].sort()).toEqual(
        [...before.replicas.filter((id) => id !== 2), 3].sort(),
      );
    }
  });

  it('in evacuate mode keeps replicas on brokers outside the list', () => {
    const generated = generatePlan(
      [{ topic: 't', partition: 0, replicas: [5, 2, 0] }],
      [0, 1, 3].map((id) => ({ id, rack: '' })),
      { kind: 'evacuate', leavingBrokerId: 2 },
    );
    expect(generated.partitions).toEqual([{ topic: 't', partition: 0, replicas: [5, 0, 1] }]);
  });

  it('refuses more replicas than brokers', () => {
    expect(() => generatePlan(threeBrokers, brokers.slice(0, 2), { kind: 'balance' })).toThrow(
      /t-0 has 3 replicas; 2 brokers cannot hold them/,
    );
  });
});
