/**
 * The balancer's plan (as Cruise Control's and Redpanda's continuous balancing, much reduced): pure
 * functions from a view of brokers and partitions to a bounded list of moves, each a KIP-455
 * target replica set the controller then starts like any reassignment. No I/O inside.
 *
 *   1. Load: a broker's load is the bytes of the partitions it holds a replica of (each partition
 *      weighs its size plus one byte, so empty partitions still spread by count). Targets are the
 *      live brokers that are not decommissioned; a decommissioned broker's replicas move off first.
 *      Fenced brokers are left alone: their replicas are not moved (a restart is not a departure).
 *   2. Replica moves, greedily: take the most loaded source and, among targets from the least
 *      loaded up, the first that can take one of its replicas. A replica moves only when it
 *      lowers the larger of the two loads (so no move undoes another), its partition is not moving
 *      already, the target does not hold the partition, and the partition keeps at least as many
 *      racks as it spans now (rack awareness holds in every move). The moved replica keeps its
 *      place in the replica list, so a preferred leader moves with its replica.
 *   3. Bounds: at most `movesMax` partitions moving at once (those already moving count), and at
 *      most `bytesMax` bytes started per round, except that one move always may start so a
 *      partition larger than the budget still moves. Balance stops when the most loaded target
 *      holds at most `toleranceRatio` times the least loaded's load (a decommissioned source must
 *      be emptied whatever the ratio).
 *   4. Leaders: once no replica moves, preferred leaders (first replicas) are spread: while a
 *      broker is preferred for more than one partition above another broker's count, a partition
 *      that has both puts the second first, if it is in the ISR. A reordering moves no data; the
 *      controller writes it at once, and the preferred-leader election moves the leadership.
 */

export interface BalancerBroker {
  readonly brokerId: number;
  readonly rack: string;
  /** Registered, unfenced, heartbeating. */
  readonly live: boolean;
  readonly decommissioned: boolean;
}

export interface BalancerPartition {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly sizeBytes: number;
  /** A reassignment is in progress. */
  readonly moving: boolean;
}

export interface BalancerLimits {
  readonly movesMax: number;
  readonly bytesMax: number;
  readonly toleranceRatio: number;
}

export interface BalancerMove {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly kind: 'replica' | 'leader';
  /** Why, for the controller's log: which broker gives what to which, and their loads. */
  readonly reason: string;
}

/** Rules 1–4: the moves to start now; empty when balanced or bounded. */
export function planBalance(
  brokers: readonly BalancerBroker[],
  partitions: readonly BalancerPartition[],
  limits: BalancerLimits,
): BalancerMove[] {
  const replicaMoves = planReplicaMoves(brokers, partitions, limits);
  if (replicaMoves.length > 0 || partitions.some((partition) => partition.moving)) {
    return replicaMoves;
  }
  return planLeaderMoves(brokers, partitions, limits.movesMax);
}

/** Each broker's load by rule 1, from the partitions' replica sets. */
export function brokerLoads(
  brokers: readonly BalancerBroker[],
  partitions: readonly BalancerPartition[],
): Map<number, number> {
  const loads = new Map<number, number>(brokers.map((broker) => [broker.brokerId, 0]));
  for (const partition of partitions) {
    for (const replica of partition.replicas) {
      loads.set(replica, (loads.get(replica) ?? 0) + weightOf(partition));
    }
  }
  return loads;
}

function weightOf(partition: BalancerPartition): number {
  return partition.sizeBytes + 1;
}

