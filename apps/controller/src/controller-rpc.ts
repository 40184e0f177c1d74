/**
 * The controller's gRPC API: each handler asks the role for the active controller (a standby
 * answers NOT_CONTROLLER naming the active one), runs writes through the command queue, and
 * answers per topic with Kafka's error names where Kafka answers per topic.
 */
import type { MetadataPublisher } from './metadata-publisher';
import {
  createAclsHandler,
  deleteAclsHandler,
  describeAclsHandler,
} from './controller-rpc/acl-handlers';
import { alterPartitionHandler } from './controller-rpc/alter-partition-handler';
import {
  alterBrokerConfigsHandler,
  describeLogDirsHandler,
  describeBrokerConfigsHandler,
} from './controller-rpc/broker-config-handlers';
import {
  registerBrokerHandler,
  brokerHeartbeatHandler,
  controlledShutdownHandler,
  decommissionBrokerHandler,
} from './controller-rpc/broker-handlers';
import { describeClusterHandler } from './controller-rpc/cluster-handlers';
import {
  allocateProducerIdsHandler,
  coordinatorHeartbeatHandler,
  ensureOffsetsTopicHandler,
} from './controller-rpc/coordinator-handlers';
import {
  createTopicsHandler,
  deleteTopicsHandler,
  createPartitionsHandler,
  describeTopicsHandler,
  listTopicsHandler,
  describeConfigsHandler,
  alterConfigsHandler,
} from './controller-rpc/topic-handlers';
import {
  alterPartitionReassignmentsHandler,
  listPartitionReassignmentsHandler,
} from './controller-rpc/reassignment-handlers';
import {
  alterUserScramCredentialsHandler,
  describeUserScramCredentialsHandler,
} from './controller-rpc/user-handlers';
import { watchMetadataHandler } from './controller-rpc/watch-metadata-handler';
import type { ControllerAccess } from './controller-rpc/controller-access';

export type { ControllerAccess } from './controller-rpc/controller-access';

/** The controller service's handlers, one per RPC (controller-rpc/). */
export function controllerHandlers(role: ControllerAccess, publisher: MetadataPublisher) {
  return {
    registerBroker: registerBrokerHandler(role),
    brokerHeartbeat: brokerHeartbeatHandler(role),
    controlledShutdown: controlledShutdownHandler(role),
    createTopics: createTopicsHandler(role),
    deleteTopics: deleteTopicsHandler(role),
    createPartitions: createPartitionsHandler(role),
    describeTopics: describeTopicsHandler(role),
    listTopics: listTopicsHandler(role),
    describeConfigs: describeConfigsHandler(role),
    alterConfigs: alterConfigsHandler(role),
    describeCluster: describeClusterHandler(role),
    alterPartition: alterPartitionHandler(role),
    allocateProducerIds: allocateProducerIdsHandler(role),
    coordinatorHeartbeat: coordinatorHeartbeatHandler(role),
    ensureOffsetsTopic: ensureOffsetsTopicHandler(role),
    watchMetadata: watchMetadataHandler(role, publisher),
    alterPartitionReassignments: alterPartitionReassignmentsHandler(role),
    listPartitionReassignments: listPartitionReassignmentsHandler(role),
    decommissionBroker: decommissionBrokerHandler(role),
    createAcls: createAclsHandler(role),
    describeAcls: describeAclsHandler(role),
    deleteAcls: deleteAclsHandler(role),
    describeBrokerConfigs: describeBrokerConfigsHandler(role),
    alterBrokerConfigs: alterBrokerConfigsHandler(role),
    describeLogDirs: describeLogDirsHandler(role),
    alterUserScramCredentials: alterUserScramCredentialsHandler(role),
    describeUserScramCredentials: describeUserScramCredentialsHandler(role),
  };
}
