import type { PartitionCleanerState, TopicMetadata } from '@spool/protocol';
import { ClientErrorCode, clientError, fromProtoError } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

/**
 * DescribeTopics and ListTopics through the gateway, shared by the admin and by the consumer's
 * subscriptions. A topic the gateway answers with an error is thrown as a SpoolError naming it.
 */

export async function describeTopicMetadata(
  connection: GatewayConnection,
  names: readonly string[],
  options: GatewayCallOptions,
): Promise<TopicMetadata[]> {
  const descriptions = await describeTopicDescriptions(connection, names, options);
  return descriptions.map((description) => description.topic);
}

/** DescribeTopics with what comes beside each topic's metadata (its partitions' cleaner state). */
export async function describeTopicDescriptions(
  connection: GatewayConnection,
  names: readonly string[],
  options: GatewayCallOptions,
): Promise<Array<{ topic: TopicMetadata; cleanerStates: PartitionCleanerState[] }>> {
  if (names.length === 0) return [];
  const response = await connection.call(
    (client) => client.describeTopics,
    { names: [...names] },
    options,
  );
  return names.map((name, index) => {
    const description =
      response.topics.find((candidate) => candidate.topic?.name === name) ?? response.topics[index];
    if (description?.error !== undefined && description.error.code !== '') {
      throw fromProtoError(description.error, `topic ${name}`);
    }
    if (description?.topic === undefined || description.topic.name !== name) {
      throw clientError(
        ClientErrorCode.UnknownTopicOrPartition,
        `topic ${name}: the gateway described no such topic`,
      );
    }
    return { topic: description.topic, cleanerStates: description.cleanerStates };
  });
}

export async function listTopicNames(
  connection: GatewayConnection,
  includeInternal: boolean,
  options: GatewayCallOptions,
): Promise<string[]> {
  const response = await connection.call(
    (client) => client.listTopics,
    { includeInternal },
    options,
  );
  return [...response.names].sort();
}
