/**
 * The admin RPCs, forwarded to the active controller through the metadata link's channel
 * (NOT_CONTROLLER answers are followed to the controller they name). The controller's answers
 * pass through unchanged, per-topic errors included.
 *
 * A topic created, grown or deleted through this gateway is also waited for in the gateway's own
 * metadata (bounded by metadataPropagationWaitMs), so a client that creates a topic and produces
 * to it next through the same gateway does not get UNKNOWN_TOPIC_OR_PARTITION in between. When
 * the wait runs out the controller's answer is returned all the same: the change is made.
 */
import { callOnce } from '@spool/common';
import type {
  AlterBrokerConfigsRequest,
  AlterBrokerConfigsResponse,
  AlterConfigsRequest,
  AlterConfigsResponse,
  AlterPartitionReassignmentsRequest,
  AlterPartitionReassignmentsResponse,
  CreatePartitionsRequest,
  CreatePartitionsResponse,
  CreateTopicsRequest,
  CreateTopicsResponse,
  DecommissionBrokerRequest,
  DecommissionBrokerResponse,
  DeleteTopicsRequest,
  DeleteTopicsResponse,
  DescribeBrokerConfigsRequest,
  DescribeBrokerConfigsResponse,
  DescribeClusterRequest,
  DescribeClusterResponse,
  DescribeLogDirsRequest,
  DescribeLogDirsResponse,
  DescribeConfigsRequest,
  DescribeConfigsResponse,
  DescribeTopicsRequest,
  DescribeTopicsResponse,
  ListPartitionReassignmentsRequest,
  ListPartitionReassignmentsResponse,
  ListTopicsRequest,
  ListTopicsResponse,
} from '@spool/protocol';
import type { MetadataLink } from './metadata-link';

/** One call to the controller; topic creation writes to the metadata store, so allow seconds. */
const controllerCallDeadlineMs = 15_000;
/** How long a topic change is waited for in the gateway's metadata before answering. */
const metadataPropagationWaitMs = 5_000;

/** Whether this gateway's metadata shows a topic with its partitions, each with a leader. */
export function topicShown(link: MetadataLink, name: string, partitionCount: number): boolean {
  const topic = link.metadata.topics.get(name);
  return (
    topic !== undefined &&
    topic.partitions.length >= partitionCount &&
    topic.partitions.every((partition) => partition.leaderId >= 0)
  );
}

/**
 * `metadataWaitMs` bounds the wait for a change to show in this gateway's metadata; a Kafka
 * request sets it from its timeoutMs (0: no wait).
 */
export function adminHandlers(link: MetadataLink, metadataWaitMs = metadataPropagationWaitMs) {
  const topicReady = (name: string, partitionCount: number): boolean =>
    topicShown(link, name, partitionCount);

  return {
    createTopics: async (request: CreateTopicsRequest): Promise<CreateTopicsResponse> => {
      const response = await link.channel.call((client) =>
        callOnce(client, client.createTopics, request, { deadlineMs: controllerCallDeadlineMs }),
      );
      if (!request.validateOnly) {
        const created = request.topics.filter((topic) =>
          response.results.some((result) => result.name === topic.name && !result.error),
        );
        await link.waitUntil(
          () => created.every((topic) => topicReady(topic.name, topic.numPartitions)),
          metadataWaitMs,
        );
      }
      return response;
    },

    deleteTopics: async (request: DeleteTopicsRequest): Promise<DeleteTopicsResponse> => {
      const response = await link.channel.call((client) =>
        callOnce(client, client.deleteTopics, request, { deadlineMs: controllerCallDeadlineMs }),
      );
      const deleted = response.results.filter((result) => !result.error);
      await link.waitUntil(
        () => deleted.every((result) => !link.metadata.topics.has(result.name)),
        metadataWaitMs,
      );
      return response;
    },

    createPartitions: async (
      request: CreatePartitionsRequest,
    ): Promise<CreatePartitionsResponse> => {
      const response = await link.channel.call((client) =>
        callOnce(client, client.createPartitions, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      );
      if (!request.validateOnly) {
        const grown = request.topics.filter((topic) =>
          response.results.some((result) => result.name === topic.name && !result.error),
        );
        await link.waitUntil(
          () => grown.every((topic) => topicReady(topic.name, topic.count)),
          metadataWaitMs,
        );
      }
      return response;
    },

    describeTopics: (request: DescribeTopicsRequest): Promise<DescribeTopicsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeTopics, request, { deadlineMs: controllerCallDeadlineMs }),
      ),

    listTopics: (request: ListTopicsRequest): Promise<ListTopicsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.listTopics, request, { deadlineMs: controllerCallDeadlineMs }),
      ),

    describeConfigs: (request: DescribeConfigsRequest): Promise<DescribeConfigsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeConfigs, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    alterConfigs: (request: AlterConfigsRequest): Promise<AlterConfigsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.alterConfigs, request, { deadlineMs: controllerCallDeadlineMs }),
      ),

    describeBrokerConfigs: (
      request: DescribeBrokerConfigsRequest,
    ): Promise<DescribeBrokerConfigsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeBrokerConfigs, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    alterBrokerConfigs: (request: AlterBrokerConfigsRequest): Promise<AlterBrokerConfigsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.alterBrokerConfigs, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    describeLogDirs: (request: DescribeLogDirsRequest): Promise<DescribeLogDirsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeLogDirs, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    describeCluster: (request: DescribeClusterRequest): Promise<DescribeClusterResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeCluster, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    alterPartitionReassignments: (
      request: AlterPartitionReassignmentsRequest,
    ): Promise<AlterPartitionReassignmentsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.alterPartitionReassignments, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    decommissionBroker: (request: DecommissionBrokerRequest): Promise<DecommissionBrokerResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.decommissionBroker, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),

    listPartitionReassignments: (
      request: ListPartitionReassignmentsRequest,
    ): Promise<ListPartitionReassignmentsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.listPartitionReassignments, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),
  };
}
