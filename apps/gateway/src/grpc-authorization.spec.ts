// Proves the gRPC side of two of Kafka's rules, with the authorizer and fake calls (the wiring of
// every call is proved end to end by test/security-matrix.spec.ts): ConsumerGroupHeartbeat needs
// READ on the group and DESCRIBE on every subscribed topic, and a refused heartbeat never reaches
// the coordinator; DescribeUserScramCredentials needs DESCRIBE on the cluster, not ALTER;
// DescribeBrokerConfigs and AlterBrokerConfigs need DESCRIBE_CONFIGS and ALTER_CONFIGS on the
// cluster, as the Kafka listener's BROKER config resources, and a refused alter is never served.
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  RequestAuthorizer,
  ResourceType,
  clusterResourceName,
} from '@spool/authorizer';
import { bindPrincipal, type Logger } from '@spool/common';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { authorizedHandlers } from './grpc-authorization';

function allow(resourceType: number, resourceName: string, operation: number) {
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

function handlersWith(acls: ReturnType<typeof allow>[]) {
  const authorizer = new RequestAuthorizer({
    enabled: true,
    superUsers: [],
    allowEveryoneIfNoAclFound: false,
    logger: { warn: () => undefined } as unknown as Logger,
    metrics: new Registry(),
  });
  authorizer.replaceAcls(acls);
  const served: string[] = [];
  const handlers = authorizedHandlers(
    {
      consumerGroupHeartbeat: async () => served.push('consumerGroupHeartbeat'),
      describeUserScramCredentials: async () => served.push('describeUserScramCredentials'),
      describeBrokerConfigs: async () => served.push('describeBrokerConfigs'),
      alterBrokerConfigs: async () => served.push('alterBrokerConfigs'),
    },
    authorizer,
  );
  return { handlers, served };
}

/** A unary call of User:alice from 127.0.0.1. */
function aliceCall() {
  const call = { getPeer: () => '127.0.0.1:40000' };
  bindPrincipal(call, 'User:alice');
  return call;
}

const heartbeat = { groupId: 'billing', subscribedTopics: ['orders', 'secret'] };
const readGroup = allow(ResourceType.Group, 'billing', AclOperation.Read);

describe('gRPC authorization of Kafka-ruled calls', () => {
  it('refuses a heartbeat subscribing to a topic the member may not DESCRIBE', async () => {
    const { handlers, served } = handlersWith([
      readGroup,
      allow(ResourceType.Topic, 'orders', AclOperation.Describe),
    ]);
    await expect(
      handlers.consumerGroupHeartbeat!(heartbeat as never, aliceCall() as never),
    ).rejects.toMatchObject({ code: 'TOPIC_AUTHORIZATION_FAILED' });
    expect(served).toEqual([]);
  });

  it('serves a heartbeat whose every subscribed topic is visible', async () => {
    const { handlers, served } = handlersWith([
      readGroup,
      allow(ResourceType.Topic, 'orders', AclOperation.Describe),
      allow(ResourceType.Topic, 'secret', AclOperation.Read),
    ]);
    await handlers.consumerGroupHeartbeat!(heartbeat as never, aliceCall() as never);
    expect(served).toEqual(['consumerGroupHeartbeat']);
  });

  it('lets DESCRIBE on the cluster describe users, and refuses without it', async () => {
    const refused = handlersWith([]);
    await expect(
      refused.handlers.describeUserScramCredentials!({} as never, aliceCall() as never),
    ).rejects.toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    const { handlers, served } = handlersWith([
      allow(ResourceType.Cluster, clusterResourceName, AclOperation.Describe),
    ]);
    await handlers.describeUserScramCredentials!({} as never, aliceCall() as never);
    expect(served).toEqual(['describeUserScramCredentials']);
  });

  it("gates broker configs as Kafka's BROKER resource: DESCRIBE_CONFIGS, ALTER_CONFIGS on the cluster", async () => {
    const cluster = (operation: number) =>
      allow(ResourceType.Cluster, clusterResourceName, operation);
    const change = { brokers: [{ broker: '1', set: [], delete: [] }], validateOnly: false };
    // DESCRIBE_CONFIGS does not alter, and ALTER (the fallback of calls without a rule) is not
    // ALTER_CONFIGS.
    const describer = handlersWith([cluster(AclOperation.DescribeConfigs)]);
    await describer.handlers.describeBrokerConfigs!({} as never, aliceCall() as never);
    await expect(
      describer.handlers.alterBrokerConfigs!(change as never, aliceCall() as never),
    ).rejects.toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    const alterer = handlersWith([cluster(AclOperation.Alter)]);
    await expect(
      alterer.handlers.alterBrokerConfigs!(change as never, aliceCall() as never),
    ).rejects.toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    await expect(
      alterer.handlers.describeBrokerConfigs!({} as never, aliceCall() as never),
    ).rejects.toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    expect([...describer.served, ...alterer.served]).toEqual(['describeBrokerConfigs']);
    const { handlers, served } = handlersWith([cluster(AclOperation.AlterConfigs)]);
    await handlers.alterBrokerConfigs!(change as never, aliceCall() as never);
    expect(served).toEqual(['alterBrokerConfigs']);
  });
});
