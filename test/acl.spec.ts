// Proves Kafka's ACLs end to end on real processes (a controller, a storage node and a gateway
// with --authorizer acl; every client is User:ANONYMOUS from 127.0.0.1, so the host is what
// tells a DENY apart): without an ACL a KafkaJS producer and the SDK are refused with
// TOPIC_AUTHORIZATION_FAILED and nothing is written; an ALLOW lets the produce through; a DENY
// for the client's host overrides the ALLOW; a PREFIXED ALLOW covers the topics it starts;
// Metadata and ListTopics leave out the topics the caller may not describe; `spool acl` is
// refused CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster, then creates, lists and
// deletes; KafkaJS's createAcls and describeAcls go through Kafka's CreateAcls and DescribeAcls,
// and Apache Kafka's kafka-acls adds and lists an ACL; denials are counted by principal and
// resource type; OffsetForLeaderEpoch (on the wire) answers TOPIC_AUTHORIZATION_FAILED for a
// topic the caller may not describe.
import { Spool, type Admin as SpoolAdmin } from '@spool/client';
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  ResourcePatternTypes,
  logLevel,
  type Admin,
} from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readOffsetForLeaderEpochResponse,
  writeOffsetForLeaderEpochRequest,
} from '@spool/kafka-protocol';
import { runCli } from './support/cli-process';
import { runKafkaTool } from './support/kafka-tools';
import { kafkaRequest } from './support/kafka-wire-client';
import { startGatewayProcess } from './support/gateway-client';
import type { ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const anonymous = 'User:ANONYMOUS';
/** Kafka's numbers (acl.proto). */
const topicType = 2;
const clusterType = 4;
const literal = 3;
const prefixed = 4;
const allow = 3;
const deny = 2;
const operations = { write: 4, alter: 7, describe: 8 } as const;

let cluster: StorageTestCluster | undefined;
let gateway: ServiceProcess | undefined;
let kafka: Kafka;
let kafkaAdmin: Admin;
let spool: Spool;
let spoolAdmin: SpoolAdmin;
let gatewayAddress: string;
let bootstrap: string;
let kafkaPort: number;

/** Creates ACLs through the controller, which stores them without asking anyone. */
async function grant(
  acls: Array<{
    resourceType?: number;
    resourceName: string;
    patternType?: number;
    host?: string;
    operation: number;
    permissionType?: number;
  }>,
): Promise<void> {
  const response = await cluster!.admin.call(cluster!.admin.client.createAcls, {
    creations: acls.map((acl) => ({
      resourceType: topicType,
      patternType: literal,
      principal: anonymous,
      host: '*',
      permissionType: allow,
      ...acl,
    })),
  });
  expect(response.results.every((result) => result.error === undefined)).toBe(true);
}

/** Sends one record with KafkaJS; resolves with the error type, or 'OK'. */
async function kafkaProduce(topic: string): Promise<string> {
  const producer = kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, messages: [{ value: 'v' }] });
    return 'OK';
  } catch (error) {
    // KafkaJS reports a refusal in Metadata as "Not authorized to access topics", in Produce
    // by the error's type.
    const { type, message } = error as { type?: string; message: string };
    if (message.includes('Not authorized to access topics')) return 'TOPIC_AUTHORIZATION_FAILED';
    return type ?? message;
  } finally {
    await producer.disconnect();
  }
}

/** The end offset of partition 0, through the gateway (ListOffsets needs DESCRIBE). */
async function endOffset(topic: string): Promise<bigint> {
  const offsets = await spoolAdmin.fetchTopicOffsets(topic);
  return BigInt(offsets[0]!.high);
}

