/**
 * The topic checks of the Kafka APIs, as Kafka's KafkaApis makes them (kafka-authorization.ts
 * point 4). Each topic the caller may not act on is left out of what the handler serves and
 * answered TOPIC_AUTHORIZATION_FAILED beside the handler's answer:
 *
 *   Produce WRITE (a transactional one WRITE on its transactional id), Fetch READ, ListOffsets
 *   and OffsetForLeaderEpoch DESCRIBE, Metadata DESCRIBE (a topic not asked for by name is left out, not refused),
 *   CreateTopics CREATE on the cluster or the topic, DeleteTopics DELETE, CreatePartitions
 *   ALTER, DeleteRecords DELETE, DescribeConfigs DESCRIBE_CONFIGS and IncrementalAlterConfigs
 *   ALTER_CONFIGS (on the topic, or the cluster for a broker), InitProducerId IDEMPOTENT_WRITE on
 *   the cluster or WRITE on some topic (KIP-679), or WRITE on its transactional id.
 */
import { AclOperation, ResourceType, type Caller, type RequestAuthorizer } from '@spool/authorizer';
import {
  ApiKey,
  type CreatePartitionsRequest,
  type CreatePartitionsResponse,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
  type DeleteTopicsRequest,
  type DeleteTopicsResponse,
  type DescribeConfigsRequest,
  type DescribeConfigsResponse,
  type FetchRequest,
  type FetchResponse,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type MetadataRequest,
  type MetadataResponse,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
  type ProduceRequest,
  type ProduceResponse,
  defaultCreatableTopicResult,
  defaultDeletableTopicResult,
  defaultFetchResponsePartitionData,
  defaultInitProducerIdResponse,
  defaultPartitionProduceResponse,
} from '@spool/kafka-protocol';
import { erasedGate, withErrorCode, type CustomGate } from './kafka-authorization';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber } from './kafka-errors';

const topicDenied = KafkaErrorNumber.TopicAuthorizationFailed;
/** DescribeConfigs' and IncrementalAlterConfigs' resource types. */
const configTopic = 2;
const configBroker = 4;
/** From these versions, topics are named by id. */
const produceTopicIdsVersion = 13;
const fetchTopicIdsVersion = 13;

function allowsTopic(
  authorizer: RequestAuthorizer,
  caller: Caller,
  operation: number,
  name: string | undefined | null,
): boolean {
  // A topic id nobody knows is the handler's to answer (UNKNOWN_TOPIC_ID).
  if (name === undefined || name === null) return true;
  return authorizer.authorize(caller, operation, ResourceType.Topic, name);
}

const produceGate: (view: KafkaClusterView) => CustomGate<ProduceRequest, ProduceResponse> =
  (view) => (request, version, context, authorizer) => {
    if (
      request.transactionalId !== null &&
      !authorizer.authorize(
        context,
        AclOperation.Write,
        ResourceType.TransactionalId,
        request.transactionalId,
      )
    ) {
      const code = KafkaErrorNumber.TransactionalIdAuthorizationFailed;
      return { refused: refusedProduce(request.topicData, request, code) };
    }
    const nameOf = (topic: ProduceRequest['topicData'][number]) =>
      version >= produceTopicIdsVersion ? view.topicNameOf(topic.topicId) : topic.name;
    const denied = request.topicData.filter(
      (topic) => !allowsTopic(authorizer, context, AclOperation.Write, nameOf(topic)),
    );
    return {
      request: { ...request, topicData: request.topicData.filter((t) => !denied.includes(t)) },
      complete: (response) =>
        response === undefined
          ? response
          : {
              ...response,
              responses: [
                ...response.responses,
                ...refusedProduce(denied, request, topicDenied).responses,
              ],
            },
    };
  };

function refusedProduce(
  topics: ProduceRequest['topicData'],
  request: ProduceRequest,
  errorCode: number,
): ProduceResponse {
  // acks=0: no answer at all, refused or not.
  if (request.acks === 0) return undefined as unknown as ProduceResponse;
  return {
    throttleTimeMs: 0,
    nodeEndpoints: [],
    responses: topics.map((topic) => ({
      name: topic.name,
      topicId: topic.topicId,
      partitionResponses: topic.partitionData.map((partition) => ({
        ...defaultPartitionProduceResponse(),
        index: partition.index,
        errorCode,
        baseOffset: -1n,
      })),
    })),
  };
}

/**
 * Fetch READ. The request's topics are checked before the handler runs; the answer is checked
 * again, because an incremental fetch (KIP-227) serves every partition of its session, and one
 * added while READ was allowed must not keep flowing once the ACL is gone: as Kafka's broker,
 * each partition of the session is authorized on every fetch.
 */
