/**
 * ACLs on the gateway's gRPC API: each call asks for what its Kafka counterpart asks on the Kafka
 * listener (kafka-authorization.ts), on the principal the server bound to the call (principalOf)
 * and the client's address. A refusal is PERMISSION_DENIED with the typed code of the resource
 * (TOPIC_AUTHORIZATION_FAILED, GROUP_..., CLUSTER_...) and a message naming it; nothing of a
 * refused call is done. With the authorizer off, the handlers are returned unwrapped.
 *
 * 1. Unary calls are checked whole before their handler runs: one refused topic refuses the call.
 * 2. Streams (ProduceStream, Consume) check every request read from the stream before the
 *    handler sees it; a refused one ends the stream with the refusal.
 * 3. ListTopics and ListGroups answer only what the caller may DESCRIBE, as Metadata and
 *    ListGroups do on the Kafka listener.
 * 4. A call without an entry here needs ALTER on the cluster.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import {
  AclOperation,
  AuthorizationError,
  ResourceType,
  clusterResourceName,
  type Caller,
  type RequestAuthorizer,
} from '@spool/authorizer';
import { clientHostOf, principalOf, toGrpcStatus } from '@spool/common';
import type {
  AlterConfigsRequest,
  ConsumeRequest,
  ConsumerGroupHeartbeatRequest,
  CreatePartitionsRequest,
  CreateTopicsRequest,
  DeleteGroupRequest,
  DeleteRecordsRequest,
  DeleteTopicsRequest,
  DescribeConfigsRequest,
  DescribeGroupRequest,
  DescribeTopicsRequest,
  FetchRequest,
  ListGroupsResponse,
  ListOffsetsRequest,
  ListTopicsResponse,
  OffsetCommitRequest,
  OffsetFetchRequest,
  ProduceRequest,
  ResetOffsetsRequest,
} from '@spool/protocol';

/** One thing a call needs: an operation on a named resource. */
type Need = readonly [operation: number, resourceType: number, resourceName: string];

const topic = (operation: number, name: string): Need => [operation, ResourceType.Topic, name];
const group = (operation: number, name: string): Need => [operation, ResourceType.Group, name];
const cluster = (operation: number): Need => [operation, ResourceType.Cluster, clusterResourceName];

/** Point 1 and 2: what each call (or each request of a stream) needs, by RPC. */
const needsByRpc: Record<string, (request: never) => readonly Need[]> = {
  produce: (request: ProduceRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Write, partition.topic)),
  produceStream: (request: ProduceRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Write, partition.topic)),
  fetch: (request: FetchRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Read, partition.topic)),
  consume: (request: ConsumeRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Read, partition.topic)),
  listOffsets: (request: ListOffsetsRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Describe, partition.topic)),
  deleteRecords: (request: DeleteRecordsRequest) =>
    request.partitions.map((partition) => topic(AclOperation.Delete, partition.topic)),
  createTopics: (request: CreateTopicsRequest) =>
    request.topics.map((each) => topic(AclOperation.Create, each.name)),
  deleteTopics: (request: DeleteTopicsRequest) =>
    request.names.map((name) => topic(AclOperation.Delete, name)),
  createPartitions: (request: CreatePartitionsRequest) =>
    request.topics.map((each) => topic(AclOperation.Alter, each.name)),
  describeTopics: (request: DescribeTopicsRequest) =>
    request.names.map((name) => topic(AclOperation.Describe, name)),
  describeConfigs: (request: DescribeConfigsRequest) =>
    request.topics.map((name) => topic(AclOperation.DescribeConfigs, name)),
  alterConfigs: (request: AlterConfigsRequest) =>
    request.topics.map((each) => topic(AclOperation.AlterConfigs, each.topic)),
  listTopics: () => [],
  listGroups: () => [],
  describeCluster: () => [cluster(AclOperation.Describe)],
  alterPartitionReassignments: () => [cluster(AclOperation.Alter)],
  listPartitionReassignments: () => [cluster(AclOperation.Describe)],
  describeUserScramCredentials: () => [cluster(AclOperation.Describe)],
  decommissionBroker: () => [cluster(AclOperation.Alter)],
  // The Kafka listener's rule for BROKER config resources (Kafka's: on the cluster).
  describeBrokerConfigs: () => [cluster(AclOperation.DescribeConfigs)],
  alterBrokerConfigs: () => [cluster(AclOperation.AlterConfigs)],
  offsetCommit: (request: OffsetCommitRequest) => [
    group(AclOperation.Read, request.groupId),
    ...request.offsets.map((offset) => topic(AclOperation.Read, offset.topic)),
  ],
  offsetFetch: (request: OffsetFetchRequest) => [
    group(AclOperation.Describe, request.groupId),
    ...request.partitions.map((partition) => topic(AclOperation.Describe, partition.topic)),
  ],
  describeGroup: (request: DescribeGroupRequest) => [group(AclOperation.Describe, request.groupId)],
  deleteGroup: (request: DeleteGroupRequest) => [group(AclOperation.Delete, request.groupId)],
  resetOffsets: (request: ResetOffsetsRequest) => [
    group(AclOperation.Read, request.groupId),
    ...request.partitions.map((partition) => topic(AclOperation.Read, partition.topic)),
  ],
  // Kafka's rule: the subscribed topics must be visible to the member (DESCRIBE).
  consumerGroupHeartbeat: (request: ConsumerGroupHeartbeatRequest) => [
    group(AclOperation.Read, request.groupId),
    ...request.subscribedTopics.map((name) => topic(AclOperation.Describe, name)),
  ],

  // The ACL calls check the cluster themselves (acl-handlers.ts); InitProducerId below.
  createAcls: () => [],
  describeAcls: () => [],
  deleteAcls: () => [],
  initProducerId: () => [],
};

