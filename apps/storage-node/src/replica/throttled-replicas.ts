/**
 * Which replicas the reassignment throttles hold (replication-throttles.ts has the rates), by two
 * rules, either of which throttles:
 * 1. Spool's own: a replica a reassignment adds to a partition (one of its adding replicas),
 *    listed or not, since `spool partitions reassign` sets only the rates.
 * 2. Kafka's (ReplicationQuotaManager): a replica out of the partition's ISR when the topic's
 *    list names the partition on this broker. The leader side reads
 *    leader.replication.throttled.replicas with the leader's own id, the follower side
 *    follower.replication.throttled.replicas with the follower's; "*" names every partition.
 *    kafka-reassign-partitions --throttle lists exactly the replicas rule 1 holds; a list set by
 *    hand also holds a replica of a listed partition catching up after a restart, as in Kafka.
 */
import type { ClusterMetadataCache } from '@spool/protocol';

export const leaderThrottledReplicasConfig = 'leader.replication.throttled.replicas';
export const followerThrottledReplicasConfig = 'follower.replication.throttled.replicas';

type Metadata = Pick<ClusterMetadataCache, 'partition' | 'topicConfig'>;

/**
 * Whether a list (the controller's normalized form: "*", "" or "p:b,p:b") names `partition` on
 * `brokerId`.
 */
export function listsReplica(
  list: string | undefined,
  partition: number,
  brokerId: number,
): boolean {
  if (list === undefined || list === '') return false;
  return list === '*' || list.split(',').includes(`${partition}:${brokerId}`);
}

/** Leader side: whether this leader (`leaderId`) throttles what it sends follower `replicaId`. */
export function leaderThrottlesReplica(
  metadata: Metadata,
  topic: string,
  partition: number,
  leaderId: number,
  replicaId: number,
): boolean {
  const state = metadata.partition(topic, partition);
  if (state === undefined) return false;
  if (state.addingReplicas.includes(replicaId)) return true;
  return (
    !state.isr.includes(replicaId) &&
    listsReplica(metadata.topicConfig(topic, leaderThrottledReplicasConfig), partition, leaderId)
  );
}

/** Follower side: whether this follower (`brokerId`) throttles its fetches of the partition. */
export function followerThrottlesReplica(
  metadata: Metadata,
  topic: string,
  partition: number,
  brokerId: number,
): boolean {
  const state = metadata.partition(topic, partition);
  if (state === undefined) return false;
  if (state.addingReplicas.includes(brokerId)) return true;
  return (
    !state.isr.includes(brokerId) &&
    listsReplica(metadata.topicConfig(topic, followerThrottledReplicasConfig), partition, brokerId)
  );
}
