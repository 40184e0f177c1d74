/**
 * What the Kafka listener needs for ACLs: the gateway's authorizer (its gates, kafka-
 * authorization.ts) and the ACL calls (acl-handlers.ts) behind CreateAcls, DescribeAcls and
 * DeleteAcls. A listener built without it (unit tests) serves neither.
 */
import type { RequestAuthorizer } from '@spool/authorizer';
import type { aclHandlers } from '../acl-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import { createAclsApi } from './kafka-create-acls';
import { deleteAclsApi } from './kafka-delete-acls';
import { describeAclsApi } from './kafka-describe-acls';

export interface KafkaAclDependencies {
  readonly authorizer: RequestAuthorizer;
  readonly handlers: ReturnType<typeof aclHandlers>;
}

export function aclApis(acls: KafkaAclDependencies | undefined): Array<KafkaApi<never, never>> {
  if (acls === undefined) return [];
  return [
    createAclsApi(acls.handlers.createAcls),
    describeAclsApi(acls.handlers.describeAcls),
    deleteAclsApi(acls.handlers.deleteAcls),
  ] as unknown as Array<KafkaApi<never, never>>;
}
