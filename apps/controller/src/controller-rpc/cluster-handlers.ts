// DescribeCluster: the cluster id, the active controller and the registered brokers.
import type { DescribeClusterResponse } from '@spool/protocol';
import { sortedBrokers } from '../metadata-conversions';
import { type ControllerAccess } from './controller-access';

export function describeClusterHandler(role: ControllerAccess) {
  return async (): Promise<DescribeClusterResponse> => {
    const { state } = await role.requireActive();
    return {
      clusterId: state.clusterId,
      controllerId: -1,
      controllerAddress: await role.activeAddress(),
      brokers: sortedBrokers(state),
      metadataVersion: state.revision,
    };
  };
}
