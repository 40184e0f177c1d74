// Decides whether a principal may do an operation on a resource, from a cached copy of the
// cluster's ACLs, by Kafka's rules (its AclAuthorizer and StandardAuthorizer):
//
// 1. A super user (super.users) may do everything.
// 2. The ACLs that apply to a resource are its type's LITERAL ACLs on its exact name or on the
//    wildcard '*', and its PREFIXED ACLs on a prefix of its name. When none applies, whoever
//    asks is allowed exactly when allow.everyone.if.no.acl.found is set (default false).
// 3. DENY wins: a DENY ACL that applies, for the principal (or User:*), the host (or '*') and
//    the operation (or ALL), refuses the request whatever ALLOWs there are.
// 4. Otherwise an ALLOW ACL for the principal, the host and the operation (or ALL) allows it,
//    where an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of
//    ALTER_CONFIGS also allows DESCRIBE_CONFIGS. Implied operations never widen a DENY.
// 5. Anything else is refused.
//
// The ACLs are replaced whole (replaceAcls) from the metadata stream; lookups read an index by
// resource type and name, so a request costs a few map lookups and a pass over the prefixes.
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  wildcardHost,
  wildcardPrincipal,
  wildcardResourceName,
  type AclBinding,
} from './acl';

export interface AclAuthorizerSettings {
  /** super.users: principals (User:admin) allowed everything. */
  readonly superUsers: readonly string[];
  /** allow.everyone.if.no.acl.found: allow a resource no ACL applies to. */
  readonly allowEveryoneIfNoAclFound: boolean;
}

/** One question to the authorizer. */
export interface AuthorizationRequest {
  readonly principal: string;
  /** The client's IP address. */
  readonly host: string;
  readonly operation: number;
  readonly resourceType: number;
  readonly resourceName: string;
}

/** One resource type's ACLs, by pattern. */
interface ResourceTypeAcls {
  readonly literal: Map<string, AclBinding[]>;
  readonly prefixed: Map<string, AclBinding[]>;
}

/** Point 4: the operations whose ALLOW also allows the key. */
const impliedBy: ReadonlyMap<number, readonly number[]> = new Map([
  [
    AclOperation.Describe,
    [
      AclOperation.Describe,
      AclOperation.Read,
      AclOperation.Write,
      AclOperation.Delete,
      AclOperation.Alter,
    ],
  ],
  [AclOperation.DescribeConfigs, [AclOperation.DescribeConfigs, AclOperation.AlterConfigs]],
]);

export class AclAuthorizer {
  private readonly superUsers: ReadonlySet<string>;
  private byResourceType = new Map<number, ResourceTypeAcls>();
  private all: readonly AclBinding[] = [];

  constructor(private readonly settings: AclAuthorizerSettings) {
    this.superUsers = new Set(settings.superUsers);
  }

  /** The cached ACLs, as last replaced. */
  acls(): readonly AclBinding[] {
    return this.all;
  }

  /** Replaces every cached ACL (a snapshot or a change from the metadata stream). */
  replaceAcls(acls: readonly AclBinding[]): void {
    const byResourceType = new Map<number, ResourceTypeAcls>();
    for (const acl of acls) {
      let typeAcls = byResourceType.get(acl.resourceType);
      if (typeAcls === undefined) {
        typeAcls = { literal: new Map(), prefixed: new Map() };
        byResourceType.set(acl.resourceType, typeAcls);
      }
      const byName =
        acl.patternType === PatternType.Prefixed ? typeAcls.prefixed : typeAcls.literal;
      const named = byName.get(acl.resourceName);
      if (named === undefined) byName.set(acl.resourceName, [acl]);
      else named.push(acl);
    }
    this.byResourceType = byResourceType;
    this.all = [...acls];
  }

  isSuperUser(principal: string): boolean {
    return this.superUsers.has(principal);
  }

