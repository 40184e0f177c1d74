export {
  startStorageNode,
  storageNodeSettings,
  storageNodeDefaultPorts,
} from './storage-node-service';
export { brokerIdFromHostname, resolveBrokerId } from './broker-identity';
