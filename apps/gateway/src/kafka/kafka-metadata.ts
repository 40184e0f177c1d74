/**
 * Metadata: brokers, topics and partitions as the cluster view shows them (kafka-cluster-view.ts):
 * the storage brokers, each at a port of this gateway, and every partition's real leader, leader
 * epoch, replicas and ISR, the controller's topic ids.
 *
 * 1. Which topics: all of them for a null list (and for an empty one at v0, as Kafka reads v0),
 *    else those named, by name or (v12+, as Kafka) by topic id; a topic id before v12 is
 *    INVALID_REQUEST, which closes the connection (the v10 and v11 responses have no room for a
 *    topic without its name).
 * 2. A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (by id: UNKNOWN_TOPIC_ID). Topics
 *    are not created by Metadata (auto.create.topics.enable is off): they are created with
 *    CreateTopics, the SDK or `spool topic create`.
 * 3. A partition without a live, listed leader is LEADER_NOT_AVAILABLE with leader -1, so
 *    clients wait for the election as they do with Kafka.
 */
import {
  type MetadataRequest,
  type MetadataResponse,
  type MetadataResponsePartition,
  type MetadataResponseTopic,
  defaultMetadataResponse,
  isZeroUuid,
  readMetadataRequest,
  writeMetadataResponse,
} from '@spool/kafka-protocol';
import { SpoolError } from '@spool/common';
import type { TopicMetadata } from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { type KafkaClusterView, noBrokerId, uuidBytesOf } from './kafka-cluster-view';
import { KafkaErrorNumber } from './kafka-errors';

const metadataApiKey = 3;
/** The first Metadata version that names topics by id (KIP-516). */
const topicIdsVersion = 12;
/** Kafka's value for "authorized operations not asked for". */
const authorizedOperationsOmitted = -2147483648;

export function metadataApi(view: KafkaClusterView): KafkaApi<MetadataRequest, MetadataResponse> {
  return {
    apiKey: metadataApiKey,
    minVersion: 0,
    maxVersion: 13,
    read: readMetadataRequest,
    write: writeMetadataResponse,
    serve: async (request, version) => {
      await view.prepare();
      return {
        ...defaultMetadataResponse(),
        brokers: view
          .brokers()
          .map(({ nodeId, host, port, rack }) => ({ nodeId, host, port, rack })),
        clusterId: view.clusterId,
        controllerId: view.controllerId(),
        topics: topicsOf(view, request, version),
      };
    },
  };
}

/** Point 1 and 2. */
function topicsOf(
  view: KafkaClusterView,
  request: MetadataRequest,
  version: number,
): MetadataResponseTopic[] {
  const allTopics = request.topics === null || (version === 0 && request.topics.length === 0);
  if (allTopics) {
    return [...view.link.metadata.topics.values()]
      .sort((left, right) => left.name.localeCompare(right.name))
      .map((topic) => topicOf(view, topic));
  }
  return request.topics!.map((wanted) => {
    const byId = wanted.name === null;
    // Kafka refuses topic ids before v12, whose response cannot carry a topic without its name.
    if (version < topicIdsVersion && (byId || !isZeroUuid(wanted.topicId))) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `Metadata v${version} names topics by name only; topic ids need version ${topicIdsVersion}`,
      );
    }
    const name = byId ? view.topicNameOf(wanted.topicId) : wanted.name!;
    const topic = name === undefined ? undefined : view.topic(name);
    if (topic !== undefined) return topicOf(view, topic);
    return {
      errorCode: byId ? KafkaErrorNumber.UnknownTopicId : KafkaErrorNumber.UnknownTopicOrPartition,
      name: wanted.name,
      topicId: wanted.topicId,
      isInternal: false,
      partitions: [],
      topicAuthorizedOperations: authorizedOperationsOmitted,
    };
  });
}

function topicOf(view: KafkaClusterView, topic: TopicMetadata): MetadataResponseTopic {
  return {
    errorCode: 0,
    name: topic.name,
    topicId: uuidBytesOf(topic.topicId),
    isInternal: topic.internal,
    partitions: [...topic.partitions]
      .sort((left, right) => left.partition - right.partition)
      .map((partition): MetadataResponsePartition => {
        // Point 3.
        const leaderId = view.leaderOf(partition);
        return {
          errorCode: leaderId === noBrokerId ? KafkaErrorNumber.LeaderNotAvailable : 0,
          partitionIndex: partition.partition,
          leaderId,
          leaderEpoch: partition.leaderEpoch,
          replicaNodes: [...partition.replicas],
          isrNodes: [...partition.isr],
          offlineReplicas: partition.replicas.filter((brokerId) => !view.isAlive(brokerId)),
        };
      }),
    topicAuthorizedOperations: authorizedOperationsOmitted,
  };
}
