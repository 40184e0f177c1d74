/**
 * The channel to the active controller. Only the active controller answers; a standby answers
 * NOT_CONTROLLER naming the active one (detail `activeController`), so a call goes there next
 * and a controller failover costs a redirect, not an error.
 *
 * A paused or cut-off controller refuses nothing and its kernel keeps the connections, so a
 * WatchMetadata stream on it would wait in silence while another controller takes over. Each
 * channel therefore pings every second and drops the connection when a ping goes unanswered
 * for 1.5 s: the stream breaks in about 2.5 s and the follower moves to the next address
 * (controllerKeepaliveOptions). A busy controller answers pings from its event loop, so a false
 * alarm costs one reconnect.
 */
import { LeaderChannel, createGrpcClient, type TransportSecurity } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';

export const controllerKeepaliveOptions = {
  'grpc.keepalive_time_ms': 1_000,
  'grpc.keepalive_timeout_ms': 1_500,
} as const;

export interface ControllerChannelOptions {
  /** Attempts of one call over the controller addresses, NOT_CONTROLLER redirects included. */
  readonly attempts?: number;
  /** TLS to the controllers (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity;
}

export function controllerChannel(
  controllerAddresses: readonly string[],
  options: ControllerChannelOptions = {},
): LeaderChannel<ControllerServiceClient> {
  return new LeaderChannel(
    controllerAddresses,
    (address) =>
      createGrpcClient(
        ControllerServiceClient,
        address,
        controllerKeepaliveOptions,
        options.transportSecurity?.channelCredentials(),
      ),
    {
      notLeaderCode: 'NOT_CONTROLLER',
      leaderDetail: 'activeController',
      ...(options.attempts === undefined ? {} : { attempts: options.attempts }),
    },
  );
}
