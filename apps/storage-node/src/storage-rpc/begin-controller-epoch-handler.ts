import type { ServerUnaryCall } from '@grpc/grpc-js';
import { SpoolError, ensurePeerIsService } from '@spool/common';
import type { BeginControllerEpochRequest, BeginControllerEpochResponse } from '@spool/protocol';
import type { ControllerLink } from '../controller-link';

/**
 * BeginControllerEpoch: a controller that has just become active announces itself, and this node
 * moves its controller calls and metadata stream there (ControllerLink.controllerAnnounced).
 * Under TLS only a controller's certificate may announce (the storage service admits Spool's
 * services; a gateway's or coordinator's could otherwise point brokers elsewhere). The answer
 * carries this node's id and registration, so a controller that dialled an address now
 * held by another broker, or by a node not registered yet, takes nothing for granted.
 */
export function beginControllerEpochHandler(
  brokerId: number,
  link: () => ControllerLink | undefined,
): (
  request: BeginControllerEpochRequest,
  call?: Pick<ServerUnaryCall<unknown, unknown>, 'getAuthContext'>,
) => Promise<BeginControllerEpochResponse> {
  return async (request, call) => {
    const peer = call?.getAuthContext().sslPeerCertificate;
    if (peer !== undefined) {
      const role = ensurePeerIsService(peer, 'BeginControllerEpoch');
      if (role !== 'controller') {
        throw new SpoolError(
          'CLUSTER_AUTHORIZATION_FAILED',
          `BeginControllerEpoch is for controllers only, and the peer's certificate names the ${role} role`,
        );
      }
    }
    if (
      !/^[^\s:]+:\d{1,5}$/.test(request.controllerAddress) &&
      !/^\[.+\]:\d{1,5}$/.test(request.controllerAddress)
    ) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `controller_address ${JSON.stringify(request.controllerAddress)} is not host:port`,
      );
    }
    if (request.controllerEpoch < 0n) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `controller_epoch ${request.controllerEpoch} is negative`,
      );
    }
    const current = link();
    const registered = current !== undefined && current.brokerEpoch > 0n;
    const followed =
      request.brokerId === brokerId &&
      current !== undefined &&
      current.controllerAnnounced(request.controllerAddress, request.controllerEpoch);
    return {
      brokerId,
      brokerEpoch: registered ? current.brokerEpoch : -1n,
      followed,
    };
  };
}
