/**
 * CreateTopics, DeleteTopics and DescribeCluster, forwarded to the active controller through the
 * gateway's own admin handlers (admin-handlers.ts), which also wait until this gateway's metadata
 * shows the change, so a client that creates a topic and produces to it next succeeds.
 *
 * 1. numPartitions and replicationFactor -1 take the cluster's defaults, as in Kafka. Manual
 *    replica assignments are not served: such a topic is INVALID_REQUEST, nothing created.
 * 2. From DeleteTopics version 6 topics may be named by id.
 * 3. DescribeCluster shows the cluster as Metadata does: the storage brokers at this gateway's
 *    ports, the lowest listed one as controller; v2 lists the fenced ones when asked.
 * 4. DescribeConfigs describes topics (set or default, by the controller) and brokers (their
 *    dynamic configs, kafka-broker-configs.ts).
 * 5. CreateTopics and DeleteTopics wait up to their timeoutMs for the change to show in this
 *    gateway's metadata, REQUEST_TIMED_OUT after (kafka-admin-timeout.ts).
 */
import {
  type CreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
  type DeleteTopicsRequest,
  type DeleteTopicsResponse,
  type DescribeClusterRequest,
  type DescribeConfigsRequest,
  type DescribeConfigsResponse,
  type DescribeConfigsResult,
  defaultDescribeConfigsResourceResult,
  defaultDescribeConfigsResponse,
  defaultDescribeConfigsResult,
  readDescribeConfigsRequest,
  writeDescribeConfigsResponse,
  type DescribeClusterResponse,
  defaultCreatableTopicResult,
  defaultCreateTopicsResponse,
  defaultDeleteTopicsResponse,
  defaultDescribeClusterResponse,
  readCreateTopicsRequest,
  readDeleteTopicsRequest,
  readDescribeClusterRequest,
  writeCreateTopicsResponse,
  writeDeleteTopicsResponse,
  writeDescribeClusterResponse,
} from '@spool/kafka-protocol';
import { adminHandlers, topicShown } from '../admin-handlers';
import { changeNotShown, metadataWaitMsOf, topicGone } from './kafka-admin-timeout';
import type { KafkaApi } from './kafka-api-dispatcher';
import { brokerResourceType, describeBrokerResources } from './kafka-broker-configs';
import { type KafkaClusterView, uuidBytesOf } from './kafka-cluster-view';
import { KafkaErrorNumber, kafkaErrorOf } from './kafka-errors';

const ApiKey = {
  CreateTopics: 19,
  DeleteTopics: 20,
  DescribeConfigs: 32,
  DescribeCluster: 60,
} as const;
const topicResourceType = 2;
/** Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG. */
const topicConfigSource = 1;
const defaultConfigSource = 5;
/** The first CreateTopics version whose answer carries partitions and replication factor. */
const createdDetailsVersion = 5;
/** The first DeleteTopics version that names topics as states (name or id). */
const deleteStatesVersion = 6;
const brokersEndpointType = 1;
const unsupportedEndpointType = 119;

function waitMsOf(request: {
  readonly timeoutMs: number;
  readonly validateOnly?: boolean;
}): number {
  return request.validateOnly === true ? 0 : metadataWaitMsOf(request.timeoutMs);
}

