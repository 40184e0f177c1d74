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
