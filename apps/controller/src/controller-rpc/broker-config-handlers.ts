// DescribeBrokerConfigs and AlterBrokerConfigs: the dynamic broker configs, per resource.
import type {
  AlterBrokerConfigsRequest,
  AlterBrokerConfigsResponse,
  DescribeBrokerConfigsRequest,
  DescribeBrokerConfigsResponse,
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
