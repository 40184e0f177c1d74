export {
  startCoordinator,
  coordinatorSettings,
  coordinatorDefaultPorts,
} from './coordinator-service';
