import type { IsrManager } from './isr-manager';
import type { PartitionReplica } from './partition-replica';
import type { ReplicaFetcherManager } from './replica-fetcher-manager';
import type { AssignmentChange } from './replica-manager';

/**
 * What a replica's role change starts or stops: a leader stops following and has its ISR
 * watched; a follower at a new leader or term truncates to where the logs agree, then fetches.
 * Replication starts once the node is registered (fetchers send its broker epoch): until the
 * fetchers and the ISR manager are set, role changes are only recorded by the replica manager.
 */
export class ReplicationRoles {
  fetchers: ReplicaFetcherManager | undefined;
  isr: IsrManager | undefined;

  onRoleChange(replica: PartitionReplica, change: AssignmentChange): void {
    if (replica.isLeader) {
      this.fetchers?.unfollow(replica.name);
      this.isr?.observeAssignment(replica, change);
      this.isr?.maybeUpdate(replica);
    } else if (change.epochChanged || change.roleChanged) {
      this.fetchers?.follow(replica);
    }
  }

  onRemoved(replica: PartitionReplica): void {
    this.fetchers?.unfollow(replica.name);
  }
}
