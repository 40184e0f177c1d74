// Kafka's ACL model (KIP-11, KIP-290): an ACL lets or stops one principal, from one host or all,
// doing one operation on the resources one pattern names. The numbers are Kafka's own
// (ResourceType, PatternType, AclOperation, AclPermissionType), the same on the Kafka wire, in
// acl.proto and in the metadata store, so nothing translates them on the way.
import { isIP } from 'node:net';

export const ResourceType = {
  Any: 1,
  Topic: 2,
  Group: 3,
  Cluster: 4,
  TransactionalId: 5,
} as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

export const PatternType = {
  /** Filters only: every pattern type. */
  Any: 1,
  /** Filters only: the patterns that apply to a literal name (literal, wildcard, prefixes). */
  Match: 2,
  Literal: 3,
  Prefixed: 4,
} as const;
export type PatternType = (typeof PatternType)[keyof typeof PatternType];

export const AclOperation = {
  /** Filters only. */
  Any: 1,
  All: 2,
  Read: 3,
  Write: 4,
  Create: 5,
  Delete: 6,
  Alter: 7,
  Describe: 8,
  ClusterAction: 9,
  DescribeConfigs: 10,
  AlterConfigs: 11,
  IdempotentWrite: 12,
} as const;
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation];

export const AclPermissionType = {
  /** Filters only. */
  Any: 1,
  Deny: 2,
  Allow: 3,
} as const;
export type AclPermissionType = (typeof AclPermissionType)[keyof typeof AclPermissionType];

/** A resource name matching every resource of its type, in a LITERAL pattern (Kafka's '*'). */
export const wildcardResourceName = '*';
/** Every principal (Kafka's User:*). */
export const wildcardPrincipal = 'User:*';
/** Every host. */
export const wildcardHost = '*';
/** The one cluster resource's name (Kafka's CLUSTER_NAME). */
export const clusterResourceName = 'kafka-cluster';

