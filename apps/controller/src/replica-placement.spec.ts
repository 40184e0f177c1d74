// Proves replica placement as Kafka's assignReplicasToBrokers: the documented example layout,
// and (property test) for any broker set and sizes, no broker twice in a partition, leaders
// balanced to within one, replicas balanced to within the replication factor (racks of equal
// size), and with racks
// every partition on min(racks, replication factor) distinct racks.
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignReplicas, rackAlternatedBrokers } from './replica-placement';

const brokers = (count: number, racks = 0) =>
  Array.from({ length: count }, (_, index) => ({
    brokerId: index,
    rack: racks > 0 ? `rack-${index % racks}` : '',
  }));

describe('assignReplicas', () => {
  it("matches Kafka's documented layout for 5 brokers, 10 partitions, factor 3", () => {
    // From the comment on Kafka's AdminUtils.assignReplicasToBrokers (start 0, shift 0).
    const assignment = assignReplicas(brokers(5), 10, 3, { randomInt: () => 0 });
    expect(assignment.map((replicas) => replicas[0])).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
    expect(assignment.map((replicas) => replicas[1])).toEqual([1, 2, 3, 4, 0, 2, 3, 4, 0, 1]);
    expect(assignment.map((replicas) => replicas[2])).toEqual([2, 3, 4, 0, 1, 3, 4, 0, 1, 2]);
  });

  it('interleaves brokers by rack', () => {
    const arranged = rackAlternatedBrokers([
      { brokerId: 0, rack: 'a' },
      { brokerId: 1, rack: 'a' },
      { brokerId: 2, rack: 'b' },
      { brokerId: 3, rack: 'c' },
      { brokerId: 4, rack: 'b' },
    ]);
    expect(arranged.map((broker) => broker.brokerId)).toEqual([0, 2, 3, 1, 4]);
  });

  it('balances and never repeats a broker, with and without racks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 1000 }),
        (brokerCount, rackCount, partitions, factorWanted, seed) => {
          const factor = Math.min(factorWanted, brokerCount);
          const set = brokers(brokerCount, rackCount);
          let state = seed;
          const randomInt = (bound: number) =>
            (state = (state * 1103515245 + 12345) % 2147483648) % bound;
          const assignment = assignReplicas(set, partitions, factor, { randomInt });
          expect(assignment).toHaveLength(partitions);
          const leaders = new Map<number, number>();
          const replicas = new Map<number, number>();
          for (const partition of assignment) {
            expect(new Set(partition).size).toBe(factor);
            leaders.set(partition[0]!, (leaders.get(partition[0]!) ?? 0) + 1);
            for (const broker of partition) replicas.set(broker, (replicas.get(broker) ?? 0) + 1);
            if (rackCount > 0) {
              const racks = new Set(partition.map((broker) => set[broker]!.rack));
              expect(racks.size).toBe(Math.min(factor, Math.min(rackCount, brokerCount)));
            }
          }
          const leaderCounts = set.map((broker) => leaders.get(broker.brokerId) ?? 0);
          expect(Math.max(...leaderCounts) - Math.min(...leaderCounts)).toBeLessThanOrEqual(1);
          // Replicas balance when racks hold equal numbers of brokers; with uneven racks, rack
          // diversity must win (a lone broker in its rack gets a replica of most partitions).
          const evenRacks = rackCount === 0 || brokerCount % Math.min(rackCount, brokerCount) === 0;
          if (evenRacks) {
            const replicaCounts = set.map((broker) => replicas.get(broker.brokerId) ?? 0);
            expect(Math.max(...replicaCounts) - Math.min(...replicaCounts)).toBeLessThanOrEqual(
              factor,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
