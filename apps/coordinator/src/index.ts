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
