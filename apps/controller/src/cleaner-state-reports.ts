/**
 * The log cleaners' reports, as storage nodes send them in BrokerHeartbeat, kept for
 * DescribeTopics: for each broker, its last report, one entry per compacted partition replica it
 * hosts. In memory only, like broker sessions: a controller that takes over knows each broker's
 * report after its next heartbeat. A report replaces the broker's previous one whole, so a
 * partition that left the broker (or stopped being compacted) leaves the report with it.
 */
import type { PartitionCleanerState } from '@spool/protocol';

export class CleanerStateReports {
  private readonly byBroker = new Map<number, ReadonlyMap<string, PartitionCleanerState>>();

  record(brokerId: number, states: readonly PartitionCleanerState[]): void {
    if (states.length === 0) {
      this.byBroker.delete(brokerId);
      return;
    }
    const report = new Map<string, PartitionCleanerState>();
    for (const state of states) {
      report.set(partitionKey(state.topic, state.partition), { ...state, brokerId });
    }
    this.byBroker.set(brokerId, report);
  }

  /**
   * A partition's last report from each of its replicas that sent one (every replica cleans its
   * own log): the leader's first, then the others in the replica order.
   */
  ofReplicas(
    topic: string,
    partition: {
      readonly partition: number;
      readonly leaderId: number;
      readonly replicas: readonly number[];
      readonly offline: boolean;
    },
  ): PartitionCleanerState[] {
    const leader = partition.offline ? [] : [partition.leaderId];
    const followers = partition.replicas.filter((brokerId) => !leader.includes(brokerId));
    return [...leader, ...followers].flatMap((brokerId) => {
      const state = this.of(brokerId, topic, partition.partition);
      return state === undefined ? [] : [state];
    });
  }

  /** `brokerId`'s last report for one partition, if it sent one. */
  of(brokerId: number, topic: string, partition: number): PartitionCleanerState | undefined {
    return this.byBroker.get(brokerId)?.get(partitionKey(topic, partition));
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
