/**
 * EnsureOffsetsTopic: the internal topic `__consumer_offsets`, where coordinators keep committed
 * offsets and group records, is created by the first coordinator that loads a shard, not by
 * users (CreateTopics refuses names that start with "__"). Replication factor min(3, live
 * brokers) and min.insync.replicas min(2, replication factor), as Kafka's
 * offsets.topic.replication.factor and its usual min.insync.replicas; records never expire by
 * age (retention.ms -1) because a group's last commit may be old and still needed.
 */
import type { ControllerContext } from './controller-context';
import { SpoolError } from '@spool/common';
import type { TopicState } from './cluster-state';
import { resolvePendingTopicChanges } from './topic-changes';
import { placementBrokers, writeNewTopic } from './topic-commands';

export const offsetsTopicName = '__consumer_offsets';
/** Kafka's default offsets.topic.replication.factor. */
const offsetsTopicReplicationFactorMax = 3;

export async function ensureOffsetsTopic(context: ControllerContext): Promise<TopicState> {
  await resolvePendingTopicChanges(context);
  const existing = context.state.topics.get(offsetsTopicName);
  if (existing !== undefined) return existing;
  // Decommissioned brokers take no new replicas, so they do not count towards its RF.
  const liveBrokers = placementBrokers(context).length;
  if (liveBrokers === 0) {
    throw new SpoolError(
      'UNAVAILABLE',
      `no live storage node to place ${offsetsTopicName} on yet; retry once brokers registered`,
    );
  }
  const replicationFactor = Math.min(offsetsTopicReplicationFactorMax, liveBrokers);
  await writeNewTopic(
    context,
    offsetsTopicName,
    context.settings.offsetsTopicPartitionCount,
    replicationFactor,
    {
      'min.insync.replicas': String(Math.min(2, replicationFactor)),
      'retention.ms': '-1',
    },
    true,
  );
  const created = context.state.topics.get(offsetsTopicName);
  if (created === undefined) {
    throw new SpoolError('UNAVAILABLE', `${offsetsTopicName} was written but is not visible`);
  }
  return created;
}
