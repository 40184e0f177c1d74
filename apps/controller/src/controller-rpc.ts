/**
 * The controller's gRPC API: each handler asks the role for the active controller (a standby
 * answers NOT_CONTROLLER naming the active one), runs writes through the command queue, and
 * answers per topic with Kafka's error names where Kafka answers per topic.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import { SpoolError } from '@spool/common';
import type {
  AllocateProducerIdsRequest,
  AllocateProducerIdsResponse,
  AlterConfigsRequest,
  AlterConfigsResponse,
  AlterPartitionRequest,
  AlterPartitionResponse,
  AlterPartitionTopicResult,
  BrokerHeartbeatRequest,
  BrokerHeartbeatResponse,
  ControlledShutdownRequest,
  ControlledShutdownResponse,
  CoordinatorHeartbeatRequest,
  CoordinatorHeartbeatResponse,
  CreatePartitionsRequest,
  CreatePartitionsResponse,
  CreateTopicsRequest,
  CreateTopicsResponse,
  DeleteTopicsRequest,
  DeleteTopicsResponse,
  DescribeClusterResponse,
  DescribeConfigsRequest,
  DescribeConfigsResponse,
  DescribeTopicsRequest,
  DescribeTopicsResponse,
  EnsureOffsetsTopicResponse,
  ListTopicsRequest,
  ListTopicsResponse,
  ProtoError,
  RegisterBrokerRequest,
  RegisterBrokerResponse,
  WatchMetadataRequest,
  WatchMetadataResponse,
} from '@spool/protocol';
import type { ActiveController } from './active-controller';
import type { ClusterState } from './cluster-state';
import { partitionMetadataOf, sortedBrokers, topicMetadataOf } from './metadata-conversions';
import { ensureOffsetsTopic } from './offsets-topic';
import {
  type BrokerWatch,
  brokerWatchOf,
  type CoordinatorWatch,
  coordinatorWatchOf,
  type MetadataPublisher,
} from './metadata-publisher';
import { type AlterPartitionItem, alterPartitions } from './partition-commands';
import { allocateProducerIdBlock } from './producer-id-blocks';
import { describeTopicConfigs } from './topic-configs';
import {
  alterConfigs,
  createPartitions,
  createTopics,
  deleteTopics,
  internalTopics,
  type TopicOutcome,
} from './topic-commands';

/**
 * The most partitions one AlterPartition may name: the controller's queue waits behind the
 * request's transactions (100 partitions each), so a leader sends more as several requests.
 */
export const alterPartitionMaxPartitions = 2_000;

function protoError(error: SpoolError | undefined): ProtoError | undefined {
  return error === undefined
    ? undefined
    : { code: error.code, message: error.message, retriable: error.retriable };
}

function topicResults(outcomes: readonly TopicOutcome[]) {
  return outcomes.map((outcome) => ({
    name: outcome.name,
    error: protoError(outcome.error),
    topicId: outcome.topicId ?? '',
  }));
}

function requireInt32(value: number, field: string, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `${field} is ${value}; it must be an integer of at least ${min}`,
    );
  }
}

/**
 * How often a coordinator should heartbeat: a quarter of its session, at most 2 s, so a few lost
 * heartbeats do not end a session and a dead coordinator is noticed within the timeout.
 */
export function coordinatorHeartbeatIntervalMs(sessionTimeoutMs: number): number {
  return Math.max(50, Math.min(2_000, Math.floor(sessionTimeoutMs / 4)));
}

/** How the handlers reach the active controller: the role, once the controller has one. */
export interface ControllerAccess {
  requireActive(): Promise<{ controller: ActiveController; state: ClusterState }>;
  activeAddress(): Promise<string>;
}

