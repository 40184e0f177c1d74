import type { TopicMetadata } from '@spool/protocol';
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
    return description.topic;
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
