/**
 * CreateAcls (30): each creation answered on its own, in order; ALTER on the cluster needed, as
 * in Kafka (acl-handlers.ts), and a refused or invalid creation changes nothing.
 */
import type { Caller } from '@spool/authorizer';
import {
  ApiKey,
  type CreateAclsRequest,
  type CreateAclsResponse,
  defaultCreateAclsResponse,
  readCreateAclsRequest,
  writeCreateAclsResponse,
} from '@spool/kafka-protocol';
import type {
  CreateAclsRequest as SpoolCreateAclsRequest,
  CreateAclsResponse as SpoolCreateAclsResponse,
} from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { aclErrorOf } from './kafka-acl-conversions';

export function createAclsApi(
  createAcls: (request: SpoolCreateAclsRequest, caller: Caller) => Promise<SpoolCreateAclsResponse>,
): KafkaApi<CreateAclsRequest, CreateAclsResponse> {
  return {
    apiKey: ApiKey.CreateAcls,
    minVersion: 1,
    maxVersion: 3,
    read: readCreateAclsRequest,
    write: writeCreateAclsResponse,
    serve: async (request, _version, context) => {
      const answer = await createAcls(
        {
          creations: request.creations.map((creation) => ({
            resourceType: creation.resourceType,
            resourceName: creation.resourceName,
            patternType: creation.resourcePatternType,
            principal: creation.principal,
            host: creation.host,
            operation: creation.operation,
            permissionType: creation.permissionType,
          })),
        },
        context,
      );
      return {
        ...defaultCreateAclsResponse(),
        results: answer.results.map((result) => aclErrorOf(result.error)),
      };
    },
  };
}
