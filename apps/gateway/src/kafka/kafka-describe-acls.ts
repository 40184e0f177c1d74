/**
 * DescribeAcls (29): the ACLs one filter matches, grouped by resource pattern as Kafka answers;
 * DESCRIBE on the cluster needed (acl-handlers.ts).
 */
import type { Caller } from '@spool/authorizer';
import {
  ApiKey,
  type DescribeAclsRequest,
  type DescribeAclsResource,
  type DescribeAclsResponse,
  defaultDescribeAclsResponse,
  readDescribeAclsRequest,
  writeDescribeAclsResponse,
} from '@spool/kafka-protocol';
import type {
  DescribeAclsRequest as SpoolDescribeAclsRequest,
  DescribeAclsResponse as SpoolDescribeAclsResponse,
} from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { aclErrorOf, aclFilterOf } from './kafka-acl-conversions';

export function describeAclsApi(
  describeAcls: (
    request: SpoolDescribeAclsRequest,
    caller: Caller,
  ) => Promise<SpoolDescribeAclsResponse>,
): KafkaApi<DescribeAclsRequest, DescribeAclsResponse> {
  return {
    apiKey: ApiKey.DescribeAcls,
    minVersion: 1,
    maxVersion: 3,
    read: readDescribeAclsRequest,
    write: writeDescribeAclsResponse,
    serve: async (request, _version, context) => {
      const answer = await describeAcls({ filter: aclFilterOf(request) }, context);
      const resources = new Map<string, DescribeAclsResource>();
      for (const acl of answer.acls) {
        const key = `${acl.resourceType}:${acl.patternType}:${acl.resourceName}`;
        let resource = resources.get(key);
        if (resource === undefined) {
          resource = {
            resourceType: acl.resourceType,
            resourceName: acl.resourceName,
            patternType: acl.patternType,
            acls: [],
          };
          resources.set(key, resource);
        }
        resource.acls.push({
          principal: acl.principal,
          host: acl.host,
          operation: acl.operation,
          permissionType: acl.permissionType,
        });
      }
      return {
        ...defaultDescribeAclsResponse(),
        ...aclErrorOf(answer.error),
        resources: [...resources.values()],
      };
    },
  };
}
