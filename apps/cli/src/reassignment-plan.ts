import { SpoolError } from '@spool/common';

/**
 * Reassignment plans in Kafka's file format (kafka-reassign-partitions'
 * `{"version":1,"partitions":[{"topic","partition","replicas":[...]}]}`): reading one with every
 * mistake named by its entry, and generating one.
 *
 * Generation keeps what it can where it is, unlike Kafka's --generate (which places every
 * partition afresh and so moves most of the data). Two modes:
 *   - balance: every replica on a broker outside the list moves, and brokers above their fair
 *     share (ceil(replicas / brokers)) give replicas to those below it, so the replicas spread
 *     evenly over the listed brokers, new ones included;
 *   - evacuate (decommission): only the leaving broker's replicas move.
 * A replica that must find a broker takes the least loaded one not already holding the
 * partition, preferring a rack the partition does not span yet (rack awareness: each partition
 * spans as many racks as it can). In balance mode preferred leaders (first replicas) are then
 * spread by swapping the order within partitions, which moves no data.
 */

export interface PlanEntry {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
}

export interface ReassignmentPlan {
  readonly version: 1;
  readonly partitions: readonly PlanEntry[];
}

export interface PlanBroker {
  readonly id: number;
  /** '' when the broker has no rack. */
  readonly rack: string;
}

/** A plan file that cannot be used: the message names the file and the entry. */
function planError(message: string): SpoolError {
  return new SpoolError('INVALID_REPLICA_ASSIGNMENT', message);
}

/** Parses and checks the shape of a plan: JSON, version 1, entries, no duplicates. */
export function parsePlan(text: string, source: string): ReassignmentPlan {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw planError(`plan ${source} is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw planError(`plan ${source} must be a JSON object {"version":1,"partitions":[...]}`);
  }
  const document = value as Record<string, unknown>;
  if (document['version'] !== 1) {
    throw planError(
      `plan ${source} has version ${JSON.stringify(document['version'])}; only 1 is known`,
    );
  }
  const partitions = document['partitions'];
  if (!Array.isArray(partitions) || partitions.length === 0) {
    throw planError(`plan ${source} needs a non-empty "partitions" list`);
  }
  const seen = new Map<string, number>();
  const entries = partitions.map((item: unknown, index): PlanEntry => {
    const where = `plan ${source}, partitions[${index}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw planError(`${where} is not an object`);
    }
    const entry = item as Record<string, unknown>;
    const topic = entry['topic'];
    const partition = entry['partition'];
    const replicas = entry['replicas'];
    if (typeof topic !== 'string' || topic === '') {
      throw planError(`${where} has no "topic" string`);
    }
    if (!Number.isInteger(partition) || (partition as number) < 0) {
      throw planError(`${where} (${topic}) has no "partition" integer of at least 0`);
    }
    const name = `${topic}-${partition as number}`;
    if (!Array.isArray(replicas) || !replicas.every((id) => Number.isInteger(id) && id >= 0)) {
      throw planError(`${where} (${name}) has no "replicas" list of broker ids`);
    }
    if (replicas.length === 0) throw planError(`${where} (${name}) has an empty replica set`);
    const duplicate = replicas.find((id, position) => replicas.indexOf(id) !== position);
    if (duplicate !== undefined) {
      throw planError(`${where} (${name}) names broker ${duplicate} twice`);
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      throw planError(`${where} (${name}) repeats partitions[${earlier}]`);
    }
    seen.set(name, index);
    return { topic, partition: partition as number, replicas: replicas as number[] };
  });
  return { version: 1, partitions: entries };
}

/**
 * Checks a plan against the cluster: each entry's topic and partition exist and its brokers are
 * registered. Throws naming the first bad entry.
 */
export function checkPlanAgainstCluster(
  plan: ReassignmentPlan,
  source: string,
  partitionCounts: ReadonlyMap<string, number>,
  brokerIds: readonly number[],
): void {
  plan.partitions.forEach((entry, index) => {
    const where = `plan ${source}, partitions[${index}] (${entry.topic}-${entry.partition})`;
    const count = partitionCounts.get(entry.topic);
    if (count === undefined) throw planError(`${where}: topic "${entry.topic}" does not exist`);
    if (entry.partition >= count) {
      throw planError(`${where}: topic "${entry.topic}" has ${count} partitions`);
    }
    const unknown = entry.replicas.find((id) => !brokerIds.includes(id));
    if (unknown !== undefined) {
      throw planError(
        `${where}: broker ${unknown} is not in the cluster (brokers ${brokerIds.join(',')})`,
      );
    }
  });
}

export type PlanMode =
  { readonly kind: 'balance' } | { readonly kind: 'evacuate'; readonly leavingBrokerId: number };

/**
 * The replica sets the partitions should have on `brokers` (see the header), and only the
 * entries that change. `current` is every partition to consider, in any order.
 */
