/**
 * ACLs on the Kafka listener: before a handler runs, the dispatcher passes the request through
 * the API's gate, which asks the authorizer what Kafka's KafkaApis asks for that API, on the
 * connection's principal and host. With the authorizer off (plain `spool dev`), no gate runs.
 *
 * 1. `none`: nothing to check (ApiVersions, SASL handshakes).
 * 2. `cluster`: an operation on the cluster (DescribeCluster DESCRIBE, reassignments ALTER, user
 *    credentials). Refused, the response is the API's default with CLUSTER_AUTHORIZATION_FAILED
 *    in its top-level errorCode.
 * 3. `group`: an operation on the one group the request names (JoinGroup READ, ...). Refused,
 *    the default response with GROUP_AUTHORIZATION_FAILED.
 * 4. `custom` (kafka-topic-gates.ts, kafka-group-gates.ts): the request is split, the handler
 *    serves the part the caller may act on, and the refused topics, groups or resources are
 *    added to its answer, each with its own code, so nothing refused is written or read.
 * 5. An API with no entry here is refused unless the caller may ALTER the cluster, by closing
 *    the connection (a response shape is unknown here): a new API is closed to ordinary users
 *    until someone writes down what it needs.
 */
import { AclOperation, ResourceType, type RequestAuthorizer } from '@spool/authorizer';
import { ApiKey, apiMessageOf } from '@spool/kafka-protocol';
import type { KafkaApiContext } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber } from './kafka-errors';
import { groupGates } from './kafka-group-gates';
import { KafkaRequestRefused } from './kafka-request-frame';
import { topicGates } from './kafka-topic-gates';
import { alterUserScramCredentialsGate } from './kafka-user-scram-credentials';

/** What a custom gate decides: a whole answer, or the request to serve and how to finish its answer. */
export type GateOutcome<Request, Response> =
  | { readonly refused: Response }
  | { readonly request: Request; readonly complete: (response: Response) => Response };

export type CustomGate<Request = never, Response = never> = (
  request: Request,
  version: number,
  context: KafkaApiContext,
  authorizer: RequestAuthorizer,
) => GateOutcome<Request, Response>;

/** A gate with its request and response types erased, for the table by API key. */
export function erasedGate<Request, Response>(
  gate: CustomGate<Request, Response>,
): CustomGate<unknown, unknown> {
  return gate as unknown as CustomGate<unknown, unknown>;
}

type Gate =
  | { readonly kind: 'none' }
  | { readonly kind: 'cluster'; readonly operation: number }
  | {
      readonly kind: 'group';
      readonly operation: number;
      readonly groupIdOf: (request: { readonly groupId: string }) => string;
    }
  | { readonly kind: 'custom'; readonly gate: CustomGate<unknown, unknown> };

const groupIdOf = (request: { readonly groupId: string }): string => request.groupId;

/** Points 1 to 3; the custom gates come from their files. */
function gatesOf(view: KafkaClusterView): Map<number, Gate> {
  const gates = new Map<number, Gate>([
    [ApiKey.ApiVersions, { kind: 'none' }],
    [ApiKey.SaslHandshake, { kind: 'none' }],
    [ApiKey.SaslAuthenticate, { kind: 'none' }],
    // The ACL APIs check the cluster themselves (kafka-create-acls.ts and its siblings).
    [ApiKey.DescribeAcls, { kind: 'none' }],
    [ApiKey.CreateAcls, { kind: 'none' }],
    [ApiKey.DeleteAcls, { kind: 'none' }],
    [ApiKey.DescribeCluster, { kind: 'cluster', operation: AclOperation.Describe }],
    [ApiKey.DescribeLogDirs, { kind: 'cluster', operation: AclOperation.Describe }],
    [ApiKey.AlterPartitionReassignments, { kind: 'cluster', operation: AclOperation.Alter }],
    [ApiKey.ListPartitionReassignments, { kind: 'cluster', operation: AclOperation.Describe }],
    [ApiKey.DescribeUserScramCredentials, { kind: 'cluster', operation: AclOperation.Describe }],
    [ApiKey.DescribeClientQuotas, { kind: 'cluster', operation: AclOperation.DescribeConfigs }],
    [
      ApiKey.AlterUserScramCredentials,
      { kind: 'custom', gate: erasedGate(alterUserScramCredentialsGate) },
    ],
    [ApiKey.JoinGroup, { kind: 'group', operation: AclOperation.Read, groupIdOf }],
    [ApiKey.SyncGroup, { kind: 'group', operation: AclOperation.Read, groupIdOf }],
    [ApiKey.Heartbeat, { kind: 'group', operation: AclOperation.Read, groupIdOf }],
    [ApiKey.LeaveGroup, { kind: 'group', operation: AclOperation.Read, groupIdOf }],
  ]);
  for (const [apiKey, gate] of [...topicGates(view), ...groupGates()]) {
    gates.set(apiKey, { kind: 'custom', gate });
  }
  return gates;
}

