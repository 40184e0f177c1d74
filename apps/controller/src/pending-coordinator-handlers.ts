/**
 * CoordinatorHeartbeat and EnsureOffsetsTopic are in the controller's contract, but the
 * coordinator runtime that implements them is built on another branch (`groups`). Until it is
 * merged the controller still has to register every method of its service to start, so these
 * answer UNSUPPORTED_VERSION (Kafka's answer for an API a broker does not offer), naming the
 * call, rather than pretend with made-up results. The handlers of `controllerHandlers` take
 * precedence over these, so merging the real ones makes this file dead: delete it then.
 */
import type {
  CoordinatorHeartbeatRequest,
  CoordinatorHeartbeatResponse,
  EnsureOffsetsTopicRequest,
  EnsureOffsetsTopicResponse,
} from '@spool/protocol';
import { ControllerError } from './controller-errors';

function unsupported(api: string): Promise<never> {
  return Promise.reject(
    new ControllerError('UNSUPPORTED_VERSION', `${api} is not offered by this controller yet`),
  );
}

export function pendingCoordinatorHandlers() {
  return {
    coordinatorHeartbeat: (
      _request: CoordinatorHeartbeatRequest,
    ): Promise<CoordinatorHeartbeatResponse> => unsupported('CoordinatorHeartbeat'),
    ensureOffsetsTopic: (
      _request: EnsureOffsetsTopicRequest,
    ): Promise<EnsureOffsetsTopicResponse> => unsupported('EnsureOffsetsTopic'),
  };
}
