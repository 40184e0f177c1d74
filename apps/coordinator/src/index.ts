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
  ProducerIdManager,
  noProducerId,
  producerEpochMax,
  type ProducerIdBlock,
  type ProducerIdManagerOptions,
} from './producer-id-manager';
export { controllerChannel, controllerProducerIdBlocks } from './controller-producer-id-blocks';