export function generatePlan(
  current: readonly PlanEntry[],
  brokers: readonly PlanBroker[],
  mode: PlanMode,
): ReassignmentPlan {
  if (brokers.length === 0) throw planError('the plan needs at least one broker to place on');
  const rackOf = new Map(brokers.map((broker) => [broker.id, broker.rack]));
  const rackCount = new Set(brokers.map((broker) => broker.rack)).size;
  const ordered = [...current].sort(
    (left, right) => left.topic.localeCompare(right.topic) || left.partition - right.partition,
  );
  for (const entry of ordered) {
    if (mode.kind === 'evacuate' && !entry.replicas.includes(mode.leavingBrokerId)) continue;
    if (entry.replicas.length > brokers.length) {
      throw planError(
        `${entry.topic}-${entry.partition} has ${entry.replicas.length} replicas; ` +
          `${brokers.length} brokers cannot hold them`,
      );
    }
  }
  const load = new Map(brokers.map((broker) => [broker.id, 0]));
  const kept = ordered.map((entry) =>
    entry.replicas.filter((id) =>
      mode.kind === 'balance' ? rackOf.has(id) : id !== mode.leavingBrokerId,
    ),
  );
  for (const replicas of kept) {
    for (const id of replicas) if (load.has(id)) load.set(id, load.get(id)! + 1);
  }
  if (mode.kind === 'balance') {
    const total = ordered.reduce((sum, entry) => sum + entry.replicas.length, 0);
    const share = Math.ceil(total / brokers.length);
    for (const broker of brokers) {
      while (load.get(broker.id)! > share) {
        // Take the replica from the partition that keeps the most (ties: not its leader).
        let best = -1;
        for (let index = 0; index < kept.length; index++) {
          const replicas = kept[index]!;
          if (!replicas.includes(broker.id)) continue;
          const bestReplicas = kept[best];
          if (
            bestReplicas === undefined ||
            replicas.length > bestReplicas.length ||
            (replicas.length === bestReplicas.length &&
              bestReplicas[0] === broker.id &&
              replicas[0] !== broker.id)
          ) {
            best = index;
          }
        }
        kept[best] = kept[best]!.filter((id) => id !== broker.id);
        load.set(broker.id, load.get(broker.id)! - 1);
      }
    }
  }
  const proposed = kept.map((replicas, index) => {
    const wanted = ordered[index]!.replicas.length;
    const chosen = [...replicas];
    while (chosen.length < wanted) {
      const racks = new Set(chosen.map((id) => rackOf.get(id) ?? ''));
      const candidates = brokers
        .filter((broker) => !chosen.includes(broker.id))
        .sort(
          (left, right) =>
            Number(racks.has(left.rack) && racks.size < rackCount) -
              Number(racks.has(right.rack) && racks.size < rackCount) ||
            load.get(left.id)! - load.get(right.id)! ||
            left.id - right.id,
        );
      const next = candidates[0];
      if (next === undefined) {
        const name = `${ordered[index]!.topic}-${ordered[index]!.partition}`;
        throw planError(`${name} needs ${wanted} replicas; too few brokers can take one`);
      }
      chosen.push(next.id);
      load.set(next.id, load.get(next.id)! + 1);
    }
    return chosen;
  });
  // Decommission moves nothing but the leaving broker's replicas, preferred leaders included.
  if (mode.kind === 'balance') spreadLeaders(proposed, brokers.length);
  return {
    version: 1,
    partitions: ordered.flatMap((entry, index) => {
      const replicas = proposed[index]!;
      const same =
        replicas.length === entry.replicas.length &&
        replicas.every((id, position) => entry.replicas[position] === id);
      return same ? [] : [{ topic: entry.topic, partition: entry.partition, replicas }];
    }),
  };
}

/**
 * Reorders replicas within partitions so no broker is the first replica (preferred leader) of
 * more than ceil(partitions / brokers) of them, where a swap can fix it. Moves no data.
 */
function spreadLeaders(proposed: number[][], brokerCount: number): void {
  const share = Math.ceil(proposed.length / brokerCount);
  const leaders = new Map<number, number>();
  for (const replicas of proposed) leaders.set(replicas[0]!, (leaders.get(replicas[0]!) ?? 0) + 1);
  for (const replicas of proposed) {
    const leader = replicas[0]!;
    if (leaders.get(leader)! <= share) continue;
    const swapIndex = replicas.findIndex(
      (id, index) => index > 0 && (leaders.get(id) ?? 0) < share,
    );
    if (swapIndex < 0) continue;
    const next = replicas[swapIndex]!;
    replicas[swapIndex] = leader;
    replicas[0] = next;
    leaders.set(leader, leaders.get(leader)! - 1);
    leaders.set(next, (leaders.get(next) ?? 0) + 1);
  }
}

/** The plan as Kafka's tools write it, one entry a line for diffs. */
export function formatPlan(plan: ReassignmentPlan): string {
  const lines = plan.partitions.map((entry) =>
    JSON.stringify({ topic: entry.topic, partition: entry.partition, replicas: entry.replicas }),
  );
  return `{"version":1,"partitions":[\n${lines.map((line) => `  ${line}`).join(',\n')}\n]}\n`;
}