const fetchGate: (view: KafkaClusterView) => CustomGate<FetchRequest, FetchResponse> =
  (view) => (request, version, context, authorizer) => {
    const nameOf = (topic: { topic: string; topicId: Buffer }) =>
      version >= fetchTopicIdsVersion ? view.topicNameOf(topic.topicId) : topic.topic;
    const readable = (topic: { topic: string; topicId: Buffer }) =>
      allowsTopic(authorizer, context, AclOperation.Read, nameOf(topic));
    const denied = request.topics.filter((topic) => !readable(topic));
    const refusedTopic = (
      topic: { topic: string; topicId: Buffer },
      partitions: readonly number[],
    ): FetchResponse['responses'][number] => ({
      topic: topic.topic,
      topicId: topic.topicId,
      partitions: partitions.map((partitionIndex) => ({
        ...defaultFetchResponsePartitionData(),
        partitionIndex,
        errorCode: topicDenied,
        records: Buffer.alloc(0),
      })),
    });
    return {
      request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
      complete: (response) => ({
        ...response,
        responses: [
          ...response.responses.map((topic) =>
            readable(topic)
              ? topic
              : refusedTopic(
                  topic,
                  topic.partitions.map((partition) => partition.partitionIndex),
                ),
          ),
          ...denied.map((topic) =>
            refusedTopic(
              topic,
              topic.partitions.map((partition) => partition.partition),
            ),
          ),
        ],
      }),
    };
  };

const listOffsetsGate: CustomGate<ListOffsetsRequest, ListOffsetsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const denied = request.topics.filter(
    (topic) => !allowsTopic(authorizer, context, AclOperation.Describe, topic.name),
  );
  return {
    request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
    complete: (response) => ({
      ...response,
      topics: [
        ...response.topics,
        ...denied.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => ({
            partitionIndex: partition.partitionIndex,
            errorCode: topicDenied,
            timestamp: -1n,
            offset: -1n,
            leaderEpoch: -1,
          })),
        })),
      ],
    }),
  };
};

/** Metadata reads nothing it should not show: its answer is filtered after the fact. */
const metadataGate: CustomGate<MetadataRequest, MetadataResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const named = new Set((request.topics ?? []).map((topic) => topic.name));
  return {
    request,
    complete: (response) => ({
      ...response,
      topics: response.topics.flatMap((topic) => {
        const allowed = authorizer.authorize(
          context,
          AclOperation.Describe,
          ResourceType.Topic,
          topic.name ?? '',
          { audit: named.has(topic.name ?? '') },
        );
        if (allowed || topic.name === null) return [topic];
        // Kafka leaves out the topics it was not asked for by name, refuses the others.
        if (!named.has(topic.name)) return [];
        return [{ ...topic, errorCode: topicDenied, partitions: [], isInternal: false }];
      }),
    }),
  };
};

/** Read-only: each topic the caller may not DESCRIBE is answered refused. */
const offsetForLeaderEpochGate: CustomGate<
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse
> = (request, _version, context, authorizer) => ({
  request,
  complete: (response) => ({
    ...response,
    topics: response.topics.map((topic) =>
      allowsTopic(authorizer, context, AclOperation.Describe, topic.topic)
        ? topic
        : withErrorCode(topic, topicDenied),
    ),
  }),
});

const createTopicsGate: CustomGate<CreateTopicsRequest, CreateTopicsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const onCluster = authorizer.authorize(
    context,
    AclOperation.Create,
    ResourceType.Cluster,
    'kafka-cluster',
    { audit: false },
  );
  const denied = onCluster
    ? []
    : request.topics.filter(
        (topic) => !allowsTopic(authorizer, context, AclOperation.Create, topic.name),
      );
  return {
    request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
    complete: (response) => ({
      ...response,
      topics: [
        ...response.topics,
        ...denied.map((topic) => ({
          ...defaultCreatableTopicResult(),
          name: topic.name,
          errorCode: topicDenied,
          errorMessage: `${context.principal} is not authorized to CREATE TOPIC ${topic.name}`,
        })),
      ],
    }),
  };
};

const deleteTopicsGate: (
  view: KafkaClusterView,
) => CustomGate<DeleteTopicsRequest, DeleteTopicsResponse> =
  (view) => (request, _version, context, authorizer) => {
    const allows = (name: string | null | undefined) =>
      allowsTopic(authorizer, context, AclOperation.Delete, name);
    const deniedNames = request.topicNames.filter((name) => !allows(name));
    const deniedStates = request.topics.filter(
      (topic) => !allows(topic.name ?? view.topicNameOf(topic.topicId)),
    );
    return {
      request: {
        ...request,
        topicNames: request.topicNames.filter((name) => !deniedNames.includes(name)),
        topics: request.topics.filter((topic) => !deniedStates.includes(topic)),
      },
      complete: (response) => ({
        ...response,
        responses: [
          ...response.responses,
          ...[
            ...deniedNames.map((name) => ({ name, topicId: Buffer.alloc(16) })),
            ...deniedStates,
          ].map((topic) => ({
            ...defaultDeletableTopicResult(),
            name: topic.name,
            topicId: topic.topicId,
            errorCode: topicDenied,
          })),
        ],
      }),
    };
  };