export function adminApis(view: KafkaClusterView): Array<KafkaApi<never, never>> {
  const { link } = view;
  const admin = adminHandlers(link);

  const createTopics: KafkaApi<CreateTopicsRequest, CreateTopicsResponse> = {
    apiKey: ApiKey.CreateTopics,
    minVersion: 2,
    maxVersion: 7,
    read: readCreateTopicsRequest,
    write: writeCreateTopicsResponse,
    serve: async (request, version) => {
      // Point 1.
      const creatable = request.topics.filter((topic) => topic.assignments.length === 0);
      const answer =
        creatable.length === 0
          ? { results: [] }
          : await adminHandlers(link, waitMsOf(request)).createTopics({
              topics: creatable.map((topic) => ({
                name: topic.name,
                numPartitions: topic.numPartitions,
                replicationFactor: topic.replicationFactor,
                configs: topic.configs
                  .filter((config) => config.value !== null)
                  .map((config) => ({ name: config.name, value: config.value!, isDefault: false })),
              })),
              validateOnly: request.validateOnly,
            });
      const results = new Map(answer.results.map((result) => [result.name, result]));
      return {
        ...defaultCreateTopicsResponse(),
        topics: request.topics.map((topic): CreatableTopicResult => {
          const base = { ...defaultCreatableTopicResult(), name: topic.name };
          const result = results.get(topic.name);
          if (topic.assignments.length > 0 || result === undefined) {
            return {
              ...base,
              errorCode: KafkaErrorNumber.InvalidRequest,
              errorMessage: `topic "${topic.name}": manual replica assignments are not served`,
            };
          }
          const created = view.topic(topic.name);
          const details =
            version >= createdDetailsVersion && result.error === undefined && created !== undefined
              ? {
                  numPartitions: created.partitions.length,
                  replicationFactor: created.partitions[0]?.replicas.length ?? -1,
                }
              : {};
          // Point 5.
          const shown =
            request.validateOnly ||
            result.error !== undefined ||
            topicShown(link, topic.name, created?.partitions.length ?? 1);
          return {
            ...base,
            ...(shown
              ? kafkaErrorOf(result.error)
              : changeNotShown(topic.name, 'created', request.timeoutMs)),
            topicId: uuidBytesOf(result.topicId),
            ...details,
          };
        }),
      };
    },
  };

  const deleteTopics: KafkaApi<DeleteTopicsRequest, DeleteTopicsResponse> = {
    apiKey: ApiKey.DeleteTopics,
    minVersion: 1,
    maxVersion: 6,
    read: readDeleteTopicsRequest,
    write: writeDeleteTopicsResponse,
    serve: async (request, version) => {
      // Point 2.
      const named =
        version >= deleteStatesVersion
          ? request.topics.map((topic) => ({
              topicId: topic.topicId,
              name: topic.name ?? view.topicNameOf(topic.topicId),
            }))
          : request.topicNames.map((name) => ({ topicId: view.topicIdOf(name), name }));
      const deletable = named.filter((entry) => entry.name !== undefined);
      const answer =
        deletable.length === 0
          ? { results: [] }
          : await adminHandlers(link, waitMsOf(request)).deleteTopics({
              names: deletable.map((entry) => entry.name!),
            });
      const results = new Map(answer.results.map((result) => [result.name, result]));
      return {
        ...defaultDeleteTopicsResponse(),
        responses: named.map(({ topicId, name }) => {
          const result = name === undefined ? undefined : results.get(name);
          if (result === undefined) {
            return {
              name: name ?? null,
              topicId,
              errorCode: KafkaErrorNumber.UnknownTopicId,
              errorMessage: `no topic has id ${topicId.toString('hex')}`,
            };
          }
          // Point 5.
          if (result.error === undefined && !topicGone(link, name!)) {
            return { name: name!, topicId, ...changeNotShown(name!, 'deleted', request.timeoutMs) };
          }
          return { name: name!, topicId, ...kafkaErrorOf(result.error) };
        }),
      };
    },
  };

  const describeCluster: KafkaApi<DescribeClusterRequest, DescribeClusterResponse> = {
    apiKey: ApiKey.DescribeCluster,
    minVersion: 0,
    maxVersion: 2,
    read: readDescribeClusterRequest,
    write: writeDescribeClusterResponse,
    serve: async (request) => {
      // Point 3.
      if (request.endpointType !== brokersEndpointType) {
        return {
          ...defaultDescribeClusterResponse(),
          errorCode: unsupportedEndpointType,
          errorMessage: `endpoint type ${request.endpointType}: only brokers (1) are served`,
        };
      }
      await view.prepare();
      return {
        ...defaultDescribeClusterResponse(),
        clusterId: view.clusterId ?? '',
        controllerId: view.controllerId(),
        brokers: view.brokers(request.includeFencedBrokers).map((broker) => ({
          brokerId: broker.nodeId,
          host: broker.host,
          port: broker.port,
          rack: broker.rack,
          isFenced: broker.fenced,
        })),
      };
    },
  };

  const describeConfigs: KafkaApi<DescribeConfigsRequest, DescribeConfigsResponse> = {
    apiKey: ApiKey.DescribeConfigs,
    minVersion: 1,
    maxVersion: 4,
    read: readDescribeConfigsRequest,
    write: writeDescribeConfigsResponse,
    serve: async (request) => {
      // Point 4.
      const topics = request.resources
        .filter((resource) => resource.resourceType === topicResourceType)
        .map((resource) => resource.resourceName);
      const [answer, brokerResults] = await Promise.all([
        topics.length === 0 ? { results: [] } : admin.describeConfigs({ topics }),
        describeBrokerResources(
          admin,
          request.resources.filter((resource) => resource.resourceType === brokerResourceType),
          request.includeSynonyms,
        ),
      ]);
      const byTopic = new Map(answer.results.map((result) => [result.topic, result]));
      return {
        ...defaultDescribeConfigsResponse(),
        results: request.resources.map((resource): DescribeConfigsResult => {
          const base = {
            ...defaultDescribeConfigsResult(),
            resourceType: resource.resourceType,
            resourceName: resource.resourceName,
          };
          if (resource.resourceType === brokerResourceType) return brokerResults.shift()!;
          const described =
            resource.resourceType === topicResourceType
              ? byTopic.get(resource.resourceName)
              : undefined;
          if (described === undefined) {
            return {
              ...base,
              errorCode: KafkaErrorNumber.InvalidRequest,
              errorMessage: `resource type ${resource.resourceType} is not served: topics (2) and brokers (4) are`,
            };
          }
          const wanted =
            resource.configurationKeys === null ? undefined : new Set(resource.configurationKeys);
          return {
            ...base,
            ...kafkaErrorOf(described.error),
            configs: described.configs
              .filter((config) => wanted === undefined || wanted.has(config.name))
              .map((config) => ({
                ...defaultDescribeConfigsResourceResult(),
                name: config.name,
                value: config.value,
                configSource: config.isDefault ? defaultConfigSource : topicConfigSource,
              })),
          };
        }),
      };
    },
  };

  return [createTopics, deleteTopics, describeCluster, describeConfigs] as unknown as Array<
    KafkaApi<never, never>
  >;
}