beforeAll(async () => {
  cluster = await StorageTestCluster.start(1);
  for (const topic of ['orders', 'orders-eu', 'payments', 'secret']) {
    const created = await cluster.admin.createTopic(topic, 1, 1);
    expect(created.results[0]?.error).toBeUndefined();
  }
  gateway = await startGatewayProcess(cluster.controller.grpcPort, ['--authorizer', 'acl']);
  const listening = gateway.logLines.find((line) => line.includes('Kafka listener listening'));
  kafkaPort = (JSON.parse(listening!) as { kafkaPort: number }).kafkaPort;
  gatewayAddress = `127.0.0.1:${gateway.grpcPort}`;
  bootstrap = `127.0.0.1:${kafkaPort}`;
  kafka = new Kafka({
    clientId: 'acl-spec',
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  spool = new Spool({ brokers: [gatewayAddress], clientId: 'acl-spec' });
  spoolAdmin = spool.admin({ requestTimeoutMs: 10_000, retries: 1 });
}, 60_000);

afterAll(async () => {
  await kafkaAdmin?.disconnect();
  await spool?.close();
  gateway?.child.kill('SIGKILL');
  await gateway?.exited;
  await cluster?.stop();
});

describe('ACLs', () => {
  it('refuse without an ACL, allow with one, and let DENY win', async () => {
    // No ACL at all: Metadata refuses the topic asked for by name.
    expect(await kafkaProduce('orders')).toBe('TOPIC_AUTHORIZATION_FAILED');
    // DESCRIBE only: Produce itself is refused, and nothing is written.
    await grant([{ resourceName: 'orders', operation: operations.describe }]);
    await expect
      .poll(() => kafkaProduce('orders'), { timeout: 10_000 })
      .toBe('TOPIC_AUTHORIZATION_FAILED');
    await grant([{ resourceName: 'orders', operation: operations.write }]);
    await expect.poll(() => kafkaProduce('orders'), { timeout: 10_000 }).toBe('OK');
    await grant([
      {
        resourceName: 'orders',
        operation: operations.write,
        permissionType: deny,
        host: '127.0.0.1',
      },
    ]);
    await expect
      .poll(() => kafkaProduce('orders'), { timeout: 10_000 })
      .toBe('TOPIC_AUTHORIZATION_FAILED');
    // Exactly the one allowed record was written (ListOffsets needs DESCRIBE, which is granted).
    expect(await endOffset('orders')).toBe(1n);
  });

  it('refuses the SDK on gRPC with the typed code naming the topic', async () => {
    const producer = spool.producer({ retries: 0, enableIdempotence: false });
    try {
      await expect(
        producer.send({ topic: 'payments', messages: [{ value: 'v' }] }),
      ).rejects.toMatchObject({ code: 'TOPIC_AUTHORIZATION_FAILED' });
    } finally {
      await producer.close();
    }
  });

  it('applies a PREFIXED ALLOW to the topics it starts', async () => {
    await grant([{ resourceName: 'orders-', patternType: prefixed, operation: operations.write }]);
    await expect.poll(() => kafkaProduce('orders-eu'), { timeout: 10_000 }).toBe('OK');
    expect(await kafkaProduce('payments')).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect(await endOffset('orders-eu')).toBe(1n);
  });

  it('answers OffsetForLeaderEpoch only for the topics the caller may describe', async () => {
    const endOfEpoch = async (topic: string) =>
      (
        await kafkaRequest(
          { host: '127.0.0.1', port: kafkaPort },
          {
            apiKey: 23,
            version: 4,
            write: (writer) =>
              writeOffsetForLeaderEpochRequest(
                writer,
                {
                  replicaId: -1,
                  topics: [
                    {
                      topic,
                      partitions: [{ partition: 0, currentLeaderEpoch: -1, leaderEpoch: 0 }],
                    },
                  ],
                },
                4,
              ),
            read: (reader) => readOffsetForLeaderEpochResponse(reader, 4),
          },
        )
      ).topics[0]!.partitions[0]!;
    // The first test granted DESCRIBE on orders; nothing was ever granted on secret.
    expect((await endOfEpoch('orders')).errorCode).toBe(0);
    expect((await endOfEpoch('secret')).errorCode).toBe(29);
  });

  it('leaves out of Metadata and ListTopics the topics the caller may not describe', async () => {
    const listed = await kafkaAdmin.listTopics();
    expect(listed.sort()).toEqual(['orders', 'orders-eu']);
    const sdkListed = await spoolAdmin.listTopics();
    expect([...sdkListed].sort()).toEqual(['orders', 'orders-eu']);
  });

  it('manages ACLs with spool acl and Kafka’s CreateAcls and DescribeAcls', async () => {
    const gatewayFlag = ['--gateway', gatewayAddress];
    const refused = await runCli([
      'acl',
      'create',
      '--allow-principal',
      anonymous,
      '--operation',
      'Write',
      '--topic',
      'payments',
      ...gatewayFlag,
    ]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('CLUSTER_AUTHORIZATION_FAILED');

    await grant([
      { resourceType: clusterType, resourceName: 'kafka-cluster', operation: operations.alter },
    ]);
    await expect
      .poll(
        async () =>
          (
            await runCli([
              'acl',
              'create',
              '--allow-principal',
              anonymous,
              '--operation',
              'Write',
              '--operation',
              'Describe',
              '--topic',
              'payments',
              ...gatewayFlag,
            ])
          ).exitCode,
        { timeout: 10_000 },
      )
      .toBe(0);
    const listed = await runCli(['acl', 'list', '--topic', 'payments', '--json', ...gatewayFlag]);
    expect(listed.exitCode).toBe(0);
    const acls = (JSON.parse(listed.stdout) as { acls: Array<{ operation: string }> }).acls;
    expect(acls.map((acl) => acl.operation).sort()).toEqual(['DESCRIBE', 'WRITE']);
    expect(await kafkaProduce('payments')).toBe('OK');

    // Kafka's CreateAcls and DescribeAcls, from KafkaJS's admin.
    await kafkaAdmin.createAcls({
      acl: [
        {
          resourceType: AclResourceTypes.TOPIC,
          resourceName: 'secret',
          resourcePatternType: ResourcePatternTypes.LITERAL,
          principal: anonymous,
          host: '*',
          operation: AclOperationTypes.DESCRIBE,
          permissionType: AclPermissionTypes.ALLOW,
        },
      ],
    });
    const described = await kafkaAdmin.describeAcls({
      resourceType: AclResourceTypes.TOPIC,
      resourceName: 'secret',
      resourcePatternType: ResourcePatternTypes.LITERAL,
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    expect(described.resources).toHaveLength(1);
    expect(described.resources[0]!.acls).toEqual([
      {
        principal: anonymous,
        host: '*',
        operation: AclOperationTypes.DESCRIBE,
        permissionType: AclPermissionTypes.ALLOW,
      },
    ]);
    expect((await kafkaAdmin.listTopics()).sort()).toEqual([
      'orders',
      'orders-eu',
      'payments',
      'secret',
    ]);

    const deleted = await runCli(['acl', 'delete', '--topic', 'payments', ...gatewayFlag]);
    expect(deleted.exitCode).toBe(0);
    expect(deleted.stdout).toContain('deleted 2 ACLs');
    const after = await runCli(['acl', 'list', '--topic', 'payments', ...gatewayFlag]);
    expect(after.stdout).toBe('no ACLs\n');
    expect(await kafkaProduce('payments')).toBe('TOPIC_AUTHORIZATION_FAILED');
  });

  it('adds and lists an ACL with Apache Kafka’s kafka-acls', async () => {
    // Runs after the cluster ALTER above (kafka-acls needs ALTER, and DESCRIBE which it implies).
    const kafkaAcls = (args: string[]) =>
      runKafkaTool('acls', ['--bootstrap-server', bootstrap, ...args], { timeoutMs: 60_000 });
    const added = await kafkaAcls([
      ...['--add', '--allow-principal', 'User:bob', '--operation', 'Read', '--group', 'billing'],
    ]);
    expect(added.exitCode, added.stderr).toBe(0);
    const listed = await kafkaAcls(['--list', '--group', 'billing']);
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('name=billing, patternType=LITERAL');
    expect(listed.stdout).toContain('principal=User:bob, host=*, operation=READ');
  }, 120_000);

  it('counts denials by principal and resource type', async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${gateway!.metricsPort}/metrics`)).text();
    const line = metrics
      .split('\n')
      .find(
        (each) =>
          each.startsWith('spool_authorization_denials_total') &&
          each.includes(`principal="${anonymous}"`) &&
          each.includes('resource_type="TOPIC"'),
      );
    expect(Number(line?.split(' ').at(-1))).toBeGreaterThan(0);
    const clusterDenials = metrics
      .split('\n')
      .find((each) => each.includes('resource_type="CLUSTER"'));
    expect(clusterDenials).toBeDefined();
  });
});
