/**
 * The channel to the active controller. Only the active controller answers; a standby answers
 * NOT_CONTROLLER naming the active one (detail `activeController`), so a call goes there next
 * and a controller failover costs a redirect, not an error.
 */
import { LeaderChannel, createGrpcClient } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';

export interface ControllerChannelOptions {
  /** Attempts of one call over the controller addresses, NOT_CONTROLLER redirects included. */
  readonly attempts?: number;
}

export function controllerChannel(
  controllerAddresses: readonly string[],
  options: ControllerChannelOptions = {},
): LeaderChannel<ControllerServiceClient> {
  return new LeaderChannel(
    controllerAddresses,
    (address) => createGrpcClient(ControllerServiceClient, address),
    {
      notLeaderCode: 'NOT_CONTROLLER',
      leaderDetail: 'activeController',
      ...(options.attempts === undefined ? {} : { attempts: options.attempts }),
    },
  );
}
