/**
 * Replica placement for new partitions: Kafka's `assignReplicasToBrokers`. Partition i's first
 * replica goes to broker (start + i) mod n, and its j-th further replica is shifted from the first
 * by 1 + (shift + j) mod (n − 1), where start and shift are random per topic and the shift grows
 * by one every n partitions. Leaders (first replicas) spread evenly, followers of one broker's
 * leaders spread over the others, and no broker holds a partition twice.
 *
 * With racks on every broker the list of brokers is first interleaved by rack, and a further
 * replica skips a broker whose rack (or the broker itself) already holds the partition while
 * another rack (or broker) does not, so each partition spans as many racks as it can.
 */
import { assert } from '@spool/common';

export interface PlacementBroker {
  readonly brokerId: number;
  readonly rack: string;
}

export interface PlacementOptions {
  /** Partition ids to assign start here (CreatePartitions continues an existing topic). */
  readonly startPartitionId?: number;
  /** Picks start and shift: an integer in [0, bound). Random by default. */
  readonly randomInt?: (bound: number) => number;
}

export function assignReplicas(
  brokers: readonly PlacementBroker[],
  partitionCount: number,
  replicationFactor: number,
  options: PlacementOptions = {},
): number[][] {
  assert(brokers.length > 0, 'placement needs at least one broker');
  assert(
    replicationFactor >= 1 && replicationFactor <= brokers.length,
    'replication factor out of range',
  );
  const randomInt = options.randomInt ?? ((bound: number) => Math.floor(Math.random() * bound));
  const rackAware = brokers.every((broker) => broker.rack !== '');
  return rackAware
    ? assignRackAware(
        brokers,
        partitionCount,
        replicationFactor,
        options.startPartitionId ?? 0,
        randomInt,
      )
    : assignRackUnaware(
        [...brokers].map((broker) => broker.brokerId).sort((left, right) => left - right),
        partitionCount,
        replicationFactor,
        options.startPartitionId ?? 0,
        randomInt,
      );
}

function replicaIndex(
  firstReplicaIndex: number,
  shift: number,
  replica: number,
  brokerCount: number,
): number {
  const offset = 1 + ((shift + replica) % (brokerCount - 1));
  return (firstReplicaIndex + offset) % brokerCount;
}

function assignRackUnaware(
  brokerIds: readonly number[],
  partitionCount: number,
  replicationFactor: number,
  startPartitionId: number,
  randomInt: (bound: number) => number,
): number[][] {
  const brokerCount = brokerIds.length;
  const startIndex = randomInt(brokerCount);
  let shift = randomInt(brokerCount);
  const assignment: number[][] = [];
  for (
    let partition = startPartitionId;
    partition < startPartitionId + partitionCount;
    partition++
  ) {
    if (partition > 0 && partition % brokerCount === 0) shift++;
    const first = (partition + startIndex) % brokerCount;
    const replicas = [brokerIds[first]!];
    for (let replica = 0; replica < replicationFactor - 1; replica++) {
      replicas.push(brokerIds[replicaIndex(first, shift, replica, brokerCount)]!);
    }
    assignment.push(replicas);
  }
  return assignment;
}

/** Brokers ordered rack by rack in turn (racks and brokers sorted), as Kafka arranges them. */
export function rackAlternatedBrokers(brokers: readonly PlacementBroker[]): PlacementBroker[] {
  const byRack = new Map<string, PlacementBroker[]>();
  for (const broker of [...brokers].sort((left, right) => left.brokerId - right.brokerId)) {
    byRack.set(broker.rack, [...(byRack.get(broker.rack) ?? []), broker]);
  }
  const racks = [...byRack.keys()].sort();
  const arranged: PlacementBroker[] = [];
  for (
    let rackIndex = 0;
    arranged.length < brokers.length;
    rackIndex = (rackIndex + 1) % racks.length
  ) {
    const next = byRack.get(racks[rackIndex]!)!.shift();
    if (next !== undefined) arranged.push(next);
  }
  return arranged;
}

function assignRackAware(
  brokers: readonly PlacementBroker[],
  partitionCount: number,
  replicationFactor: number,
  startPartitionId: number,
  randomInt: (bound: number) => number,
): number[][] {
  const arranged = rackAlternatedBrokers(brokers);
  const brokerCount = arranged.length;
  const rackCount = new Set(arranged.map((broker) => broker.rack)).size;
  const startIndex = randomInt(brokerCount);
  let shift = randomInt(brokerCount);
  const assignment: number[][] = [];
  for (
    let partition = startPartitionId;
    partition < startPartitionId + partitionCount;
    partition++
  ) {
    if (partition > 0 && partition % brokerCount === 0) shift++;
    const first = (partition + startIndex) % brokerCount;
    const leader = arranged[first]!;
    const replicas = [leader.brokerId];
    const racksWithReplicas = new Set([leader.rack]);
    const brokersWithReplicas = new Set([leader.brokerId]);
    let candidate = 0;
    for (let replica = 0; replica < replicationFactor - 1; replica++) {
      for (;;) {
        const broker = arranged[replicaIndex(first, shift * rackCount, candidate, brokerCount)]!;
        candidate++;
        const rackFree =
          !racksWithReplicas.has(broker.rack) || racksWithReplicas.size === rackCount;
        const brokerFree =
          !brokersWithReplicas.has(broker.brokerId) || brokersWithReplicas.size === brokerCount;
        if (rackFree && brokerFree) {
          replicas.push(broker.brokerId);
          racksWithReplicas.add(broker.rack);
          brokersWithReplicas.add(broker.brokerId);
          break;
        }
      }
    }
    assignment.push(replicas);
  }
  return assignment;
}