export function controllerHandlers(role: ControllerAccess, publisher: MetadataPublisher) {
  return {
    registerBroker: async (request: RegisterBrokerRequest): Promise<RegisterBrokerResponse> => {
      const { controller } = await role.requireActive();
      const brokerEpoch = await controller.queue.run(() =>
        controller.brokers.register({
          brokerId: request.brokerId,
          rack: request.rack,
          endpoints: request.endpoints,
          incarnationId: request.incarnationId,
        }),
      );
      return { error: undefined, brokerEpoch };
    },

    brokerHeartbeat: async (request: BrokerHeartbeatRequest): Promise<BrokerHeartbeatResponse> => {
      const { controller } = await role.requireActive();
      const { fenced, logDirChanged } = controller.brokers.heartbeat(
        request.brokerId,
        request.brokerEpoch,
        request.logDirOffline,
      );
      // Most heartbeats change nothing and skip the queue; a data directory going offline or
      // coming back writes elections, so it waits its turn. A write that fails is tried again
      // at the next heartbeat, which reports the same state.
      if (logDirChanged) {
        await controller.queue
          .run(() =>
            controller.brokers.setLogDirOffline(
              request.brokerId,
              request.brokerEpoch,
              request.logDirOffline,
            ),
          )
          .catch((error: unknown) =>
            controller.context.logger.warn(
              { err: error, brokerId: request.brokerId },
              "recording a broker's data directory state failed; the next heartbeat retries",
            ),
          );
      }
      return {
        fenced,
        error: fenced
          ? protoError(
              new SpoolError(
                'STALE_BROKER_EPOCH',
                `broker ${request.brokerId} epoch ${request.brokerEpoch} is fenced or stale; register again`,
              ),
            )
          : undefined,
      };
    },

    controlledShutdown: async (
      request: ControlledShutdownRequest,
    ): Promise<ControlledShutdownResponse> => {
      const { controller } = await role.requireActive();
      const remaining = await controller.queue.run(() =>
        controller.brokers.controlledShutdown(request.brokerId, request.brokerEpoch),
      );
      return { error: undefined, remainingPartitions: remaining };
    },

    createTopics: async (request: CreateTopicsRequest): Promise<CreateTopicsResponse> => {
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
    },

    deleteTopics: async (request: DeleteTopicsRequest): Promise<DeleteTopicsResponse> => {
      const { controller } = await role.requireActive();
      const outcomes = await controller.queue.run(() =>
        deleteTopics(controller.context, request.names),
      );
      return { results: topicResults(outcomes) };
    },

    createPartitions: async (
      request: CreatePartitionsRequest,
    ): Promise<CreatePartitionsResponse> => {
      const { controller } = await role.requireActive();
      const outcomes = await controller.queue.run(() =>
        createPartitions(controller.context, request.topics, request.validateOnly),
      );
      return { results: topicResults(outcomes) };
    },

    describeTopics: async (request: DescribeTopicsRequest): Promise<DescribeTopicsResponse> => {
      const { state } = await role.requireActive();
      const names = request.names.length === 0 ? [...state.topics.keys()].sort() : request.names;
      return {
        topics: names.map((name) => {
          const topic = state.topics.get(name);
          return topic === undefined
            ? {
                error: protoError(
                  new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${name}" does not exist`),
                ),
                topic: { name, topicId: '', partitions: [], configs: [], internal: false },
              }
            : { error: undefined, topic: topicMetadataOf(topic) };
        }),
      };
    },

    listTopics: async (request: ListTopicsRequest): Promise<ListTopicsResponse> => {
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
    },

    describeConfigs: async (request: DescribeConfigsRequest): Promise<DescribeConfigsResponse> => {
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
    },

    alterConfigs: async (request: AlterConfigsRequest): Promise<AlterConfigsResponse> => {
      const { controller } = await role.requireActive();
      const outcomes = await controller.queue.run(() =>
        alterConfigs(controller.context, request.topics, request.validateOnly),
      );
      return { results: topicResults(outcomes) };
    },

    describeCluster: async (): Promise<DescribeClusterResponse> => {
      const { state } = await role.requireActive();
      return {
        clusterId: state.clusterId,
        controllerId: -1,
        controllerAddress: await role.activeAddress(),
        brokers: sortedBrokers(state),
        metadataVersion: state.revision,
      };
    },

    alterPartition: async (request: AlterPartitionRequest): Promise<AlterPartitionResponse> => {
      requireInt32(request.brokerId, 'broker_id', 0);
      const partitions: AlterPartitionItem[] = [];
      for (const topic of request.topics) {
        for (const item of topic.partitions) {
          requireInt32(item.partition, `partition of topic ${topic.topic}`, 0);
          partitions.push({ topic: topic.topic, ...item });
        }
      }
      if (partitions.length > alterPartitionMaxPartitions) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `AlterPartition names ${partitions.length} partitions; at most ${alterPartitionMaxPartitions} per request`,
        );
      }
      const { controller } = await role.requireActive();
      let results;
      try {
        results = await controller.queue.run(() =>
          alterPartitions(controller.context, controller.brokers, {
            brokerId: request.brokerId,
            brokerEpoch: request.brokerEpoch,
            partitions,
          }),
        );
      } catch (error) {
        if (
          !(error instanceof SpoolError) ||
          error.code === 'NOT_CONTROLLER' ||
          error.code === 'UNAVAILABLE'
        ) {
          throw error;
        }
        return { error: protoError(error), topics: [] };
      }
      const topics = new Map<string, AlterPartitionTopicResult>();
      for (const result of results) {
        let topic = topics.get(result.item.topic);
        if (topic === undefined) {
          topic = { topic: result.item.topic, partitions: [] };
          topics.set(result.item.topic, topic);
        }
        topic.partitions.push({
          partition: result.item.partition,
          error: protoError(result.error),
          partitionMetadata:
            result.partition === undefined ? undefined : partitionMetadataOf(result.partition),
        });
      }
      return { error: undefined, topics: [...topics.values()] };
    },

    allocateProducerIds: async (
      request: AllocateProducerIdsRequest,
    ): Promise<AllocateProducerIdsResponse> => {
      const { controller } = await role.requireActive();
      const block = await controller.queue.run(() =>
        allocateProducerIdBlock(controller.context, request.coordinatorId),
      );
      return { error: undefined, firstProducerId: block.firstProducerId, count: block.count };
    },

    coordinatorHeartbeat: async (
      request: CoordinatorHeartbeatRequest,
    ): Promise<CoordinatorHeartbeatResponse> => {
      const { controller } = await role.requireActive();
      const input = {
        coordinatorId: request.coordinatorId,
        endpoints: request.endpoints,
        incarnationId: request.incarnationId,
        shuttingDown: request.shuttingDown,
      };
      // Most heartbeats change nothing: they skip the queue, so they never delay a command.
      const shards =
        controller.coordinators.heartbeatWithoutChange(input) ??
        (await controller.queue.run(() => controller.coordinators.heartbeat(input)));
      return {
        error: undefined,
        shards: shards.map((shard) => ({ ...shard })),
        heartbeatIntervalMs: coordinatorHeartbeatIntervalMs(
          controller.context.settings.coordinatorSessionTimeoutMs,
        ),
      };
    },

    ensureOffsetsTopic: async (): Promise<EnsureOffsetsTopicResponse> => {
      const { controller } = await role.requireActive();
      const topic = await controller.queue.run(() => ensureOffsetsTopic(controller.context));
      return { error: undefined, topic: topicMetadataOf(topic) };
    },

    watchMetadata: async (
      request: WatchMetadataRequest,
      call: ServerWritableStream<WatchMetadataRequest, WatchMetadataResponse>,
    ): Promise<void> => {
      const { controller, state } = await role.requireActive();
      await publisher.serve(call, state, await role.activeAddress());
      // Resolved: the watcher went away. A storage node's own stream going away means its
      // process most likely did (broker-lifecycle.ts, fenceDisconnected, says why fencing is safe).
      const broker = brokerWatchOf(request);
      if (broker !== undefined) void fenceUnlessBack(controller, publisher, broker);
      // A coordinator's likewise: its shards move now, not a session timeout later.
      const coordinator = coordinatorWatchOf(request);
      if (coordinator !== undefined) void removeUnlessBack(controller, publisher, coordinator);
    },
  };
}

