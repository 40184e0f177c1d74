// Kafka's CreateAcls, DescribeAcls and DeleteAcls (acl-commands.ts): writes run on the command
// queue, each creation and each filter answered on its own.
import type {
  CreateAclsRequest,
  CreateAclsResponse,
  DeleteAclsRequest,
  DeleteAclsResponse,
  DescribeAclsRequest,
  DescribeAclsResponse,
} from '@spool/protocol';
import { SpoolError } from '@spool/common';
import { createAcls, deleteAcls, describeAcls } from '../acl-commands';
import { protoError, type ControllerAccess } from './controller-access';

export function createAclsHandler(role: ControllerAccess) {
  return async (request: CreateAclsRequest): Promise<CreateAclsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      createAcls(controller.context, request.creations),
    );
    return { results: outcomes.map((outcome) => ({ error: protoError(outcome.error) })) };
  };
}

export function describeAclsHandler(role: ControllerAccess) {
  return async (request: DescribeAclsRequest): Promise<DescribeAclsResponse> => {
    const { controller } = await role.requireActive();
    if (request.filter === undefined) {
      throw new SpoolError('INVALID_REQUEST', 'DescribeAcls needs a filter');
    }
    return { error: undefined, acls: describeAcls(controller.context, request.filter) };
  };
}

export function deleteAclsHandler(role: ControllerAccess) {
  return async (request: DeleteAclsRequest): Promise<DeleteAclsResponse> => {
    const { controller } = await role.requireActive();
    const outcomes = await controller.queue.run(() =>
      deleteAcls(controller.context, request.filters),
    );
    return {
      results: outcomes.map((outcome) => ({
        error: protoError(outcome.error),
        deletedAcls: [...outcome.deleted],
      })),
    };
  };
}