  authorize(request: AuthorizationRequest): boolean {
    // Point 1.
    if (this.isSuperUser(request.principal)) return true;
    // Point 2.
    const applying = this.aclsApplyingTo(request.resourceType, request.resourceName);
    if (applying.length === 0) return this.settings.allowEveryoneIfNoAclFound;
    // Point 3.
    const denied = applying.some(
      (acl) =>
        acl.permissionType === AclPermissionType.Deny &&
        entryApplies(acl, request) &&
        (acl.operation === request.operation || acl.operation === AclOperation.All),
    );
    if (denied) return false;
    // Points 4 and 5.
    const allowing = impliedBy.get(request.operation) ?? [request.operation];
    return applying.some(
      (acl) =>
        acl.permissionType === AclPermissionType.Allow &&
        entryApplies(acl, request) &&
        (allowing.includes(acl.operation) || acl.operation === AclOperation.All),
    );
  }

  /**
   * Kafka's Authorizer.authorizeByResourceType: whether the principal may do the operation on at
   * least one resource of the type, that is whether some ALLOW pattern is not wholly covered by
   * a DENY (a DENY on the literal wildcard covers everything, a DENY prefix covers the literals
   * and longer prefixes it starts). Used where Kafka asks "any topic at all", such as an
   * idempotent producer's InitProducerId with WRITE on some topic instead of IDEMPOTENT_WRITE.
   */
  authorizeByResourceType(request: Omit<AuthorizationRequest, 'resourceName'>): boolean {
    if (this.isSuperUser(request.principal)) return true;
    const typeAcls = this.byResourceType.get(request.resourceType);
    if (typeAcls === undefined) return false;
    const applies = (acl: AclBinding, permission: number): boolean =>
      acl.permissionType === permission &&
      entryApplies(acl, request) &&
      (acl.operation === request.operation || acl.operation === AclOperation.All);
    const deniedLiterals = new Set<string>();
    const deniedPrefixes: string[] = [];
    const allowedLiterals: string[] = [];
    const allowedPrefixes: string[] = [];
    for (const [name, acls] of typeAcls.literal) {
      if (acls.some((acl) => applies(acl, AclPermissionType.Deny))) deniedLiterals.add(name);
      if (acls.some((acl) => applies(acl, AclPermissionType.Allow))) allowedLiterals.push(name);
    }
    for (const [name, acls] of typeAcls.prefixed) {
      if (acls.some((acl) => applies(acl, AclPermissionType.Deny))) deniedPrefixes.push(name);
      if (acls.some((acl) => applies(acl, AclPermissionType.Allow))) allowedPrefixes.push(name);
    }
    if (deniedLiterals.has(wildcardResourceName)) return false;
    const coveredByDeniedPrefix = (name: string): boolean =>
      deniedPrefixes.some((prefix) => name.startsWith(prefix));
    if (
      allowedLiterals.some(
        (name) =>
          name === wildcardResourceName ||
          (!deniedLiterals.has(name) && !coveredByDeniedPrefix(name)),
      )
    ) {
      return true;
    }
    return allowedPrefixes.some((prefix) => !coveredByDeniedPrefix(prefix));
  }

  /** Point 2: every ACL, of any principal, that applies to the named resource. */
  private aclsApplyingTo(resourceType: number, resourceName: string): AclBinding[] {
    const typeAcls = this.byResourceType.get(resourceType);
    if (typeAcls === undefined) return [];
    const applying = [
      ...(typeAcls.literal.get(resourceName) ?? []),
      ...(resourceName === wildcardResourceName
        ? []
        : (typeAcls.literal.get(wildcardResourceName) ?? [])),
    ];
    for (const [prefix, acls] of typeAcls.prefixed) {
      if (resourceName.startsWith(prefix)) applying.push(...acls);
    }
    return applying;
  }
}

/** Whether an ACL's principal and host cover the request's. */
function entryApplies(
  acl: AclBinding,
  request: { readonly principal: string; readonly host: string },
): boolean {
  return (
    (acl.principal === request.principal || acl.principal === wildcardPrincipal) &&
    (acl.host === request.host || acl.host === wildcardHost)
  );
}
