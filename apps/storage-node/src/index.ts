export {
  startStorageNode,
  storageNodeSettings,
  storageNodeDefaultPorts,
} from './storage-node-service';
export { brokerIdFromHostname, resolveBrokerId } from './broker-identity';

// The data port: consumer and replica fetches over plain TCP, records moved with sendfile.
export {
  connectionsMaxDefault,
  connectionsMaxIdleMsDefault,
  DataPortServer,
  type DataPortServerOptions,
  inFlightRequestsPerConnectionMaxDefault,
} from './data-port/data-port-server';
export type {
  DataPortHandlers,
  FetchPartitionResult,
  FetchResult,
} from './data-port/data-port-handlers';
export type { DataPortCounters } from './data-port/data-port-metrics';

// Rack awareness on Kubernetes: the rack is a label of the pod's node.
export { rackFromNodeLabel, NodeRackError, type NodeRackOptions } from './node-rack';
