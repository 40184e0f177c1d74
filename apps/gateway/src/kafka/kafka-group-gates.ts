/**
 * The group checks of the Kafka APIs that name several groups or topics beside a group, as
 * Kafka's KafkaApis makes them (kafka-authorization.ts point 4):
 *
 *   OffsetCommit READ on the group (refused: every partition GROUP_AUTHORIZATION_FAILED) and READ
 *   on each topic; OffsetFetch DESCRIBE on each group, and DESCRIBE on the topics (left out of an
 *   "every topic" answer, refused by name otherwise); FindCoordinator DESCRIBE on each group or
 *   transactional id; DescribeGroups and ConsumerGroupDescribe DESCRIBE and DeleteGroups DELETE
 *   on each group; ListGroups
 *   every group with DESCRIBE on the cluster, else the groups the caller may DESCRIBE;
 *   OffsetDelete DELETE on the group (refused: GROUP_AUTHORIZATION_FAILED at the top) and READ
 *   on each topic (refused: its partitions TOPIC_AUTHORIZATION_FAILED); ConsumerGroupHeartbeat
 *   READ on the group and DESCRIBE on every subscribed topic name, else the whole heartbeat is
 *   refused with GROUP_ or TOPIC_AUTHORIZATION_FAILED, as Kafka's KafkaApis answers them.
 * The read-only APIs are filtered after the handler answered; the others never reach it with a
 * refused group or topic.
 */
import { AclOperation, ResourceType, type RequestAuthorizer, type Caller } from '@spool/authorizer';
import {
  ApiKey,
  type ConsumerGroupDescribeRequest,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  defaultConsumerGroupHeartbeatResponse,
  defaultOffsetDeleteResponse,
  type OffsetDeleteRequest,
  type OffsetDeleteResponse,
  type ConsumerGroupDescribeResponse,
  type DeleteGroupsRequest,
  type DeleteGroupsResponse,
  type DescribeGroupsRequest,
  type DescribeGroupsResponse,
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
  type ListGroupsRequest,
  type ListGroupsResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
} from '@spool/kafka-protocol';
import { erasedGate, withErrorCode, type CustomGate } from './kafka-authorization';
import { KafkaErrorNumber } from './kafka-errors';

const groupDenied = KafkaErrorNumber.GroupAuthorizationFailed;
const topicDenied = KafkaErrorNumber.TopicAuthorizationFailed;
/** FindCoordinator's key type of a transactional id (0 is a group). */
const transactionKeyType = 1;

const allowsGroup = (
  authorizer: RequestAuthorizer,
  caller: Caller,
  operation: number,
  groupId: string,
  audit = true,
): boolean => authorizer.authorize(caller, operation, ResourceType.Group, groupId, { audit });

const offsetCommitGate: CustomGate<OffsetCommitRequest, OffsetCommitResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const refusedTopics = (topics: OffsetCommitRequest['topics'], errorCode: number) =>
    topics.map((topic) => ({
      name: topic.name,
      topicId: topic.topicId,
      partitions: topic.partitions.map((partition) => ({
        partitionIndex: partition.partitionIndex,
        errorCode,
      })),
    }));
  if (!allowsGroup(authorizer, context, AclOperation.Read, request.groupId)) {
    return { refused: { throttleTimeMs: 0, topics: refusedTopics(request.topics, groupDenied) } };
  }
  // Topics by id (v10) that nobody knows are the handler's to answer.
  const denied = request.topics.filter(
    (topic) =>
      topic.name !== '' &&
      !authorizer.authorize(context, AclOperation.Read, ResourceType.Topic, topic.name),
  );
  return {
    request: { ...request, topics: request.topics.filter((topic) => !denied.includes(topic)) },
    complete: (response) => ({
      ...response,
      topics: [...response.topics, ...refusedTopics(denied, topicDenied)],
    }),
  };
};

/** Read-only: each group refused whole, and the topics it may not see refused or left out. */
const offsetFetchGate: CustomGate<OffsetFetchRequest, OffsetFetchResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const allowsTopic = (name: string, audit: boolean) =>
    authorizer.authorize(context, AclOperation.Describe, ResourceType.Topic, name, { audit });
  const filterTopics = <Topic extends { readonly name: string }>(
    topics: readonly Topic[],
    asked: boolean,
  ): Topic[] =>
    topics.flatMap((topic) => {
      if (topic.name === '' || allowsTopic(topic.name, asked)) return [topic];
      return asked ? [withErrorCode(topic, topicDenied)] : [];
    });
  return {
    request,
    complete: (response) => {
      if (request.groups.length === 0) {
        // Before v8: the one group of the request.
        if (!allowsGroup(authorizer, context, AclOperation.Describe, request.groupId)) {
          return { ...response, errorCode: groupDenied, topics: [] };
        }
        return { ...response, topics: filterTopics(response.topics, request.topics !== null) };
      }
      return {
        ...response,
        groups: response.groups.map((group) => {
          if (!allowsGroup(authorizer, context, AclOperation.Describe, group.groupId)) {
            return { ...group, errorCode: groupDenied, topics: [] };
          }
          const asked = request.groups.find((each) => each.groupId === group.groupId)?.topics;
          return { ...group, topics: filterTopics(group.topics, asked !== null) };
        }),
      };
    },
  };
};

