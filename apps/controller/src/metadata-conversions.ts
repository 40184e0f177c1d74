/** The controller's view, as the gRPC messages other services receive. */
import type {
  BrokerMetadata,
  CoordinatorMetadata,
  CoordinatorShard,
  PartitionMetadata,
  TopicMetadata,
} from '@spool/protocol';
import type {
  BrokerState,
  ClusterState,
  CoordinatorShardState,
  CoordinatorState,
  PartitionState,
  TopicState,
} from './cluster-state';
import { describeTopicConfigs } from './topic-configs';

export function brokerMetadataOf(broker: BrokerState): BrokerMetadata {
  return {
    brokerId: broker.record.brokerId,
    rack: broker.record.rack,
    endpoints: broker.record.endpoints.map((endpoint) => ({ ...endpoint })),
    brokerEpoch: broker.brokerEpoch,
    state: broker.record.fenced ? 'FENCED' : 'ALIVE',
    decommissioned: broker.record.decommissioned === true,
  };
}

export function partitionMetadataOf(partition: PartitionState): PartitionMetadata {
  return {
    topic: partition.topic,
    partition: partition.partition,
    leaderId: partition.record.leader,
    leaderEpoch: partition.record.leaderEpoch,
    replicas: [...partition.record.replicas],
    isr: [...partition.record.isr],
    partitionEpoch: partition.record.partitionEpoch,
    offline: partition.record.leader === -1,
    addingReplicas: [...(partition.record.addingReplicas ?? [])],
    removingReplicas: [...(partition.record.removingReplicas ?? [])],
  };
}

export function topicMetadataOf(topic: TopicState): TopicMetadata {
  return {
    name: topic.record.name,
    topicId: topic.record.topicId,
    partitions: [...topic.partitions.values()]
      .sort((left, right) => left.partition - right.partition)
      .map(partitionMetadataOf),
    configs: describeTopicConfigs(topic.record.configs),
    internal: topic.record.internal,
  };
}

export function sortedBrokers(state: ClusterState): BrokerMetadata[] {
  return [...state.brokers.values()]
    .sort((left, right) => left.record.brokerId - right.record.brokerId)
    .map(brokerMetadataOf);
}

export function coordinatorMetadataOf(coordinator: CoordinatorState): CoordinatorMetadata {
  return {
    coordinatorId: coordinator.record.coordinatorId,
    endpoints: coordinator.record.endpoints.map((endpoint) => ({ ...endpoint })),
  };
}

export function coordinatorShardOf(shard: CoordinatorShardState): CoordinatorShard {
  return {
    partition: shard.partition,
    coordinatorId: shard.record.coordinatorId,
    shardEpoch: shard.record.shardEpoch,
  };
}

export function sortedCoordinators(state: ClusterState): CoordinatorMetadata[] {
  return [...state.coordinators.values()]
    .sort((left, right) => left.record.coordinatorId.localeCompare(right.record.coordinatorId))
    .map(coordinatorMetadataOf);
}

export function sortedCoordinatorShards(state: ClusterState): CoordinatorShard[] {
  return [...state.coordinatorShards.values()]
    .sort((left, right) => left.partition - right.partition)
    .map(coordinatorShardOf);
}
