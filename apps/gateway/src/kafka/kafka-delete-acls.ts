/**
 * DeleteAcls (31): each filter answered on its own with the ACLs it deleted; ALTER on the
 * cluster needed (acl-handlers.ts).
 */
import type { Caller } from '@spool/authorizer';
import {
  ApiKey,
  type DeleteAclsRequest,
  type DeleteAclsResponse,
  defaultDeleteAclsResponse,
  readDeleteAclsRequest,
  writeDeleteAclsResponse,
} from '@spool/kafka-protocol';
import type {
  DeleteAclsRequest as SpoolDeleteAclsRequest,
  DeleteAclsResponse as SpoolDeleteAclsResponse,
} from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { aclErrorOf, aclFilterOf } from './kafka-acl-conversions';

export function deleteAclsApi(
  deleteAcls: (request: SpoolDeleteAclsRequest, caller: Caller) => Promise<SpoolDeleteAclsResponse>,
): KafkaApi<DeleteAclsRequest, DeleteAclsResponse> {
  return {
    apiKey: ApiKey.DeleteAcls,
    minVersion: 1,
    maxVersion: 3,
    read: readDeleteAclsRequest,
    write: writeDeleteAclsResponse,
    serve: async (request, _version, context) => {
      const answer = await deleteAcls({ filters: request.filters.map(aclFilterOf) }, context);
      return {
        ...defaultDeleteAclsResponse(),
        filterResults: answer.results.map((result) => ({
          ...aclErrorOf(result.error),
          matchingAcls: result.deletedAcls.map((acl) => ({
            errorCode: 0,
            errorMessage: null,
            resourceType: acl.resourceType,
            resourceName: acl.resourceName,
            patternType: acl.patternType,
            principal: acl.principal,
            host: acl.host,
            operation: acl.operation,
            permissionType: acl.permissionType,
          })),
        })),
      };
    },
  };
}
