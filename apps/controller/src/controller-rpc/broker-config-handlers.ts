// DescribeBrokerConfigs and AlterBrokerConfigs: the dynamic broker configs, per resource; and
// DescribeLogDirs: each broker's replicas and their sizes, as its heartbeats last reported them.
import { SpoolError } from '@spool/common';
import type {
  AlterBrokerConfigsRequest,
  AlterBrokerConfigsResponse,
  DescribeBrokerConfigsRequest,
  DescribeBrokerConfigsResponse,
  DescribeLogDirsRequest,
  DescribeLogDirsResponse,
} from '@spool/protocol';
import { alterBrokerConfigs, describeBrokerConfigs } from '../broker-configs';
import { protoError, type ControllerAccess } from './controller-access';

export function describeBrokerConfigsHandler(role: ControllerAccess) {
  return async (request: DescribeBrokerConfigsRequest): Promise<DescribeBrokerConfigsResponse> => {
    const { controller } = await role.requireActive();
    const results = describeBrokerConfigs(controller.context, request.brokers);
    return {
      results: results.map((result) => ({
        broker: result.broker,
        error: protoError(result.error),
        configs: result.configs,
      })),
    };
  };
}

export function alterBrokerConfigsHandler(role: ControllerAccess) {
  return async (request: AlterBrokerConfigsRequest): Promise<AlterBrokerConfigsResponse> => {
    const { controller } = await role.requireActive();
    const results = await controller.queue.run(() =>
      alterBrokerConfigs(
        controller.context,
        request.brokers.map((item) => ({
          broker: item.broker,
          set: item.set.map((entry) => ({ name: entry.name, value: entry.value })),
          delete: item.delete,
        })),
        request.validateOnly,
      ),
    );
    return {
      results: results.map((result) => ({
        broker: result.broker,
        error: protoError(result.error),
      })),
    };
  };
}

export function describeLogDirsHandler(role: ControllerAccess) {
  return async (request: DescribeLogDirsRequest): Promise<DescribeLogDirsResponse> => {
    const { controller } = await role.requireActive();
    return {
      results: request.brokerIds.map((brokerId) => {
        if (!controller.context.state.brokers.has(brokerId)) {
          return {
            brokerId,
            error: protoError(
              new SpoolError('BROKER_ID_NOT_REGISTERED', `broker ${brokerId} is not registered`),
            ),
            logDirOffline: false,
            reported: false,
            replicaSizes: [],
          };
        }
        const replicaSizes = controller.replicaSizes.replicasOf(brokerId);
        return {
          brokerId,
          error: undefined,
          logDirOffline: controller.brokers.isLogDirOffline(brokerId),
          reported: replicaSizes !== undefined,
          replicaSizes: replicaSizes ?? [],
        };
      }),
    };
  };
}
