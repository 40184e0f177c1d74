// The topic RPCs: create, delete, add partitions, describe, list, and topic configs.
import { SpoolError } from '@spool/common';
import type {
  AlterConfigsRequest,
  AlterConfigsResponse,
  CreatePartitionsRequest,
  CreatePartitionsResponse,
  CreateTopicsRequest,
  CreateTopicsResponse,
  DeleteTopicsRequest,
  DeleteTopicsResponse,
  DescribeConfigsRequest,
  DescribeConfigsResponse,
  DescribeTopicsRequest,
  DescribeTopicsResponse,
  ListTopicsRequest,
  ListTopicsResponse,
  PartitionCleanerState,
  TopicMetadata,
} from '@spool/protocol';
import type { CleanerStateReports } from '../cleaner-state-reports';
import { topicMetadataOf } from '../metadata-conversions';
import {
  alterConfigs,
  createPartitions,
  createTopics,
  deleteTopics,
  internalTopics,
} from '../topic-commands';
import { describeTopicConfigs } from '../topic-configs';
import { protoError, topicResults, type ControllerAccess } from './controller-access';

export function createTopicsHandler(role: ControllerAccess) {
  return async (request: CreateTopicsRequest): Promise<CreateTopicsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      createTopics(
        controller.context,
        request.topics.map((topic) => ({
          name: topic.name,
          partitionCount: topic.numPartitions,
          replicationFactor: topic.replicationFactor,
          configs: topic.configs,
        })),
        request.validateOnly,
      ),
    );
    return { results: topicResults(outcomes) };
  };
}

export function deleteTopicsHandler(role: ControllerAccess) {
  return async (request: DeleteTopicsRequest): Promise<DeleteTopicsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      deleteTopics(controller.context, request.names),
    );
    return { results: topicResults(outcomes) };
  };
}

export function createPartitionsHandler(role: ControllerAccess) {
  return async (request: CreatePartitionsRequest): Promise<CreatePartitionsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      createPartitions(controller.context, request.topics, request.validateOnly),
    );
    return { results: topicResults(outcomes) };
  };
}

export function describeTopicsHandler(role: ControllerAccess) {
  return async (request: DescribeTopicsRequest): Promise<DescribeTopicsResponse> => {
    const { controller, state } = await role.requireActive();
    const names = request.names.length === 0 ? [...state.topics.keys()].sort() : request.names;
    return {
      topics: names.map((name) => {
        const topic = state.topics.get(name);
        const metadata = topic === undefined ? undefined : topicMetadataOf(topic);
        return metadata === undefined
          ? {
              error: protoError(
                new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${name}" does not exist`),
              ),
              topic: { name, topicId: '', partitions: [], configs: [], internal: false },
              cleanerStates: [],
            }
          : {
              error: undefined,
              topic: metadata,
              cleanerStates: replicaCleanerStates(controller.cleanerStates, metadata),
            };
      }),
    };
  };
}

export function listTopicsHandler(role: ControllerAccess) {
  return async (request: ListTopicsRequest): Promise<ListTopicsResponse> => {
    const { state } = await role.requireActive();
    return {
      names: [...state.topics.values()]
        .filter(
          (topic) =>
            request.includeInternal ||
            !(topic.record.internal || internalTopics.has(topic.record.name)),
        )
        .map((topic) => topic.record.name)
        .sort(),
    };
  };
}

export function describeConfigsHandler(role: ControllerAccess) {
  return async (request: DescribeConfigsRequest): Promise<DescribeConfigsResponse> => {
    const { state } = await role.requireActive();
    return {
      results: request.topics.map((name) => {
        const topic = state.topics.get(name);
        return topic === undefined
          ? {
              topic: name,
              error: protoError(
                new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${name}" does not exist`),
              ),
              configs: [],
            }
          : {
              topic: name,
              error: undefined,
              configs: describeTopicConfigs(topic.record.configs),
            };
      }),
    };
  };
}

export function alterConfigsHandler(role: ControllerAccess) {
  return async (request: AlterConfigsRequest): Promise<AlterConfigsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      alterConfigs(controller.context, request.topics, request.validateOnly),
    );
    return { results: topicResults(outcomes) };
  };
}

/** Each partition's cleaner state on each of its replicas that reported one, the leader's first. */
function replicaCleanerStates(
  reports: CleanerStateReports,
  topic: TopicMetadata,
): PartitionCleanerState[] {
  return topic.partitions.flatMap((partition) => reports.ofReplicas(topic.name, partition));
}
