// The storage nodes' lifecycle RPCs: registration, heartbeats (and a data directory going
// offline or coming back), and controlled shutdown.
import { SpoolError } from '@spool/common';
import type {
  BrokerHeartbeatRequest,
  BrokerHeartbeatResponse,
  ControlledShutdownRequest,
  ControlledShutdownResponse,
  DecommissionBrokerRequest,
  DecommissionBrokerResponse,
  RegisterBrokerRequest,
  RegisterBrokerResponse,
} from '@spool/protocol';
import { effectiveBrokerConfigs } from '../broker-configs';
import { protoError, type ControllerAccess } from './controller-access';

export function registerBrokerHandler(role: ControllerAccess) {
  return async (request: RegisterBrokerRequest): Promise<RegisterBrokerResponse> => {
    const { controller } = await role.requireActive();
    const brokerEpoch = await controller.queue.run(() =>
      controller.brokers.register({
        brokerId: request.brokerId,
        rack: request.rack,
        endpoints: request.endpoints,
        incarnationId: request.incarnationId,
      }),
    );
    return { error: undefined, brokerEpoch };
  };
}

export function brokerHeartbeatHandler(role: ControllerAccess) {
  return async (request: BrokerHeartbeatRequest): Promise<BrokerHeartbeatResponse> => {
    const { controller } = await role.requireActive();
    const { fenced, logDirChanged } = controller.brokers.heartbeat(
      request.brokerId,
      request.brokerEpoch,
      request.logDirOffline,
    );
    if (!fenced) {
      controller.cleanerStates.record(request.brokerId, request.cleanerStates);
      controller.replicaSizes.record(request.brokerId, request.replicaSizes);
    }
    // Most heartbeats change nothing and skip the queue; a data directory going offline or
    // coming back writes elections, so it waits its turn. A write that fails is tried again
    // at the next heartbeat, which reports the same state.
    if (logDirChanged) {
      await controller.queue
        .run(() =>
          controller.brokers.setLogDirOffline(
            request.brokerId,
            request.brokerEpoch,
            request.logDirOffline,
          ),
        )
        .catch((error: unknown) =>
          controller.context.logger.warn(
            { err: error, brokerId: request.brokerId },
            "recording a broker's data directory state failed; the next heartbeat retries",
          ),
        );
    }
    return {
      fenced,
      dynamicConfigs: fenced ? [] : effectiveBrokerConfigs(controller.context, request.brokerId),
      error: fenced
        ? protoError(
            new SpoolError(
              'STALE_BROKER_EPOCH',
              `broker ${request.brokerId} epoch ${request.brokerEpoch} is fenced or stale; register again`,
            ),
          )
        : undefined,
    };
  };
}

export function controlledShutdownHandler(role: ControllerAccess) {
  return async (request: ControlledShutdownRequest): Promise<ControlledShutdownResponse> => {
    const { controller } = await role.requireActive();
    const remaining = await controller.queue.run(() =>
      controller.brokers.controlledShutdown(request.brokerId, request.brokerEpoch),
    );
    return { error: undefined, remainingPartitions: remaining };
  };
}

export function decommissionBrokerHandler(role: ControllerAccess) {
  return async (request: DecommissionBrokerRequest): Promise<DecommissionBrokerResponse> => {
    const { controller } = await role.requireActive();
    try {
      await controller.queue.run(() =>
        controller.brokers.setDecommissioned(request.brokerId, !request.cancel),
      );
    } catch (error) {
      if (!(error instanceof SpoolError) || error.code !== 'BROKER_ID_NOT_REGISTERED') throw error;
      return { error: protoError(error) };
    }
    return { error: undefined };
  };
}
