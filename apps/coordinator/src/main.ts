// Process entry point of the coordinator service.
import { startCoordinator } from './coordinator-service';

startCoordinator().catch(() => {
  process.exitCode = 1;
});
