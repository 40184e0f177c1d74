/**
 * Leader election rules for one partition, as pure functions over its record: the controller
 * decides, then writes the result with a compare-and-set. Kafka's rules:
 *
 *   1. A new leader comes from the ISR, the first live replica in replica order: it has every
 *      acknowledged record.
 *   2. With no live ISR member the partition goes offline (leader −1), unless the topic allows
 *      unclean election; then the first live replica leads and becomes the whole ISR, which can
 *      lose acknowledged records and is counted apart.
 *   3. A broker that leaves is removed from the ISR, except when it is the last member: the ISR
 *      then keeps naming the replica that has all the data, so that it, and only it, can lead
 *      again cleanly when it returns.
 *   4. Every leader change bumps the leader epoch; every change bumps the partition epoch.
 */
import { noLeader, type PartitionRecord } from './metadata-records';

export type ElectionKind = 'clean' | 'unclean' | 'none';

export interface PartitionChange {
  readonly record: PartitionRecord;
  /** Whether the leader changed, and how it was chosen. */
  readonly election: ElectionKind;
}

function changed(
  record: PartitionRecord,
  next: Partial<PartitionRecord>,
  election: ElectionKind,
): PartitionChange {
  const leaderChanged = next.leader !== undefined && next.leader !== record.leader;
  return {
    record: {
      ...record,
      ...next,
      leaderEpoch: leaderChanged ? record.leaderEpoch + 1 : record.leaderEpoch,
      partitionEpoch: record.partitionEpoch + 1,
    },
    election: leaderChanged && next.leader !== noLeader ? election : 'none',
  };
}

function electLeader(
  record: PartitionRecord,
  isr: readonly number[],
  live: ReadonlySet<number>,
  uncleanAllowed: boolean,
): { leader: number; isr: readonly number[]; election: ElectionKind } {
  const clean = record.replicas.find((replica) => isr.includes(replica) && live.has(replica));
  if (clean !== undefined) return { leader: clean, isr, election: 'clean' };
  const unclean = uncleanAllowed ? record.replicas.find((replica) => live.has(replica)) : undefined;
  if (unclean !== undefined) return { leader: unclean, isr: [unclean], election: 'unclean' };
  return { leader: noLeader, isr, election: 'none' };
}

/**
 * The broker is gone (fenced) or shutting down: take it out of the ISR (rule 3) and, if it led,
 * elect another leader (rules 1, 2). Undefined when the partition does not involve it.
 */
export function removeBroker(
  record: PartitionRecord,
  brokerId: number,
  live: ReadonlySet<number>,
  uncleanAllowed: boolean,
): PartitionChange | undefined {
  if (!record.replicas.includes(brokerId)) return undefined;
  const remaining = record.isr.filter((replica) => replica !== brokerId);
  const isr = remaining.length > 0 ? remaining : record.isr;
  const others = new Set([...live].filter((broker) => broker !== brokerId));
  if (record.leader !== brokerId) {
    if (isr.length === record.isr.length) return undefined;
    return changed(record, { isr }, 'none');
  }
  const elected = electLeader(record, remaining, others, uncleanAllowed);
  return changed(
    record,
    { leader: elected.leader, isr: elected.leader === noLeader ? isr : elected.isr },
    elected.election,
  );
}

/** An offline partition gets a leader once one is eligible again. */
export function electOffline(
  record: PartitionRecord,
  live: ReadonlySet<number>,
  uncleanAllowed: boolean,
): PartitionChange | undefined {
  if (record.leader !== noLeader) return undefined;
  const elected = electLeader(record, record.isr, live, uncleanAllowed);
  if (elected.leader === noLeader) return undefined;
  return changed(record, { leader: elected.leader, isr: elected.isr }, elected.election);
}

/** Moves leadership back to the preferred (first) replica when it is live and in the ISR. */
export function electPreferred(
  record: PartitionRecord,
  live: ReadonlySet<number>,
): PartitionChange | undefined {
  const preferred = record.replicas[0];
  if (preferred === undefined || record.leader === preferred) return undefined;
  if (!record.isr.includes(preferred) || !live.has(preferred)) return undefined;
  return changed(record, { leader: preferred }, 'clean');
}

/** Whether the leader must also step down: a leader is always a live ISR member. */
export function isOffline(record: PartitionRecord): boolean {
  return record.leader === noLeader;
}