export class KafkaAuthorization {
  private readonly gates: Map<number, Gate>;

  constructor(
    readonly authorizer: RequestAuthorizer,
    view: KafkaClusterView,
  ) {
    this.gates = gatesOf(view);
  }

  /** Whether the API has a rule of its own (point 5 closes the others to ordinary users). */
  hasRule(apiKey: number): boolean {
    return this.gates.has(apiKey);
  }

  /** The request to serve and how to finish its answer, or the whole answer when refused. */
  gate(
    apiKey: number,
    request: unknown,
    version: number,
    context: KafkaApiContext,
  ): GateOutcome<unknown, unknown> {
    const passed = { request, complete: (response: unknown) => response };
    if (!this.authorizer.enabled) return passed;
    const gate = this.gates.get(apiKey);
    switch (gate?.kind) {
      case 'none':
        return passed;
      case 'cluster':
        return this.authorizer.authorizeCluster(context, gate.operation)
          ? passed
          : { refused: refusal(apiKey, KafkaErrorNumber.ClusterAuthorizationFailed) };
      case 'group':
        return this.authorizer.authorize(
          context,
          gate.operation,
          ResourceType.Group,
          gate.groupIdOf(request as { groupId: string }),
        )
          ? passed
          : { refused: refusal(apiKey, KafkaErrorNumber.GroupAuthorizationFailed) };
      case 'custom':
        return gate.gate(request, version, context, this.authorizer);
      case undefined:
        // Point 5.
        if (this.authorizer.authorizeCluster(context, AclOperation.Alter)) return passed;
        throw new KafkaRequestRefused(
          `${apiMessageOf(apiKey)?.name ?? apiKey}: CLUSTER_AUTHORIZATION_FAILED: ` +
            `${context.principal} may not call an API without an authorization rule`,
        );
    }
  }
}

/** Points 2 and 3: the API's default response with the code in its top-level errorCode. */
function refusal(apiKey: number, errorCode: number): unknown {
  const response = apiMessageOf(apiKey)!.defaultResponse() as Record<string, unknown>;
  if (!('errorCode' in response)) {
    throw new KafkaRequestRefused(`${apiMessageOf(apiKey)!.name}: refused (error ${errorCode})`);
  }
  return { ...response, errorCode };
}

/**
 * A copy of a response entry (a topic, a group, a resource) with every errorCode in it, at any
 * depth, set to `errorCode`: what the handler would have answered for it, refused.
 */
export function withErrorCode<Entry>(entry: Entry, errorCode: number, message?: string): Entry {
  if (Array.isArray(entry)) {
    return entry.map((item: unknown) => withErrorCode(item, errorCode, message)) as Entry;
  }
  if (typeof entry !== 'object' || entry === null || Buffer.isBuffer(entry)) return entry;
  const copy: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(entry)) {
    if (field === 'errorCode') copy[field] = errorCode;
    else if (field === 'errorMessage' && message !== undefined) copy[field] = message;
    else copy[field] = withErrorCode(value, errorCode, message);
  }
  return copy as Entry;
}
