// A process's link to the active controller: the channel to it and the cluster metadata it
// publishes, followed into a cache. Shared by storage nodes, coordinators and gateways.
export { ClusterLink, type ClusterLinkOptions } from './cluster-link';
export { controllerChannel, type ControllerChannelOptions } from './controller-channel';
