// Process entry point of the storage-node service.
import { startStorageNode } from './storage-node-service';

startStorageNode().catch(() => {
  process.exitCode = 1;
});
