/**
 * The storage nodes' partition replica sizes, as they send them in BrokerHeartbeat, for the
 * balancer (it spreads bytes, not just replica counts) and the per-broker gauges. In memory
 * only, like broker sessions and cleaner reports: a controller that takes over knows each
 * broker's sizes after its next heartbeat. A report replaces the broker's previous one whole.
 */
import type { PartitionReplicaSize } from '@spool/protocol';

/** A heartbeat reports at most this many replicas; the rest count as empty until they fit. */
export const replicaSizesReportedMax = 65_536;

export class ReplicaSizeReports {
  private readonly byBroker = new Map<number, ReadonlyMap<string, number>>();

  record(brokerId: number, sizes: readonly PartitionReplicaSize[]): void {
    const report = new Map<string, number>();
    for (const size of sizes.slice(0, replicaSizesReportedMax)) {
      const bytes = Number(size.sizeBytes);
      if (!Number.isFinite(bytes) || bytes < 0) continue;
      report.set(partitionKey(size.topic, size.partition), bytes);
    }
    this.byBroker.set(brokerId, report);
  }

  /** Whether the broker has reported since this controller took over. */
  reported(brokerId: number): boolean {
    return this.byBroker.has(brokerId);
  }

  /** The bytes the broker holds: the sum of its last report. */
  brokerSizeBytes(brokerId: number): number | undefined {
    const report = this.byBroker.get(brokerId);
    if (report === undefined) return undefined;
    let total = 0;
    for (const bytes of report.values()) total += bytes;
    return total;
  }

  /** The broker's last report, replica by replica, sorted; undefined before its first. */
  replicasOf(brokerId: number): PartitionReplicaSize[] | undefined {
    const report = this.byBroker.get(brokerId);
    if (report === undefined) return undefined;
    return [...report]
      .map(([key, bytes]) => {
        const separator = key.lastIndexOf('\u0000');
        return {
          topic: key.slice(0, separator),
          partition: Number(key.slice(separator + 1)),
          sizeBytes: BigInt(bytes),
        };
      })
      .sort((left, right) =>
        left.topic === right.topic
          ? left.partition - right.partition
          : left.topic.localeCompare(right.topic),
      );
  }

  forget(brokerId: number): void {
    this.byBroker.delete(brokerId);
  }

  /** `brokerId`'s last reported size of one partition replica, if it reported one. */
  sizeOf(brokerId: number, topic: string, partition: number): number | undefined {
    return this.byBroker.get(brokerId)?.get(partitionKey(topic, partition));
  }

  /** A partition's size: the largest any broker reported for it (its leader's, usually), or 0. */
  partitionSizeBytes(topic: string, partition: number): number {
    let largest = 0;
    const key = partitionKey(topic, partition);
    for (const report of this.byBroker.values()) largest = Math.max(largest, report.get(key) ?? 0);
    return largest;
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
