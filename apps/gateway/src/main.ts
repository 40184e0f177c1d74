// Process entry point of the gateway service.
import { startGateway } from './gateway-service';

startGateway().catch(() => {
  process.exitCode = 1;
});
