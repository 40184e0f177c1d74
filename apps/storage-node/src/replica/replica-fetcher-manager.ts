/**
 * Which fetcher follows which partition (Kafka's `ReplicaFetcherManager`): one fetcher per
 * leader broker, created when the first partition led there is followed and stopped when the
 * last one goes.
 */
import type { PartitionReplica } from './partition-replica';
import { ReplicaFetcher, type ReplicaFetcherOptions } from './replica-fetcher';

export class ReplicaFetcherManager {
  private readonly fetchers = new Map<number, ReplicaFetcher>();
  private readonly leaderOf = new Map<string, number>();

  constructor(private readonly options: ReplicaFetcherOptions) {}

  /** Follows the partition from its current leader, starting with truncation. */
  follow(replica: PartitionReplica): void {
    this.unfollow(replica.name);
    const leaderId = replica.assignment.leaderId;
    if (leaderId < 0) return;
    let fetcher = this.fetchers.get(leaderId);
    if (fetcher === undefined) {
      fetcher = new ReplicaFetcher(leaderId, this.options);
      this.fetchers.set(leaderId, fetcher);
    }
    fetcher.add(replica);
    this.leaderOf.set(replica.name, leaderId);
  }

  unfollow(name: string): void {
    const leaderId = this.leaderOf.get(name);
    if (leaderId === undefined) return;
    this.leaderOf.delete(name);
    const fetcher = this.fetchers.get(leaderId);
    fetcher?.remove(name);
    if (fetcher !== undefined && fetcher.partitionCount === 0) {
      this.fetchers.delete(leaderId);
      void fetcher.stop();
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.fetchers.values()].map((fetcher) => fetcher.stop()));
    this.fetchers.clear();
    this.leaderOf.clear();
  }
}