/** One ACL, shaped as acl.proto's AclBinding. */
export interface AclBinding {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly patternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

/** Which ACLs a describe or delete names, shaped as acl.proto's AclBindingFilter. */
export interface AclBindingFilter {
  readonly resourceType: number;
  /** Undefined or null: any name. */
  readonly resourceName?: string | null;
  readonly patternType: number;
  readonly principal?: string | null;
  readonly host?: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

function nameTable<T extends Record<string, number>>(values: T): Map<number, string> {
  return new Map(
    Object.entries(values).map(([name, value]) => [
      value,
      name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase(),
    ]),
  );
}

const resourceTypeNames = nameTable(ResourceType);
const patternTypeNames = nameTable(PatternType);
const operationNames = nameTable(AclOperation);
const permissionTypeNames = nameTable(AclPermissionType);

/** Kafka's upper-case name of a resource type (TOPIC), or UNKNOWN(n). */
export function resourceTypeName(value: number): string {
  return resourceTypeNames.get(value) ?? `UNKNOWN(${value})`;
}
export function patternTypeName(value: number): string {
  return patternTypeNames.get(value) ?? `UNKNOWN(${value})`;
}
export function operationName(value: number): string {
  return operationNames.get(value) ?? `UNKNOWN(${value})`;
}
export function permissionTypeName(value: number): string {
  return permissionTypeNames.get(value) ?? `UNKNOWN(${value})`;
}

function valueOfName(names: Map<number, string>, name: string): number | undefined {
  const wanted = name.trim().toUpperCase().replace(/-/g, '_');
  for (const [value, each] of names) if (each === wanted) return value;
  return undefined;
}

/** The number of a resource type, operation, pattern or permission name, any case; undefined if none. */
export function resourceTypeOfName(name: string): number | undefined {
  return valueOfName(resourceTypeNames, name);
}
export function patternTypeOfName(name: string): number | undefined {
  return valueOfName(patternTypeNames, name);
}
export function operationOfName(name: string): number | undefined {
  return valueOfName(operationNames, name);
}
export function permissionTypeOfName(name: string): number | undefined {
  return valueOfName(permissionTypeNames, name);
}

/** The resource types, operations and so on an ACL itself may hold (never ANY or MATCH). */
const concreteResourceTypes: ReadonlySet<number> = new Set([
  ResourceType.Topic,
  ResourceType.Group,
  ResourceType.Cluster,
  ResourceType.TransactionalId,
]);
const concretePatternTypes: ReadonlySet<number> = new Set([
  PatternType.Literal,
  PatternType.Prefixed,
]);
const concreteOperations: ReadonlySet<number> = new Set(
  Object.values(AclOperation).filter((operation) => operation !== AclOperation.Any),
);
const concretePermissionTypes: ReadonlySet<number> = new Set([
  AclPermissionType.Allow,
  AclPermissionType.Deny,
]);

/** Principal names and resource names longer than this are refused (Kafka's are short). */
export const aclNameLengthMax = 1_024;

/**
 * Why an ACL cannot be stored, or undefined when it can. Kafka's AclControlManager refuses the
 * same: ANY, MATCH or unknown types, an empty resource name, a principal without its type, and
 * a cluster resource not named kafka-cluster.
 */
export function aclBindingProblem(binding: AclBinding): string | undefined {
  if (!concreteResourceTypes.has(binding.resourceType)) {
    return `resource type ${resourceTypeName(binding.resourceType)} cannot hold an ACL`;
  }
  if (!concretePatternTypes.has(binding.patternType)) {
    return `pattern type ${patternTypeName(binding.patternType)} cannot hold an ACL (LITERAL or PREFIXED)`;
  }
  if (!concreteOperations.has(binding.operation)) {
    return `operation ${operationName(binding.operation)} cannot hold an ACL`;
  }
  if (!concretePermissionTypes.has(binding.permissionType)) {
    return `permission type ${permissionTypeName(binding.permissionType)} cannot hold an ACL (ALLOW or DENY)`;
  }
  if (binding.resourceName === '') return 'the resource name is empty';
  if (binding.resourceName.length > aclNameLengthMax) {
    return `the resource name is longer than ${aclNameLengthMax} characters`;
  }
  if (
    binding.resourceType === ResourceType.Cluster &&
    (binding.resourceName !== clusterResourceName || binding.patternType !== PatternType.Literal)
  ) {
    return `a CLUSTER ACL names the literal resource ${clusterResourceName}, not ${binding.resourceName}`;
  }
  const principalProblem = principalProblemOf(binding.principal);
  if (principalProblem !== undefined) return principalProblem;
  if (binding.host !== wildcardHost && isIP(binding.host) === 0) {
    return `host ${JSON.stringify(binding.host)} is neither '*' nor an IP address`;
  }
  return undefined;
}

function principalProblemOf(principal: string): string | undefined {
  const separator = principal.indexOf(':');
  if (separator <= 0 || separator === principal.length - 1) {
    return `principal ${JSON.stringify(principal)} is not of the form Type:name (User:alice)`;
  }
  if (principal.length > aclNameLengthMax) {
    return `the principal is longer than ${aclNameLengthMax} characters`;
  }
  return undefined;
}

/** Why a describe or delete filter is refused (UNKNOWN types), or undefined. */
export function aclFilterProblem(filter: AclBindingFilter): string | undefined {
  if (resourceTypeNames.get(filter.resourceType) === undefined) {
    return `resource type ${resourceTypeName(filter.resourceType)} is unknown`;
  }
  if (patternTypeNames.get(filter.patternType) === undefined) {
    return `pattern type ${patternTypeName(filter.patternType)} is unknown`;
  }
  if (operationNames.get(filter.operation) === undefined) {
    return `operation ${operationName(filter.operation)} is unknown`;
  }
  if (permissionTypeNames.get(filter.permissionType) === undefined) {
    return `permission type ${permissionTypeName(filter.permissionType)} is unknown`;
  }
  return undefined;
}

/** Kafka's AclBindingFilter.matches: whether a filter names a stored ACL. */
export function aclFilterMatches(filter: AclBindingFilter, binding: AclBinding): boolean {
  if (filter.resourceType !== ResourceType.Any && filter.resourceType !== binding.resourceType) {
    return false;
  }
  if (!resourcePatternFilterMatches(filter, binding)) return false;
  if (isNamed(filter.principal) && filter.principal !== binding.principal) return false;
  if (isNamed(filter.host) && filter.host !== binding.host) return false;
  if (filter.operation !== AclOperation.Any && filter.operation !== binding.operation) {
    return false;
  }
  return (
    filter.permissionType === AclPermissionType.Any ||
    filter.permissionType === binding.permissionType
  );
}

/** Kafka's ResourcePatternFilter.matches, on the pattern fields. */
function resourcePatternFilterMatches(filter: AclBindingFilter, binding: AclBinding): boolean {
  const anyPattern = filter.patternType === PatternType.Any;
  if (!anyPattern && filter.patternType !== PatternType.Match) {
    if (filter.patternType !== binding.patternType) return false;
  }
  if (!isNamed(filter.resourceName)) return true;
  if (anyPattern || filter.patternType === binding.patternType) {
    return filter.resourceName === binding.resourceName;
  }
  // MATCH: the patterns that apply to a resource of this literal name.
  if (binding.patternType === PatternType.Literal) {
    return (
      filter.resourceName === binding.resourceName || binding.resourceName === wildcardResourceName
    );
  }
  return filter.resourceName.startsWith(binding.resourceName);
}

/** A filter's string field names a value (undefined or null match any). */
function isNamed(value: string | null | undefined): value is string {
  return value !== undefined && value !== null;
}

/** Whether two ACLs are the same entry (the store holds each once). */
export function sameAcl(left: AclBinding, right: AclBinding): boolean {
  return (
    left.resourceType === right.resourceType &&
    left.resourceName === right.resourceName &&
    left.patternType === right.patternType &&
    left.principal === right.principal &&
    left.host === right.host &&
    left.operation === right.operation &&
    left.permissionType === right.permissionType
  );
}

/** One line for logs and the CLI, in kafka-acls' words. */
export function describeAcl(binding: AclBinding): string {
  return (
    `(principal=${binding.principal}, host=${binding.host}, ` +
    `operation=${operationName(binding.operation)}, ` +
    `permissionType=${permissionTypeName(binding.permissionType)}) on ` +
    `ResourcePattern(resourceType=${resourceTypeName(binding.resourceType)}, ` +
    `name=${binding.resourceName}, patternType=${patternTypeName(binding.patternType)})`
  );
}