/**
 * How long a storage node whose watch broke has to watch again before it is fenced: a reconnect
 * after a benign break (its link backs off about 100 ms first) is not a death.
 */
export const brokerWatchReconnectGraceMs = 1_000;

async function fenceUnlessBack(
  controller: ActiveController,
  publisher: MetadataPublisher,
  broker: BrokerWatch,
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, brokerWatchReconnectGraceMs));
  if (publisher.isWatching(broker)) return;
  try {
    await controller.queue.run(() =>
      controller.brokers.fenceDisconnected(broker.brokerId, broker.brokerEpoch),
    );
  } catch (error) {
    // This controller stepped down, or the write failed: the session timeout still applies.
    controller.context.logger.info(
      { err: error, brokerId: broker.brokerId },
      'fencing a disconnected broker failed; its session timeout applies',
    );
  }
}

/**
 * Removes a coordinator whose watch broke and did not come back within the same grace as a
 * storage node's: the process most likely died. Safe as removal on a session timeout is (a
 * live coordinator removed by mistake registers again at its next heartbeat and its shards get
 * new epochs, fencing anything the old owner still writes); only the incarnation that watched
 * is removed, never a newer one.
 */
async function removeUnlessBack(
  controller: ActiveController,
  publisher: MetadataPublisher,
  coordinator: CoordinatorWatch,
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, brokerWatchReconnectGraceMs));
  if (publisher.isCoordinatorWatching(coordinator)) return;
  try {
    await controller.queue.run(() =>
      controller.coordinators.removeDisconnected(
        coordinator.coordinatorId,
        coordinator.incarnationId,
      ),
    );
  } catch (error) {
    controller.context.logger.info(
      { err: error, coordinatorId: coordinator.coordinatorId },
      'removing a disconnected coordinator failed; its session timeout applies',
    );
  }
}
