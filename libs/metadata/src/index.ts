// The metadata store the controller keeps cluster state in (etcd in production, a local durable
// file on one machine), and the layout of that state.
export { MetadataKeys } from './metadata-keys';
