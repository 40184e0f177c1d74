// Proves Kafka's ACL rules of two group APIs that name topics, and that no served API is left
// to the fallback rule: OffsetDelete needs DELETE on the group (refused whole) and READ on each
// topic (a refused topic's partitions answered TOPIC_AUTHORIZATION_FAILED and never sent on);
// ConsumerGroupHeartbeat needs READ on the group and DESCRIBE on every subscribed topic, else
// the heartbeat is refused whole; and every API the listener serves has an authorization rule
// of its own, so a new API cannot slip in behind "ALTER on the cluster" unnoticed.
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  RequestAuthorizer,
  ResourceType,
} from '@spool/authorizer';
import { createLogger, type Logger, type RequestMetrics } from '@spool/common';
import {
  ApiKey,
  defaultConsumerGroupHeartbeatRequest,
  defaultConsumerGroupHeartbeatResponse,
  defaultOffsetDeleteResponse,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type OffsetDeleteRequest,
  type OffsetDeleteResponse,
} from '@spool/kafka-protocol';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { KafkaApiContext } from './kafka-api-dispatcher';
import { createKafkaApis, type KafkaApiDependencies } from './kafka-apis';
import { KafkaAuthorization, type GateOutcome } from './kafka-authorization';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber } from './kafka-errors';
import { groupGates } from './kafka-group-gates';

const context = { principal: 'User:alice', clientHost: '127.0.0.1' } as KafkaApiContext;

function acl(resourceType: number, resourceName: string, operation: number) {
  return {
    resourceType,
    resourceName,
    patternType: PatternType.Literal,
    principal: 'User:alice',
    host: '*',
    operation,
    permissionType: AclPermissionType.Allow,
  };
}

function authorizerWith(acls: ReturnType<typeof acl>[]): RequestAuthorizer {
  const authorizer = new RequestAuthorizer({
    enabled: true,
    superUsers: [],
    allowEveryoneIfNoAclFound: false,
    logger: { warn: () => undefined } as unknown as Logger,
    metrics: new Registry(),
  });
  authorizer.replaceAcls(acls);
  return authorizer;
}

function gateOf<Request, Response>(apiKey: number) {
  const entry = groupGates().find(([key]) => key === apiKey);
  return entry![1] as unknown as (
    request: Request,
    version: number,
    context: KafkaApiContext,
    authorizer: RequestAuthorizer,
  ) => GateOutcome<Request, Response>;
}

describe('the OffsetDelete gate', () => {
  const gate = gateOf<OffsetDeleteRequest, OffsetDeleteResponse>(ApiKey.OffsetDelete);
  const request: OffsetDeleteRequest = {
    groupId: 'billing',
    topics: [
      { name: 'orders', partitions: [{ partitionIndex: 0 }] },
      { name: 'secret', partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] },
    ],
  };

  it('refuses the whole request without DELETE on the group', () => {
    const outcome = gate(request, 0, context, authorizerWith([]));
    expect(outcome).toEqual({
      refused: {
        ...defaultOffsetDeleteResponse(),
        errorCode: KafkaErrorNumber.GroupAuthorizationFailed,
      },
    });
  });

  it('sends on only the topics the caller may READ and refuses the others', () => {
    const authorizer = authorizerWith([
      acl(ResourceType.Group, 'billing', AclOperation.Delete),
      acl(ResourceType.Topic, 'orders', AclOperation.Read),
    ]);
    const outcome = gate(request, 0, context, authorizer);
    if (!('complete' in outcome)) throw new Error('refused whole');
    expect(outcome.request.topics.map((topic) => topic.name)).toEqual(['orders']);
    const answered = outcome.complete({
      ...defaultOffsetDeleteResponse(),
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, errorCode: 0 }] }],
    });
    expect(answered.topics).toEqual([
      { name: 'orders', partitions: [{ partitionIndex: 0, errorCode: 0 }] },
      {
        name: 'secret',
        partitions: [
          { partitionIndex: 0, errorCode: KafkaErrorNumber.TopicAuthorizationFailed },
          { partitionIndex: 1, errorCode: KafkaErrorNumber.TopicAuthorizationFailed },
        ],
      },
    ]);
  });
});

describe('the ConsumerGroupHeartbeat gate', () => {
  const gate = gateOf<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>(
    ApiKey.ConsumerGroupHeartbeat,
  );
  const request: ConsumerGroupHeartbeatRequest = {
    ...defaultConsumerGroupHeartbeatRequest(),
    groupId: 'billing',
    subscribedTopicNames: ['orders', 'secret'],
  };
  const readGroup = acl(ResourceType.Group, 'billing', AclOperation.Read);

  it('refuses a member that may not READ the group', () => {
    const outcome = gate(request, 0, context, authorizerWith([]));
    expect('refused' in outcome && outcome.refused.errorCode).toBe(
      KafkaErrorNumber.GroupAuthorizationFailed,
    );
  });

  it('refuses a subscription naming a topic the member may not DESCRIBE', () => {
    const authorizer = authorizerWith([
      readGroup,
      acl(ResourceType.Topic, 'orders', AclOperation.Describe),
    ]);
    const outcome = gate(request, 0, context, authorizer);
    if (!('refused' in outcome)) throw new Error('served');
    expect(outcome.refused).toEqual({
      ...defaultConsumerGroupHeartbeatResponse(),
      errorCode: KafkaErrorNumber.TopicAuthorizationFailed,
      errorMessage: 'User:alice may not DESCRIBE the subscribed topics secret',
    });
  });

  it('serves a subscription of visible topics, and a heartbeat that repeats none', () => {
    const authorizer = authorizerWith([
      readGroup,
      acl(ResourceType.Topic, 'orders', AclOperation.Read),
      acl(ResourceType.Topic, 'secret', AclOperation.Describe),
    ]);
    expect('complete' in gate(request, 0, context, authorizer)).toBe(true);
    const unchanged = { ...request, subscribedTopicNames: null };
    expect('complete' in gate(unchanged, 0, context, authorizerWith([readGroup]))).toBe(true);
  });
});

describe('the authorization table', () => {
  it('has a rule of its own for every API the listener serves', () => {
    const unused = {} as never;
    const dispatcher = createKafkaApis({
      view: unused,
      produce: unused,
      fetch: unused,
      offsets: { link: unused, storageClient: () => undefined },
      fetchSessions: { cache: unused, countFetch: () => undefined },
      coordinators: unused,
      requestMetrics: {} as RequestMetrics,
      logger: createLogger({ service: 'test', level: 'silent' }),
      acls: { authorizer: authorizerWith([]), handlers: unused },
      sasl: unused,
    } as unknown as KafkaApiDependencies);
    const authorization = new KafkaAuthorization(authorizerWith([]), {} as KafkaClusterView);
    const served = dispatcher.servedVersions().map((api) => api.apiKey);
    expect(served.length).toBeGreaterThan(30);
    expect(served.filter((apiKey) => !authorization.hasRule(apiKey))).toEqual([]);
  });
});
