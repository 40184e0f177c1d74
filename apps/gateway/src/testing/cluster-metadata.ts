// Metadata for the gateway's unit tests: brokers with endpoints and topics with leaders, as the
// controller's WatchMetadata would send them. Test code: tsconfig.lib.json leaves src/testing/ out
// of the build.
import type { BrokerMetadata, TopicMetadata, WatchMetadataResponse } from '@spool/protocol';

export function testBroker(brokerId: number, grpcPort: number, dataPort: number): BrokerMetadata {
  return {
    brokerId,
    rack: '',
    endpoints: [
      { name: 'grpc', host: '127.0.0.1', port: grpcPort },
      { name: 'data', host: '127.0.0.1', port: dataPort },
    ],
    brokerEpoch: 1n,
    state: 'ALIVE',
    decommissioned: false,
  };
}

/** A topic whose partition p is led by leaders[p] (-1: offline). */
export function testTopic(
  name: string,
  leaders: readonly number[],
  configs: Record<string, string> = {},
): TopicMetadata {
  return {
    name,
    topicId: `${name}-id`,
    internal: false,
    configs: Object.entries(configs).map(([key, value]) => ({
      name: key,
      value,
      isDefault: false,
    })),
    partitions: leaders.map((leaderId, partition) => ({
      topic: name,
      partition,
      leaderId,
      leaderEpoch: 1,
      replicas: leaderId >= 0 ? [leaderId] : [],
      isr: leaderId >= 0 ? [leaderId] : [],
      partitionEpoch: 1,
      offline: leaderId < 0,
      addingReplicas: [],
      removingReplicas: [],
    })),
  };
}

export function testSnapshot(
  metadataVersion: bigint,
  brokers: readonly BrokerMetadata[],
  topics: readonly TopicMetadata[],
): WatchMetadataResponse {
  return {
    metadataVersion,
    snapshot: true,
    brokers: [...brokers],
    topics: [...topics],
    deletedTopics: [],
    deletedBrokers: [],
    controllerAddress: '',
    coordinators: [],
    deletedCoordinators: [],
    changedPartitions: [],
    coordinatorShards: [],
  };
}
