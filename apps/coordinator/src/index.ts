export {
  startCoordinator,
  coordinatorSettings,
  coordinatorDefaultPorts,
} from './coordinator-service';
export {
  groupPartition,
  javaStringHashCode,
  consumerOffsetsTopic,
  consumerOffsetsPartitionCountDefault,
} from './group-partition';
export {
  CoordinatorMetrics,
  consumerGroupStates,
  type ConsumerGroupStateLabel,
  type PartitionLag,
} from './coordinator-metrics';
export {
  ProducerIdManager,
  noProducerId,
  producerEpochMax,
  type ProducerIdBlock,
  type ProducerIdManagerOptions,
} from './producer-id-manager';
export { controllerChannel, controllerProducerIdBlocks } from './controller-producer-id-blocks';