const streamingRpcs = new Set(['produceStream', 'consume']);

type Handler = (...args: never[]) => Promise<unknown>;

/** The handlers, each checking its call first (the points above). */
export function authorizedHandlers(
  handlers: Record<string, Handler>,
  authorizer: RequestAuthorizer,
): Record<string, Handler> {
  if (!authorizer.enabled) return handlers;
  const ensure = (caller: Caller, needs: readonly Need[]): void => {
    for (const [operation, resourceType, resourceName] of needs) {
      authorizer.ensureAuthorized(caller, operation, resourceType, resourceName);
    }
  };
  const wrapped: Record<string, Handler> = {};
  for (const [rpc, handler] of Object.entries(handlers)) {
    const needsOf = needsByRpc[rpc] ?? (() => [cluster(AclOperation.Alter)]);
    const serve = handler as (...args: unknown[]) => Promise<unknown>;
    if (streamingRpcs.has(rpc)) {
      wrapped[rpc] = ((call: ServerDuplexStream<unknown, unknown>) => {
        const caller = callerOf(call);
        return serve(checkedStream(call, (request) => ensure(caller, needsOf(request as never))));
      }) as Handler;
      continue;
    }
    wrapped[rpc] = (async (...args: unknown[]) => {
      // Unary and server-stream handlers get (request, call); a client or bidi stream (call).
      const call = (args.length >= 2 ? args[1] : args[0]) as { getPeer(): string };
      const caller = callerOf(call);
      if (rpc === 'initProducerId') ensureIdempotentWrite(authorizer, caller);
      else if (args.length >= 2) ensure(caller, needsOf(args[0] as never));
      else ensure(caller, [cluster(AclOperation.Alter)]);
      const response = await serve(...args);
      return filterListing(rpc, response, caller, authorizer);
    }) as Handler;
  }
  return wrapped;
}

function callerOf(call: { getPeer(): string }): Caller {
  return { principal: principalOf(call), clientHost: clientHostOf(call) };
}

/** Kafka's InitProducerId without a transactional id (KIP-679). */
function ensureIdempotentWrite(authorizer: RequestAuthorizer, caller: Caller): void {
  if (authorizer.authorizeByResourceType(caller, AclOperation.Write, ResourceType.Topic)) return;
  if (authorizer.authorizeCluster(caller, AclOperation.IdempotentWrite)) return;
  throw new AuthorizationError(
    caller,
    AclOperation.IdempotentWrite,
    ResourceType.Cluster,
    clusterResourceName,
  );
}

/** Point 3. */
function filterListing(
  rpc: string,
  response: unknown,
  caller: Caller,
  authorizer: RequestAuthorizer,
): unknown {
  const describes = (resourceType: number, name: string) =>
    authorizer.authorize(caller, AclOperation.Describe, resourceType, name, { audit: false });
  if (rpc === 'listTopics') {
    const listing = response as ListTopicsResponse;
    return {
      ...listing,
      names: listing.names.filter((name) => describes(ResourceType.Topic, name)),
    };
  }
  if (rpc === 'listGroups' && !describes(ResourceType.Cluster, clusterResourceName)) {
    const listing = response as ListGroupsResponse;
    return {
      ...listing,
      groups: listing.groups.filter((each) => describes(ResourceType.Group, each.groupId)),
    };
  }
  return response;
}

/**
 * Point 2: the call as its handler sees it, except that each request is checked before the
 * handler's 'data' listeners get it; a refused one ends the stream with PERMISSION_DENIED.
 */
function checkedStream<Call extends ServerDuplexStream<unknown, unknown>>(
  call: Call,
  check: (request: unknown) => void,
): Call {
  let refused = false;
  const on = (event: string | symbol, listener: (...args: unknown[]) => void): Call => {
    if (event !== 'data') {
      call.on(event, listener);
      return proxy;
    }
    call.on('data', (request: unknown) => {
      if (refused) return;
      try {
        check(request);
      } catch (error) {
        refused = true;
        call.emit('error', toGrpcStatus(error));
        return;
      }
      listener(request);
    });
    return proxy;
  };
  const proxy: Call = new Proxy(call, {
    get(target, property) {
      if (property === 'on' || property === 'addListener') return on;
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  return proxy;
}
