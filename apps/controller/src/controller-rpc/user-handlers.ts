// Users' SCRAM credentials (user-credentials.ts): alterations go through the command queue, one
// store write per user; descriptions read the cluster view.
import type {
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsResponse,
  DescribeUserScramCredentialsRequest,
  DescribeUserScramCredentialsResponse,
} from '@spool/protocol';
import { alterUserScramCredentials, describeUserScramCredentials } from '../user-credentials';
import { protoError, type ControllerAccess } from './controller-access';

export function alterUserScramCredentialsHandler(role: ControllerAccess) {
  return async (
    request: AlterUserScramCredentialsRequest,
  ): Promise<AlterUserScramCredentialsResponse> => {
    const { controller, state } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      alterUserScramCredentials(request, state, controller.context.writer),
    );
    for (const { user, error } of outcomes) {
      controller.context.logger.info(
        { user, error: error?.code },
        error === undefined ? 'user credentials changed' : 'user credentials change refused',
      );
    }
    return {
      results: outcomes.map(({ user, error }) => ({ user, error: protoError(error) })),
    };
  };
}

export function describeUserScramCredentialsHandler(role: ControllerAccess) {
  return async (
    request: DescribeUserScramCredentialsRequest,
  ): Promise<DescribeUserScramCredentialsResponse> => {
    const { state } = await role.requireActive();
    return describeUserScramCredentials(request.users, state);
  };
}
