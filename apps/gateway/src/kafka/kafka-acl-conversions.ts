/**
 * Kafka's ACL fields on its wire and acl.proto's: the same numbers, other names
 * (resourcePatternType and patternType, the filters' *Filter suffixes).
 */
import type { AclBinding, AclBindingFilter, ProtoError } from '@spool/protocol';
import { kafkaErrorOf } from './kafka-errors';

/** A Kafka AclCreation, or a DescribeAcls or DeleteAcls filter, as they are read. */
export interface KafkaAclFilterFields {
  readonly resourceTypeFilter: number;
  readonly resourceNameFilter: string | null;
  readonly patternTypeFilter: number;
  readonly principalFilter: string | null;
  readonly hostFilter: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

export function aclFilterOf(fields: KafkaAclFilterFields): AclBindingFilter {
  return {
    resourceType: fields.resourceTypeFilter,
    patternType: fields.patternTypeFilter,
    operation: fields.operation,
    permissionType: fields.permissionType,
    ...(fields.resourceNameFilter === null ? {} : { resourceName: fields.resourceNameFilter }),
    ...(fields.principalFilter === null ? {} : { principal: fields.principalFilter }),
    ...(fields.hostFilter === null ? {} : { host: fields.hostFilter }),
  };
}

/** An errorCode and errorMessage pair; CLUSTER_AUTHORIZATION_FAILED and the like keep Kafka's numbers. */
export function aclErrorOf(error: ProtoError | undefined): {
  errorCode: number;
  errorMessage: string | null;
} {
  return kafkaErrorOf(error);
}

export type { AclBinding };
