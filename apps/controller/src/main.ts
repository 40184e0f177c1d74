// Process entry point of the controller service.
import { startController } from './controller-service';

startController().catch(() => {
  process.exitCode = 1;
});