const createPartitionsGate: CustomGate<CreatePartitionsRequest, CreatePartitionsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const denied = request.topics.filter(
    (topic) => !allowsTopic(authorizer, context, AclOperation.Alter, topic.name),
  );
  return {
    request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
    complete: (response) => ({
      ...response,
      results: [
        ...response.results,
        ...denied.map((topic) => ({
          name: topic.name,
          errorCode: topicDenied,
          errorMessage: null,
        })),
      ],
    }),
  };
};

const deleteRecordsGate: CustomGate<DeleteRecordsRequest, DeleteRecordsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const denied = request.topics.filter(
    (topic) => !allowsTopic(authorizer, context, AclOperation.Delete, topic.name),
  );
  return {
    request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
    complete: (response) => ({
      ...response,
      topics: [
        ...response.topics,
        ...denied.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => ({
            partitionIndex: partition.partitionIndex,
            lowWatermark: -1n,
            errorCode: topicDenied,
          })),
        })),
      ],
    }),
  };
};

/** The code and whether a config resource is allowed: topics by name, brokers on the cluster. */
function configResourceDenial(
  authorizer: RequestAuthorizer,
  caller: Caller,
  operation: number,
  resource: { readonly resourceType: number; readonly resourceName: string },
): number | undefined {
  if (resource.resourceType === configTopic) {
    return allowsTopic(authorizer, caller, operation, resource.resourceName)
      ? undefined
      : topicDenied;
  }
  if (resource.resourceType === configBroker) {
    return authorizer.authorizeCluster(caller, operation)
      ? undefined
      : KafkaErrorNumber.ClusterAuthorizationFailed;
  }
  return undefined;
}

const describeConfigsGate: CustomGate<DescribeConfigsRequest, DescribeConfigsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const denials = request.resources.map((resource) =>
    configResourceDenial(authorizer, context, AclOperation.DescribeConfigs, resource),
  );
  const denied = request.resources.filter((_, index) => denials[index] !== undefined);
  return {
    request: { ...request, resources: request.resources.filter((r) => !denied.includes(r)) },
    complete: (response) => ({
      ...response,
      results: [
        ...response.results,
        ...denied.map((resource) => ({
          errorCode: denials[request.resources.indexOf(resource)]!,
          errorMessage: null,
          resourceType: resource.resourceType,
          resourceName: resource.resourceName,
          configs: [],
        })),
      ],
    }),
  };
};

const incrementalAlterConfigsGate: CustomGate<
  IncrementalAlterConfigsRequest,
  IncrementalAlterConfigsResponse
> = (request, _version, context, authorizer) => {
  const denials = request.resources.map((resource) =>
    configResourceDenial(authorizer, context, AclOperation.AlterConfigs, resource),
  );
  const denied = request.resources.filter((_, index) => denials[index] !== undefined);
  return {
    request: { ...request, resources: request.resources.filter((r) => !denied.includes(r)) },
    complete: (response) => ({
      ...response,
      responses: [
        ...response.responses,
        ...denied.map((resource) => ({
          errorCode: denials[request.resources.indexOf(resource)]!,
          errorMessage: null,
          resourceType: resource.resourceType,
          resourceName: resource.resourceName,
        })),
      ],
    }),
  };
};

const initProducerIdGate: CustomGate<InitProducerIdRequest, InitProducerIdResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const refused = (errorCode: number) => ({
    refused: { ...defaultInitProducerIdResponse(), errorCode },
  });
  if (request.transactionalId !== null) {
    return authorizer.authorize(
      context,
      AclOperation.Write,
      ResourceType.TransactionalId,
      request.transactionalId,
    )
      ? { request, complete: (response) => response }
      : refused(KafkaErrorNumber.TransactionalIdAuthorizationFailed);
  }
  const idempotent =
    authorizer.authorizeByResourceType(context, AclOperation.Write, ResourceType.Topic) ||
    authorizer.authorizeCluster(context, AclOperation.IdempotentWrite);
  return idempotent
    ? { request, complete: (response) => response }
    : refused(KafkaErrorNumber.ClusterAuthorizationFailed);
};

/** The topic gates by API key. */
export function topicGates(view: KafkaClusterView): Array<[number, CustomGate<unknown, unknown>]> {
  return [
    [ApiKey.Produce, erasedGate(produceGate(view))],
    [ApiKey.Fetch, erasedGate(fetchGate(view))],
    [ApiKey.ListOffsets, erasedGate(listOffsetsGate)],
    [ApiKey.Metadata, erasedGate(metadataGate)],
    [ApiKey.OffsetForLeaderEpoch, erasedGate(offsetForLeaderEpochGate)],
    [ApiKey.CreateTopics, erasedGate(createTopicsGate)],
    [ApiKey.DeleteTopics, erasedGate(deleteTopicsGate(view))],
    [ApiKey.CreatePartitions, erasedGate(createPartitionsGate)],
    [ApiKey.DeleteRecords, erasedGate(deleteRecordsGate)],
    [ApiKey.DescribeConfigs, erasedGate(describeConfigsGate)],
    [ApiKey.IncrementalAlterConfigs, erasedGate(incrementalAlterConfigsGate)],
    [ApiKey.InitProducerId, erasedGate(initProducerIdGate)],
  ];
}