function planReplicaMoves(
  brokers: readonly BalancerBroker[],
  partitions: readonly BalancerPartition[],
  limits: BalancerLimits,
): BalancerMove[] {
  const targets = brokers.filter((broker) => broker.live && !broker.decommissioned);
  if (targets.length === 0) return [];
  const racks = new Map(brokers.map((broker) => [broker.brokerId, broker.rack]));
  const draining = new Set(
    brokers.filter((broker) => broker.decommissioned).map((broker) => broker.brokerId),
  );
  const targetIds = new Set(targets.map((broker) => broker.brokerId));
  const loads = brokerLoads(brokers, partitions);
  // The replica sets as planned so far, so later moves see earlier ones.
  const planned = new Map(partitions.map((partition) => [partition, [...partition.replicas]]));
  let movesLeft = limits.movesMax - partitions.filter((partition) => partition.moving).length;
  let bytesLeft = limits.bytesMax;
  const moves: BalancerMove[] = [];
  const movable = (partition: BalancerPartition): boolean =>
    !partition.moving && !moves.some((move) => sameKey(move, partition));
  while (movesLeft > 0) {
    const sources = [...loads.keys()]
      .filter((id) => draining.has(id) || targetIds.has(id))
      .sort(
        (left, right) =>
          Number(draining.has(right)) - Number(draining.has(left)) ||
          loads.get(right)! - loads.get(left)! ||
          left - right,
      );
    const ascending = [...targetIds].sort(
      (left, right) => loads.get(left)! - loads.get(right)! || left - right,
    );
    let chosen: { partition: BalancerPartition; from: number; to: number } | undefined;
    for (const from of sources) {
      const fromLoad = loads.get(from)!;
      if (fromLoad === 0) continue;
      const drain = draining.has(from);
      if (!drain && !overTolerance(fromLoad, loads.get(ascending[0]!)!, limits.toleranceRatio)) {
        continue;
      }
      for (const to of ascending) {
        if (to === from) continue;
        const gap = fromLoad - loads.get(to)!;
        const candidates = partitions
          .filter((partition) => movable(partition) && planned.get(partition)!.includes(from))
          .filter((partition) => !planned.get(partition)!.includes(to))
          .filter((partition) => drain || weightOf(partition) < gap)
          .filter((partition) => keepsRacks(planned.get(partition)!, from, to, racks))
          .filter((partition) => moves.length === 0 || partition.sizeBytes <= bytesLeft);
        // The replica closest to half the gap evens the two brokers best.
        candidates.sort(
          (left, right) =>
            Math.abs(weightOf(left) - gap / 2) - Math.abs(weightOf(right) - gap / 2) ||
            left.topic.localeCompare(right.topic) ||
            left.partition - right.partition,
        );
        if (candidates[0] !== undefined) {
          chosen = { partition: candidates[0], from, to };
          break;
        }
      }
      if (chosen !== undefined) break;
    }
    if (chosen === undefined) break;
    const { partition, from, to } = chosen;
    const replicas = planned.get(partition)!.map((replica) => (replica === from ? to : replica));
    const weight = weightOf(partition);
    moves.push({
      topic: partition.topic,
      partition: partition.partition,
      replicas,
      kind: 'replica',
      reason:
        `${draining.has(from) ? 'decommissioned ' : ''}broker ${from} ` +
        `(${loads.get(from)} bytes) gives ${partition.sizeBytes} bytes to broker ${to} ` +
        `(${loads.get(to)} bytes)`,
    });
    planned.set(partition, replicas);
    loads.set(from, loads.get(from)! - weight);
    loads.set(to, loads.get(to)! + weight);
    bytesLeft -= partition.sizeBytes;
    movesLeft--;
  }
  return moves;
}

function overTolerance(mostLoaded: number, leastLoaded: number, toleranceRatio: number): boolean {
  return mostLoaded > leastLoaded * toleranceRatio;
}

/** Whether replacing `from` by `to` keeps the partition on at least as many racks. */
function keepsRacks(
  replicas: readonly number[],
  from: number,
  to: number,
  racks: ReadonlyMap<number, string>,
): boolean {
  const rackCount = (ids: readonly number[]): number =>
    new Set(ids.map((id) => racks.get(id) ?? '')).size;
  const after = replicas.map((replica) => (replica === from ? to : replica));
  return rackCount(after) >= rackCount(replicas);
}

function sameKey(move: BalancerMove, partition: BalancerPartition): boolean {
  return move.topic === partition.topic && move.partition === partition.partition;
}

/** Rule 4: reorder replica lists so live targets are preferred leaders about equally often. */
function planLeaderMoves(
  brokers: readonly BalancerBroker[],
  partitions: readonly BalancerPartition[],
  movesMax: number,
): BalancerMove[] {
  const targets = brokers
    .filter((broker) => broker.live && !broker.decommissioned)
    .map((broker) => broker.brokerId);
  if (targets.length < 2) return [];
  const preferred = new Map<number, number>(targets.map((id) => [id, 0]));
  const firsts = new Map<BalancerPartition, number>();
  for (const partition of partitions) {
    const first = partition.replicas[0];
    if (first === undefined) continue;
    firsts.set(partition, first);
    if (preferred.has(first)) preferred.set(first, preferred.get(first)! + 1);
  }
  const moves: BalancerMove[] = [];
  while (moves.length < movesMax) {
    const byCount = [...preferred.keys()].sort(
      (left, right) => preferred.get(left)! - preferred.get(right)! || left - right,
    );
    let chosen: { partition: BalancerPartition; from: number; to: number } | undefined;
    search: for (const to of byCount) {
      for (const from of [...byCount].reverse()) {
        if (preferred.get(from)! - preferred.get(to)! <= 1) break;
        const partition = partitions.find(
          (candidate) =>
            firsts.get(candidate) === from &&
            candidate.replicas.includes(to) &&
            candidate.isr.includes(to) &&
            !moves.some((move) => sameKey(move, candidate)),
        );
        if (partition !== undefined) {
          chosen = { partition, from, to };
          break search;
        }
      }
    }
    if (chosen === undefined) break;
    const { partition, from, to } = chosen;
    const replicas = [to, ...partition.replicas.filter((replica) => replica !== to)];
    moves.push({
      topic: partition.topic,
      partition: partition.partition,
      replicas,
      kind: 'leader',
      reason:
        `broker ${from} is preferred leader of ${preferred.get(from)} partitions, ` +
        `broker ${to} of ${preferred.get(to)}`,
    });
    firsts.set(partition, to);
    preferred.set(from, preferred.get(from)! - 1);
    preferred.set(to, preferred.get(to)! + 1);
  }
  return moves;
}
