// What the services that enforce ACLs hold (the gateway's gRPC API and its Kafka listener, the
// coordinators): Kafka's authorizer.class.name idea. Disabled (plain `spool dev`), it allows
// everything without looking; enabled (`--authorizer acl`, `spool dev --secure`), it asks the
// AclAuthorizer over the cached ACLs and audits each refusal:
//
// 1. Every denial counts in spool_authorization_denials_total{principal, resource_type}. The
//    principal label is bounded: past principalLabelsMax distinct principals the rest count as
//    "other", so a client cycling names cannot grow the registry without end.
// 2. Denials are logged at most deniedLogLinesPerWindow lines per deniedLogWindowMs; the next
//    line after a full window says how many were left out. A refusal the caller asked not to
//    audit (Metadata leaving out topics, as Kafka's logIfDenied=false) is neither counted nor
//    logged.
import { ConfigError, type Logger } from '@spool/common';
import { CatalogError } from '@spool/errors';
import { Counter, type Registry } from 'prom-client';
import {
  clusterResourceName,
  operationName,
  ResourceType,
  resourceTypeName,
  type AclBinding,
} from './acl';
import { AclAuthorizer, type AclAuthorizerSettings } from './acl-authorizer';

/** Point 1: distinct principal label values at most. */
const principalLabelsMax = 1_000;
/** Point 2: log lines about denials per window at most, so a refused client cannot flood logs. */
const deniedLogLinesPerWindow = 10;
const deniedLogWindowMs = 10_000;

/** Who asks: Kafka's principal string and the client's IP address. */
export interface Caller {
  readonly principal: string;
  readonly clientHost: string;
}

export interface RequestAuthorizerOptions extends AclAuthorizerSettings {
  readonly enabled: boolean;
  readonly logger: Logger;
  readonly metrics: Registry;
  /** For tests: the clock of the log window. */
  readonly nowMs?: () => number;
}

/** The catalog code a refusal on each resource type answers with (Kafka's). */
const deniedCodeByResourceType = {
  [ResourceType.Topic]: 'TOPIC_AUTHORIZATION_FAILED',
  [ResourceType.Group]: 'GROUP_AUTHORIZATION_FAILED',
  [ResourceType.Cluster]: 'CLUSTER_AUTHORIZATION_FAILED',
  [ResourceType.TransactionalId]: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
} as const;

export type AuthorizationFailedCode =
  (typeof deniedCodeByResourceType)[keyof typeof deniedCodeByResourceType];

/** The code a refusal on a resource type answers with. */
export function authorizationFailedCodeOf(resourceType: number): AuthorizationFailedCode {
  const code = deniedCodeByResourceType[resourceType as keyof typeof deniedCodeByResourceType];
  if (code === undefined) throw new Error(`resource type ${resourceType} has no refusal code`);
  return code;
}

/** A refused request: the code names the resource type, the message the resource. */
export class AuthorizationError extends CatalogError<AuthorizationFailedCode> {
  constructor(
    readonly caller: Caller,
    readonly operation: number,
    readonly resourceType: number,
    readonly resourceName: string,
  ) {
    super(
      authorizationFailedCodeOf(resourceType),
      `${caller.principal} is not authorized to ${operationName(operation)} ` +
        `${resourceTypeName(resourceType)} ${resourceName}`,
    );
  }
}

export class RequestAuthorizer {
  readonly enabled: boolean;
  private readonly aclAuthorizer: AclAuthorizer;
  private readonly denials: Counter<'principal' | 'resource_type'>;
  private readonly principalLabels = new Set<string>();
  private readonly logger: Logger;
  private readonly nowMs: () => number;
  private windowStartMs = -Infinity;
  private windowLines = 0;
  private linesLeftOut = 0;

  constructor(options: RequestAuthorizerOptions) {
    for (const principal of options.superUsers) {
      if (!/^[^:]+:.+$/.test(principal)) {
        throw new ConfigError(
          `invalid value for setting super.users: ${JSON.stringify(principal)}; ` +
            'expected principals of the form Type:name (User:admin)',
        );
      }
    }
    this.enabled = options.enabled;
    this.aclAuthorizer = new AclAuthorizer(options);
    this.logger = options.logger;
    this.nowMs = options.nowMs ?? Date.now;
    const existing = options.metrics.getSingleMetric('spool_authorization_denials_total');
    this.denials =
      (existing as Counter<'principal' | 'resource_type'> | undefined) ??
      new Counter({
        name: 'spool_authorization_denials_total',
        help: 'Requests refused by an ACL, by principal and resource type.',
        labelNames: ['principal', 'resource_type'],
        registers: [options.metrics],
      });
  }

  /** The cached ACLs, replaced whole from the metadata stream. */
  replaceAcls(acls: readonly AclBinding[]): void {
    this.aclAuthorizer.replaceAcls(acls);
  }

  acls(): readonly AclBinding[] {
    return this.aclAuthorizer.acls();
  }

  /** Whether the caller may do the operation on the resource; a refusal is audited unless asked. */
  authorize(
    caller: Caller,
    operation: number,
    resourceType: number,
    resourceName: string,
    options: { readonly audit?: boolean } = {},
  ): boolean {
    if (!this.enabled) return true;
    const allowed = this.aclAuthorizer.authorize({
      principal: caller.principal,
      host: caller.clientHost,
      operation,
      resourceType,
      resourceName,
    });
    if (!allowed && options.audit !== false) {
      this.audit(caller, operation, resourceType, resourceName);
    }
    return allowed;
  }

  /** authorize on the one cluster resource. */
  authorizeCluster(caller: Caller, operation: number): boolean {
    return this.authorize(caller, operation, ResourceType.Cluster, clusterResourceName);
  }

  /** Whether the caller may do the operation on some resource of the type (not audited). */
  authorizeByResourceType(caller: Caller, operation: number, resourceType: number): boolean {
    if (!this.enabled) return true;
    return this.aclAuthorizer.authorizeByResourceType({
      principal: caller.principal,
      host: caller.clientHost,
      operation,
      resourceType,
    });
  }

  /** authorize, throwing AuthorizationError when refused (the gRPC API's answer). */
  ensureAuthorized(
    caller: Caller,
    operation: number,
    resourceType: number,
    resourceName: string,
  ): void {
    if (!this.authorize(caller, operation, resourceType, resourceName)) {
      throw new AuthorizationError(caller, operation, resourceType, resourceName);
    }
  }

  /** Points 1 and 2. */
  private audit(
    caller: Caller,
    operation: number,
    resourceType: number,
    resourceName: string,
  ): void {
    if (this.principalLabels.size < principalLabelsMax) {
      this.principalLabels.add(caller.principal);
    }
    const principalLabel = this.principalLabels.has(caller.principal) ? caller.principal : 'other';
    this.denials.inc({ principal: principalLabel, resource_type: resourceTypeName(resourceType) });
    const now = this.nowMs();
    if (now - this.windowStartMs >= deniedLogWindowMs) {
      this.windowStartMs = now;
      this.windowLines = 0;
    }
    if (this.windowLines >= deniedLogLinesPerWindow) {
      this.linesLeftOut += 1;
      return;
    }
    this.windowLines += 1;
    this.logger.warn(
      {
        principal: caller.principal,
        host: caller.clientHost,
        operation: operationName(operation),
        resourceType: resourceTypeName(resourceType),
        resourceName,
        ...(this.linesLeftOut > 0 ? { deniedNotLogged: this.linesLeftOut } : {}),
      },
      'authorization denied',
    );
    this.linesLeftOut = 0;
  }
}