const findCoordinatorGate: CustomGate<FindCoordinatorRequest, FindCoordinatorResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const resourceType =
    request.keyType === transactionKeyType ? ResourceType.TransactionalId : ResourceType.Group;
  const errorCode =
    request.keyType === transactionKeyType
      ? KafkaErrorNumber.TransactionalIdAuthorizationFailed
      : groupDenied;
  const allows = (key: string) =>
    authorizer.authorize(context, AclOperation.Describe, resourceType, key);
  return {
    request,
    complete: (response) => {
      if (response.coordinators.length === 0) {
        // Before v4: the one key of the request.
        return allows(request.key)
          ? response
          : { ...response, errorCode, nodeId: -1, host: '', port: -1 };
      }
      return {
        ...response,
        coordinators: response.coordinators.map((coordinator) =>
          allows(coordinator.key)
            ? coordinator
            : { ...coordinator, errorCode, nodeId: -1, host: '', port: -1 },
        ),
      };
    },
  };
};

const describeGroupsGate: CustomGate<DescribeGroupsRequest, DescribeGroupsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => ({
  request,
  complete: (response) => ({
    ...response,
    groups: response.groups.map((group) =>
      allowsGroup(authorizer, context, AclOperation.Describe, group.groupId)
        ? group
        : { ...group, errorCode: groupDenied, groupState: '', protocolType: '', members: [] },
    ),
  }),
});

const consumerGroupDescribeGate: CustomGate<
  ConsumerGroupDescribeRequest,
  ConsumerGroupDescribeResponse
> = (request, _version, context, authorizer) => ({
  request,
  complete: (response) => ({
    ...response,
    groups: response.groups.map((group) =>
      allowsGroup(authorizer, context, AclOperation.Describe, group.groupId)
        ? group
        : { ...group, errorCode: groupDenied, groupState: '', assignorName: '', members: [] },
    ),
  }),
});

const listGroupsGate: CustomGate<ListGroupsRequest, ListGroupsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => ({
  request,
  complete: (response) => {
    const everyGroup = authorizer.authorize(
      context,
      AclOperation.Describe,
      ResourceType.Cluster,
      'kafka-cluster',
      { audit: false },
    );
    if (everyGroup) return response;
    return {
      ...response,
      groups: response.groups.filter((group) =>
        allowsGroup(authorizer, context, AclOperation.Describe, group.groupId, false),
      ),
    };
  },
});

const deleteGroupsGate: CustomGate<DeleteGroupsRequest, DeleteGroupsResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  const denied = request.groupsNames.filter(
    (groupId) => !allowsGroup(authorizer, context, AclOperation.Delete, groupId),
  );
  return {
    request: { groupsNames: request.groupsNames.filter((groupId) => !denied.includes(groupId)) },
    complete: (response) => ({
      ...response,
      results: [
        ...response.results,
        ...denied.map((groupId) => ({ groupId, errorCode: groupDenied, errorMessage: null })),
      ],
    }),
  };
};

/** The group gates by API key. */
const offsetDeleteGate: CustomGate<OffsetDeleteRequest, OffsetDeleteResponse> = (
  request,
  _version,
  context,
  authorizer,
) => {
  if (!allowsGroup(authorizer, context, AclOperation.Delete, request.groupId)) {
    return { refused: { ...defaultOffsetDeleteResponse(), errorCode: groupDenied } };
  }
  const denied = request.topics.filter(
    (topic) => !authorizer.authorize(context, AclOperation.Read, ResourceType.Topic, topic.name),
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
          })),
        })),
      ],
    }),
  };
};

const consumerGroupHeartbeatGate: CustomGate<
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse
> = (request, _version, context, authorizer) => {
  const refused = (errorCode: number, errorMessage: string) => ({
    refused: { ...defaultConsumerGroupHeartbeatResponse(), errorCode, errorMessage },
  });
  if (!allowsGroup(authorizer, context, AclOperation.Read, request.groupId)) {
    return refused(groupDenied, `${context.principal} may not READ group ${request.groupId}`);
  }
  const hidden = [...new Set(request.subscribedTopicNames ?? [])].filter(
    (name) => !authorizer.authorize(context, AclOperation.Describe, ResourceType.Topic, name),
  );
  if (hidden.length > 0) {
    return refused(
      topicDenied,
      `${context.principal} may not DESCRIBE the subscribed topics ${hidden.join(', ')}`,
    );
  }
  return { request, complete: (response) => response };
};

export function groupGates(): Array<[number, CustomGate<unknown, unknown>]> {
  return [
    [ApiKey.OffsetDelete, erasedGate(offsetDeleteGate)],
    [ApiKey.ConsumerGroupHeartbeat, erasedGate(consumerGroupHeartbeatGate)],
    [ApiKey.OffsetCommit, erasedGate(offsetCommitGate)],
    [ApiKey.OffsetFetch, erasedGate(offsetFetchGate)],
    [ApiKey.FindCoordinator, erasedGate(findCoordinatorGate)],
    [ApiKey.DescribeGroups, erasedGate(describeGroupsGate)],
    [ApiKey.ConsumerGroupDescribe, erasedGate(consumerGroupDescribeGate)],
    [ApiKey.ListGroups, erasedGate(listGroupsGate)],
    [ApiKey.DeleteGroups, erasedGate(deleteGroupsGate)],
  ];
}
