/** The controller's view, as the gRPC messages other services receive. */
import type { BrokerMetadata, PartitionMetadata, TopicMetadata } from '@spool/protocol';
import type { BrokerState, ClusterState, PartitionState, TopicState } from './cluster-state';
import { describeTopicConfigs } from './topic-configs';

export function brokerMetadataOf(broker: BrokerState): BrokerMetadata {
  return {
    brokerId: broker.record.brokerId,
    rack: broker.record.rack,
    endpoints: broker.record.endpoints.map((endpoint) => ({ ...endpoint })),
    brokerEpoch: broker.brokerEpoch,
    state: broker.record.fenced ? 'FENCED' : 'ALIVE',
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
