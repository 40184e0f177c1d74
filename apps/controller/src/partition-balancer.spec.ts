// Proves the balancer's plan (partition-balancer.ts, rules 1-4) on synchronous views: new brokers
// receive replicas until the loads are within the tolerance, by bytes rather than counts; every
// move keeps the partition's rack count; moving partitions, the concurrency bound and the byte
// budget limit a round; a decommissioned broker is emptied and a fenced one left alone; once
// replicas are balanced, preferred leaders are spread by reordering replica lists; and replaying
// the plan round after round converges without undoing a move.
import { describe, expect, it } from 'vitest';
import {
  brokerLoads,
  planBalance,
  type BalancerBroker,
  type BalancerMove,
  type BalancerPartition,
} from './partition-balancer';

function broker(brokerId: number, options: Partial<BalancerBroker> = {}): BalancerBroker {
  return { brokerId, rack: '', live: true, decommissioned: false, ...options };
}

function partition(
  index: number,
  replicas: number[],
  sizeBytes = 1_000,
  options: Partial<BalancerPartition> = {},
): BalancerPartition {
  return {
    topic: 't',
    partition: index,
    replicas,
    isr: replicas,
    sizeBytes,
    moving: false,
    ...options,
  };
}

const wide = { movesMax: 1_000, bytesMax: Number.MAX_SAFE_INTEGER, toleranceRatio: 1.1 };

/** Applies each round's moves as completed reassignments until the plan is empty. */
function settle(
  brokers: readonly BalancerBroker[],
  start: BalancerPartition[],
  limits = wide,
): { partitions: BalancerPartition[]; rounds: number; moves: BalancerMove[] } {
  let partitions = start;
  const all: BalancerMove[] = [];
  for (let round = 1; round <= 50; round++) {
    const moves = planBalance(brokers, partitions, limits);
    if (moves.length === 0) return { partitions, rounds: round, moves: all };
    all.push(...moves);
    partitions = partitions.map((current) => {
      const move = moves.find((candidate) => candidate.partition === current.partition);
      return move === undefined
        ? current
        : { ...current, replicas: [...move.replicas], isr: [...move.replicas] };
    });
  }
  throw new Error('the plan did not converge in 50 rounds');
}

function loadRatio(brokers: readonly BalancerBroker[], partitions: BalancerPartition[]): number {
  const loads = [...brokerLoads(brokers, partitions).values()];
  return Math.max(...loads) / Math.min(...loads);
}

/** Three brokers holding 10 partitions at RF 2, placed round robin. */
function threeBrokerTopic(sizeOf: (index: number) => number = () => 1_000): BalancerPartition[] {
  return Array.from({ length: 10 }, (_, index) =>
    partition(index, [index % 3, (index + 1) % 3], sizeOf(index)),
  );
}

