export {
  startCoordinator,
  coordinatorSettings,
  coordinatorDefaultPorts,
} from './coordinator-service';
export {
  CoordinatorMetrics,
  type CoordinatorMetricsSource,
  type GroupLag,
} from './coordinator-metrics';
export {
  ProducerIdManager,
  noProducerId,
  producerEpochMax,
  type ProducerIdBlock,
  type ProducerIdManagerOptions,
} from './producer-id-manager';
export { controllerProducerIdBlocks } from './controller-producer-id-blocks';