describe('planBalance', () => {
  it('spreads replicas onto new brokers until within the tolerance, then leaders', () => {
    const brokers = [0, 1, 2, 3, 4].map((id) => broker(id));
    const { partitions, moves } = settle(brokers, threeBrokerTopic());
    expect(loadRatio(brokers, partitions)).toBeLessThanOrEqual(1.1);
    for (const moved of partitions) expect(new Set(moved.replicas).size).toBe(2);
    expect(moves.some((move) => move.kind === 'replica')).toBe(true);
    const preferred = new Map<number, number>();
    for (const moved of partitions)
      preferred.set(moved.replicas[0]!, (preferred.get(moved.replicas[0]!) ?? 0) + 1);
    expect(Math.max(...preferred.values()) - Math.min(...preferred.values())).toBeLessThanOrEqual(
      1,
    );
    expect(moves[0]!.reason).toMatch(/broker \d \(\d+ bytes\) gives 1000 bytes to broker [34]/);
  });

  it('balances bytes, not counts', () => {
    // One large partition and many small: counts would put it with others on one broker.
    const brokers = [0, 1, 2].map((id) => broker(id));
    const start = [
      partition(0, [0], 9_000),
      ...Array.from({ length: 9 }, (_, index) => partition(index + 1, [index % 2 === 0 ? 0 : 1])),
    ];
    const { partitions } = settle(brokers, start);
    // The large partition alone outweighs a third of the bytes: its broker ends with nothing
    // else, and the small ones split evenly over the other two.
    const loads = brokerLoads(brokers, partitions);
    const large = partitions[0]!.replicas[0]!;
    expect(loads.get(large)).toBe(9_001);
    const others = [0, 1, 2].filter((id) => id !== large).map((id) => loads.get(id)!);
    expect(Math.abs(others[0]! - others[1]!)).toBeLessThanOrEqual(1_001);
  });

  it('keeps every partition on as many racks as before', () => {
    const brokers = [
      broker(0, { rack: 'a' }),
      broker(1, { rack: 'b' }),
      broker(2, { rack: 'c' }),
      broker(3, { rack: 'a' }),
      broker(4, { rack: 'a' }),
    ];
    const racks = new Map(brokers.map((candidate) => [candidate.brokerId, candidate.rack]));
    const start = Array.from({ length: 12 }, (_, index) => partition(index, [0, 1, 2]));
    const { partitions } = settle(brokers, start);
    for (const moved of partitions) {
      expect(new Set(moved.replicas.map((replica) => racks.get(replica))).size).toBe(3);
    }
    // Rack a's three brokers share rack a's load: new brokers 3 and 4 took replicas from 0.
    const loads = brokerLoads(brokers, partitions);
    expect(loads.get(3)).toBeGreaterThan(0);
    expect(loads.get(4)).toBeGreaterThan(0);
  });

  it('counts partitions already moving against the bound and skips them', () => {
    const brokers = [0, 1, 2, 3].map((id) => broker(id));
    const start = threeBrokerTopic().map((current, index) =>
      index < 2 ? { ...current, moving: true } : current,
    );
    const moves = planBalance(brokers, start, { ...wide, movesMax: 3 });
    expect(moves).toHaveLength(1);
    expect(moves[0]!.partition).toBeGreaterThanOrEqual(2);
  });

  it('starts at most the byte budget per round, but always one move', () => {
    const brokers = [0, 1, 2, 3, 4].map((id) => broker(id));
    expect(planBalance(brokers, threeBrokerTopic(), { ...wide, bytesMax: 2_500 })).toHaveLength(2);
    expect(planBalance(brokers, threeBrokerTopic(), { ...wide, bytesMax: 10 })).toHaveLength(1);
  });

  it('empties a decommissioned broker and leaves a fenced one alone', () => {
    const brokers = [broker(0, { decommissioned: true }), broker(1), broker(2), broker(3)];
    const { partitions } = settle(brokers, threeBrokerTopic());
    expect(partitions.every((moved) => !moved.replicas.includes(0))).toBe(true);

    const fenced = [broker(0), broker(1), broker(2, { live: false }), broker(3)];
    const moves = planBalance(fenced, threeBrokerTopic(), wide);
    expect(moves.every((move) => !move.replicas.includes(2) || move.kind === 'replica')).toBe(true);
    for (const move of moves) {
      const before = threeBrokerTopic()[move.partition]!;
      // A replica on the fenced broker is never the one that moves.
      if (before.replicas.includes(2)) expect(move.replicas).toContain(2);
    }
  });

  it('does nothing on a balanced cluster, nor while a move is in progress', () => {
    const brokers = [0, 1, 2].map((id) => broker(id));
    const balanced = Array.from({ length: 9 }, (_, index) =>
      partition(index, [index % 3, (index + 1) % 3]),
    );
    expect(planBalance(brokers, balanced, wide)).toEqual([]);
    // Replicas even, preferred leaders all on broker 0: leader moves, unless a move is running.
    const two = [0, 1].map((id) => broker(id));
    const leaders = Array.from({ length: 4 }, (_, index) => partition(index, [0, 1]));
    expect(planBalance(two, leaders, wide)).toHaveLength(2);
    const moving = [...leaders.slice(1), { ...leaders[0]!, moving: true }];
    expect(planBalance(two, moving, wide)).toEqual([]);
  });

  it('moves preferred leadership only to an in-sync replica', () => {
    const brokers = [0, 1].map((id) => broker(id));
    const start = Array.from({ length: 4 }, (_, index) =>
      partition(index, [0, 1], 1_000, { isr: index === 0 ? [0, 1] : [0] }),
    );
    const moves = planBalance(brokers, start, wide);
    expect(moves).toEqual([
      expect.objectContaining({ partition: 0, replicas: [1, 0], kind: 'leader' }),
    ]);
  });
});
