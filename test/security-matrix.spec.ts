// Proves authentication and ACLs together, table-driven, on ONE `spool dev --secure` cluster
// (the Kafka listener SASL_SSL, gRPC with required credentials, --authorizer acl): for a
// representative API of each resource type, on the Kafka listener (on the wire, one connection
// per principal: Produce, Fetch, Metadata, CreateTopics, DeleteTopics, JoinGroup, OffsetCommit,
// DescribeConfigs, CreateAcls) and on gRPC (the SDK: Produce, ListOffsets, CreateTopics,
// DeleteTopics, ResetOffsets, DescribeConfigs, CreateAcls), each of: no credentials, a wrong
// password, a valid user without an ACL, a user with LITERAL ACLs, the same ALLOWs with a DENY,
// a user with PREFIXED ACLs on a resource under the prefix and on one outside it. Every refused call gets Kafka's code
// (SASL_AUTHENTICATION_FAILED, TOPIC_, GROUP_, CLUSTER_AUTHORIZATION_FAILED; a request before
// SASL closes the connection) and changes nothing: each API's effect (a log end offset, the
// topic list, a committed offset, the ACLs) is read before and after; an allowed write changes it.
// AlterUserScramCredentials on the wire answers each user with Kafka's code (RESOURCE_NOT_FOUND,
// UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE) writing only the valid
// ones, DescribeUserScramCredentials likewise, and both refuse a user without the cluster ACL.
import { readClientProperties, Spool, type SpoolConfig } from '@spool/client';
import { encodeRecordBatch } from '@spool/record-batch';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KafkaConnectionClosed, KafkaTestConnection } from './support/kafka-test-connection';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

/** Kafka's numbers (acl.proto, Kafka's AclOperation and error codes). */
const resourceType = { topic: 2, group: 3, cluster: 4 } as const;
const pattern = { literal: 3, prefixed: 4 } as const;
const permission = { deny: 2, allow: 3 } as const;
const operation = {
  all: 2,
  read: 3,
  write: 4,
  create: 5,
  delete: 6,
  alter: 7,
  describe: 8,
  describeConfigs: 10,
} as const;
const errorNumber = {
  none: 0,
  topicDenied: 29,
  groupDenied: 30,
  clusterDenied: 31,
  saslFailed: 58,
} as const;
const password = 'matrix-secret';

let dev: SpoolDevProcess;
let adminConfig: SpoolConfig;
let admin: Spool;
let kafkaPort: number;
let caPem: string;

/** What one case does: who calls, and on which resources (their names start with `prefix`). */
interface Case {
  readonly name: string;
  /** undefined: no SASL at all; otherwise the user and the password it sends. */
  readonly user: { readonly name: string; readonly password: string } | undefined;
  readonly prefix: string;
  /** Whether the call is authorized; every other case is refused. */
  readonly allowed: boolean;
}

const cases: readonly Case[] = [
  { name: 'no credentials', user: undefined, prefix: 'm-anon-', allowed: false },
  {
    name: 'a wrong password',
    user: { name: 'm-allowed', password: 'wrong' },
    prefix: 'm-allowed-',
    allowed: false,
  },
  { name: 'no ACL', user: { name: 'm-none', password }, prefix: 'm-none-', allowed: false },
  {
    name: 'LITERAL ALLOW',
    user: { name: 'm-allowed', password },
    prefix: 'm-allowed-',
    allowed: true,
  },
  {
    name: 'DENY over ALLOW',
    user: { name: 'm-denied', password },
    prefix: 'm-denied-',
    allowed: false,
  },
  {
    name: 'PREFIXED ALLOW, under the prefix',
    user: { name: 'm-prefixed', password },
    prefix: 'm-prefixed-',
    allowed: true,
  },
  {
    name: 'PREFIXED ALLOW, outside the prefix',
    user: { name: 'm-prefixed', password },
    prefix: 'm-outside-',
    allowed: false,
  },
];

/** The resources every case's APIs act on, by the case's prefix. */
const names = (prefix: string) => ({
  data: `${prefix}data`,
  created: `${prefix}created`,
  doomed: `${prefix}doomed`,
  group: `${prefix}group`,
  /** OffsetCommit's group: JoinGroup leaves a member in `group`, which a simple commit may not. */
  commits: `${prefix}commits`,
  aclMade: `${prefix}acl-made`,
  grpcCreated: `${prefix}grpc-created`,
  grpcDoomed: `${prefix}grpc-doomed`,
  grpcCommits: `${prefix}grpc-commits`,
  grpcAclMade: `${prefix}grpc-acl-made`,
});

/** One API on the Kafka listener: its call, what it needs, and the effect it leaves. */
interface KafkaApiCase {
  readonly api: string;
  /** The code of a refusal by ACL. */
  readonly refused: number;
  /** The resources and operations it needs; the DENY case denies the first. */
  readonly needs: (prefix: string) => ReadonlyArray<readonly [number, string, number]>;
  readonly call: (connection: KafkaTestConnection, prefix: string) => Promise<number>;
  /** What it writes, read through the admin; undefined for a read-only API. */
  readonly effect?: (prefix: string) => Promise<unknown>;
}

const record = (value: string): Buffer =>
  encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: null, value: Buffer.from(value), timestampMs: BigInt(Date.now()) }],
  });

const zeroUuid = Buffer.alloc(16);

/** ConsumerProtocolSubscription v0 of one topic: version, topics, null user data. */
function subscription(topic: string): Buffer {
  const name = Buffer.from(topic, 'utf8');
  const bytes = Buffer.alloc(2 + 4 + 2 + name.length + 4);
  bytes.writeInt16BE(0, 0);
  bytes.writeInt32BE(1, 2);
  bytes.writeInt16BE(name.length, 6);
  name.copy(bytes, 8);
  bytes.writeInt32BE(-1, 8 + name.length);
  return bytes;
}

const kafkaApis: readonly KafkaApiCase[] = [
  {
    api: 'Produce',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.write]],
    call: async (connection, prefix) => {
      const response = await connection.request<{
        responses: { partitionResponses: { errorCode: number }[] }[];
      }>(0, 9, {
        acks: -1,
        timeoutMs: 10_000,
        topicData: [
          {
            name: names(prefix).data,
            topicId: zeroUuid,
            partitionData: [{ index: 0, records: record('matrix') }],
          },
        ],
      });
      return response.responses[0]!.partitionResponses[0]!.errorCode;
    },
    effect: (prefix) => endOffset(names(prefix).data),
  },
  {
    api: 'Fetch',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.read]],
    call: async (connection, prefix) => {
      const response = await connection.request<{
        responses: { partitions: { errorCode: number; records: Buffer | null }[] }[];
      }>(1, 12, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1024 * 1024,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          {
            topic: names(prefix).data,
            topicId: zeroUuid,
            partitions: [
              {
                partition: 0,
                currentLeaderEpoch: -1,
                fetchOffset: 0n,
                lastFetchedEpoch: -1,
                logStartOffset: -1n,
                partitionMaxBytes: 1024 * 1024,
                replicaDirectoryId: zeroUuid,
                highWatermark: -1n,
              },
            ],
          },
        ],
        forgottenTopicsData: [],
        rackId: '',
      });
      const partition = response.responses[0]!.partitions[0]!;
      // Nothing is read by a refused fetch.
      if (partition.errorCode !== 0) expect(partition.records?.length ?? 0).toBe(0);
      return partition.errorCode;
    },
  },
  {
    api: 'Metadata',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.describe]],
    call: async (connection, prefix) => {
      const response = await connection.request<{
        topics: { errorCode: number; partitions: unknown[] }[];
      }>(3, 12, {
        topics: [{ topicId: zeroUuid, name: names(prefix).data }],
        allowAutoTopicCreation: false,
      });
      const topic = response.topics[0]!;
      if (topic.errorCode !== 0) expect(topic.partitions).toEqual([]);
      return topic.errorCode;
    },
  },
  {
    api: 'CreateTopics',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).created, operation.create]],
    call: async (connection, prefix) => {
      const response = await connection.request<{ topics: { errorCode: number }[] }>(19, 7, {
        topics: [
          {
            name: names(prefix).created,
            numPartitions: 1,
            replicationFactor: 1,
            assignments: [],
            configs: [],
          },
        ],
        timeoutMs: 10_000,
      });
      return response.topics[0]!.errorCode;
    },
    effect: (prefix) => topicExists(names(prefix).created),
  },
  {
    api: 'DeleteTopics',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).doomed, operation.delete]],
    call: async (connection, prefix) => {
      const response = await connection.request<{ responses: { errorCode: number }[] }>(20, 5, {
        topicNames: [names(prefix).doomed],
        timeoutMs: 10_000,
      });
      return response.responses[0]!.errorCode;
    },
    effect: (prefix) => topicExists(names(prefix).doomed),
  },
  {
    api: 'JoinGroup',
    refused: errorNumber.groupDenied,
    needs: (prefix) => [[resourceType.group, names(prefix).group, operation.read]],
    call: async (connection, prefix) => {
      const response = await connection.request<{ errorCode: number }>(11, 5, {
        groupId: names(prefix).group,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId: '',
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: subscription(names(prefix).data) }],
      });
      return response.errorCode;
    },
  },
  {
    api: 'OffsetCommit',
    refused: errorNumber.groupDenied,
    needs: (prefix) => [
      [resourceType.group, names(prefix).commits, operation.read],
      [resourceType.topic, names(prefix).data, operation.read],
    ],
    call: async (connection, prefix) => {
      const response = await connection.request<{
        topics: { partitions: { errorCode: number }[] }[];
      }>(8, 8, {
        groupId: names(prefix).commits,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [
          {
            name: names(prefix).data,
            topicId: zeroUuid,
            partitions: [
              {
                partitionIndex: 0,
                committedOffset: 1n,
                committedLeaderEpoch: -1,
                committedMetadata: null,
              },
            ],
          },
        ],
      });
      return response.topics[0]!.partitions[0]!.errorCode;
    },
    effect: (prefix) => committedOffset(names(prefix).commits, names(prefix).data),
  },
  {
    api: 'DescribeConfigs',
    refused: errorNumber.topicDenied,
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.describeConfigs]],
    call: async (connection, prefix) => {
      const response = await connection.request<{
        results: { errorCode: number; configs: unknown[] }[];
      }>(32, 4, {
        resources: [
          {
            resourceType: resourceType.topic,
            resourceName: names(prefix).data,
            configurationKeys: null,
          },
        ],
      });
      const result = response.results[0]!;
      if (result.errorCode !== 0) expect(result.configs).toEqual([]);
      return result.errorCode;
    },
  },
  {
    api: 'CreateAcls',
    refused: errorNumber.clusterDenied,
    needs: () => [[resourceType.cluster, 'kafka-cluster', operation.alter]],
    call: async (connection, prefix) => {
      const response = await connection.request<{ results: { errorCode: number }[] }>(30, 3, {
        creations: [
          {
            resourceType: resourceType.topic,
            resourceName: names(prefix).aclMade,
            resourcePatternType: pattern.literal,
            principal: 'User:nobody',
            host: '*',
            operation: operation.read,
            permissionType: permission.allow,
          },
        ],
      });
      return response.results[0]!.errorCode;
    },
    effect: (prefix) => aclsOn(names(prefix).aclMade),
  },
];

/** One gateway gRPC call through the SDK: what it needs, its refusal code, its effect. */
interface GrpcApiCase {
  readonly api: string;
  readonly refused: string;
  readonly needs: (prefix: string) => ReadonlyArray<readonly [number, string, number]>;
  readonly call: (spool: Spool, prefix: string) => Promise<unknown>;
  readonly effect?: (prefix: string) => Promise<unknown>;
}

const grpcApis: readonly GrpcApiCase[] = [
  {
    api: 'Produce',
    refused: 'TOPIC_AUTHORIZATION_FAILED',
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.write]],
    call: async (spool, prefix) => {
      // Bounded: a client whose TLS handshake is refused sees UNAVAILABLE, which it retries.
      const producer = spool.producer({
        retries: 0,
        enableIdempotence: false,
        maxBlockMs: 5_000,
        requestTimeoutMs: 5_000,
        deliveryTimeoutMs: 10_000,
      });
      try {
        await producer.send({ topic: names(prefix).data, messages: [{ value: 'grpc' }] });
      } finally {
        await producer.close();
      }
    },
    effect: (prefix) => endOffset(names(prefix).data),
  },
  {
    api: 'ListOffsets',
    refused: 'TOPIC_AUTHORIZATION_FAILED',
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.describe]],
    call: (spool, prefix) => spool.admin().fetchTopicOffsets(names(prefix).data),
  },
  {
    api: 'CreateTopics',
    refused: 'TOPIC_AUTHORIZATION_FAILED',
    needs: (prefix) => [[resourceType.topic, names(prefix).grpcCreated, operation.create]],
    call: (spool, prefix) =>
      spool.admin().createTopics({
        topics: [{ topic: names(prefix).grpcCreated, numPartitions: 1, replicationFactor: 1 }],
      }),
    effect: (prefix) => topicExists(names(prefix).grpcCreated),
  },
  {
    api: 'DeleteTopics',
    refused: 'TOPIC_AUTHORIZATION_FAILED',
    needs: (prefix) => [[resourceType.topic, names(prefix).grpcDoomed, operation.delete]],
    call: (spool, prefix) => spool.admin().deleteTopics({ topics: [names(prefix).grpcDoomed] }),
    effect: (prefix) => topicExists(names(prefix).grpcDoomed),
  },
  {
    api: 'ResetOffsets',
    refused: 'GROUP_AUTHORIZATION_FAILED',
    needs: (prefix) => [
      [resourceType.group, names(prefix).grpcCommits, operation.read],
      [resourceType.topic, names(prefix).data, operation.read],
    ],
    call: (spool, prefix) =>
      spool.admin().resetOffsets(names(prefix).grpcCommits, {
        strategy: 'offset',
        offset: 1n,
        partitions: [{ topic: names(prefix).data, partition: 0 }],
      }),
    effect: (prefix) => committedOffset(names(prefix).grpcCommits, names(prefix).data),
  },
  {
    api: 'DescribeConfigs',
    refused: 'TOPIC_AUTHORIZATION_FAILED',
    needs: (prefix) => [[resourceType.topic, names(prefix).data, operation.describeConfigs]],
    call: (spool, prefix) => spool.admin().describeConfigs({ topics: [names(prefix).data] }),
  },
  {
    api: 'CreateAcls',
    refused: 'CLUSTER_AUTHORIZATION_FAILED',
    needs: () => [[resourceType.cluster, 'kafka-cluster', operation.alter]],
    call: (spool, prefix) =>
      spool.admin().createAcls([
        {
          resourceType: resourceType.topic,
          resourceName: names(prefix).grpcAclMade,
          patternType: pattern.literal,
          principal: 'User:nobody',
          host: '*',
          operation: operation.read,
          permissionType: permission.allow,
        },
      ]),
    effect: (prefix) => aclsOn(names(prefix).grpcAclMade),
  },
];

async function endOffset(topic: string): Promise<bigint> {
  const [partition] = await admin.admin().fetchTopicOffsets(topic);
  return BigInt(partition!.high);
}

async function topicExists(topic: string): Promise<boolean> {
  return (await admin.admin().listTopics()).includes(topic);
}

async function committedOffset(group: string, topic: string): Promise<string> {
  const [entry] = await admin.admin().fetchOffsets({ groupId: group, topics: [topic] });
  return (entry?.partitions ?? [])
    .map((partition) => `${partition.partition}:${String(partition.offset)}`)
    .join(',');
}

async function aclsOn(topic: string): Promise<number> {
  const acls = await admin.admin().describeAcls({
    resourceType: resourceType.topic,
    resourceName: topic,
    patternType: pattern.literal,
    operation: 1,
    permissionType: 1,
  });
  return acls.length;
}

/** The ACLs each user holds: the LITERAL grants, the same with a DENY, the PREFIXED ones. */
function aclsOfUsers() {
  const everyApi = [...kafkaApis, ...grpcApis];
  const literal = (principal: string, prefix: string, permissionType: number) =>
    everyApi.flatMap((api) =>
      api.needs(prefix).map(([type, name, op]) => ({
        resourceType: type,
        resourceName: name,
        patternType: pattern.literal,
        principal,
        host: '*',
        operation: op,
        permissionType,
      })),
    );
  const denied = everyApi.map((api) => ({
    ...literal('User:m-denied', 'm-denied-', permission.deny).find(
      (acl) =>
        acl.resourceName === api.needs('m-denied-')[0]![1] &&
        acl.operation === api.needs('m-denied-')[0]![2],
    )!,
  }));
  const prefixed = [resourceType.topic, resourceType.group].map((type) => ({
    resourceType: type,
    resourceName: 'm-prefixed-',
    patternType: pattern.prefixed,
    principal: 'User:m-prefixed',
    host: '*',
    operation: operation.all,
    permissionType: permission.allow,
  }));
  return [
    ...literal('User:m-allowed', 'm-allowed-', permission.allow),
    ...literal('User:m-denied', 'm-denied-', permission.allow),
    ...denied,
    ...prefixed,
    // A PREFIXED topic ACL gives nothing on the cluster: CreateAcls stays refused there.
  ];
}

/** The code a case's principal gets for `api`, or 'closed' when the listener hung up. */
async function kafkaOutcome(testCase: Case, api: KafkaApiCase): Promise<number | 'closed'> {
  const connection = await KafkaTestConnection.open({ port: kafkaPort, ca: caPem });
  try {
    if (testCase.user !== undefined) {
      const authenticated = await connection.authenticatePlain(
        testCase.user.name,
        testCase.user.password,
      );
      if (authenticated !== 0) return authenticated;
    }
    return await api.call(connection, testCase.prefix);
  } catch (error) {
    if (error instanceof KafkaConnectionClosed) return 'closed';
    throw error;
  } finally {
    connection.close();
  }
}

function expectedKafkaOutcome(testCase: Case, api: KafkaApiCase): number | 'closed' {
  if (testCase.user === undefined) return 'closed';
  if (testCase.user.password !== password) return errorNumber.saslFailed;
  const clusterOnly = api.needs(testCase.prefix)[0]![0] === resourceType.cluster;
  // The PREFIXED user holds topic and group ACLs only.
  if (testCase.allowed && !(clusterOnly && testCase.prefix === 'm-prefixed-')) {
    return errorNumber.none;
  }
  return api.refused;
}

/** The code a case's principal gets for a gRPC call: 'OK' or the SpoolError's code. */
async function grpcOutcome(testCase: Case, api: GrpcApiCase): Promise<string> {
  const spool = new Spool({
    brokers: adminConfig.brokers!,
    // Without credentials the client presents no certificate either (the admin's would
    // authenticate it as User:admin).
    ssl: testCase.user === undefined ? { ca: caPem } : adminConfig.ssl!,
    ...(testCase.user === undefined
      ? {}
      : {
          sasl: {
            mechanism: 'scram-sha-256' as const,
            username: testCase.user.name,
            password: testCase.user.password,
          },
        }),
    logLevel: 'silent',
  });
  try {
    await api.call(spool, testCase.prefix);
    return 'OK';
  } catch (error) {
    const { code } = error as { code?: string };
    if (code === undefined) throw error;
    return code;
  } finally {
    await spool.close();
  }
}

function expectedGrpcOutcome(testCase: Case, api: GrpcApiCase): string | string[] {
  // No credentials and no certificate: the TLS handshake (client certificates are required on
  // gRPC) or the call's authentication refuses it; the producer retries a gateway it cannot
  // reach until maxBlockMs, so it reports REQUEST_TIMED_OUT.
  if (testCase.user === undefined) {
    return ['SASL_AUTHENTICATION_FAILED', 'UNAVAILABLE', 'REQUEST_TIMED_OUT'];
  }
  if (testCase.user.password !== password) return 'SASL_AUTHENTICATION_FAILED';
  const clusterOnly = api.needs(testCase.prefix)[0]![0] === resourceType.cluster;
  if (testCase.allowed && !(clusterOnly && testCase.prefix === 'm-prefixed-')) return 'OK';
  return api.refused;
}

beforeAll(async () => {
  dev = await startSpoolDev(['--secure', '--nodes', '1']);
  const propertiesFile = path.join(dev.dataDirectory, 'client.properties');
  adminConfig = { ...readClientProperties(propertiesFile), logLevel: 'silent' };
  caPem = readFileSync(
    readFileSync(propertiesFile, 'utf8').match(/^ssl\.ca\.location=(.*)$/m)![1]!,
    'utf8',
  );
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  admin = new Spool(adminConfig);
  const spoolAdmin = admin.admin({ requestTimeoutMs: 15_000 });
  await spoolAdmin.alterUserScramCredentials({
    upsertions: ['m-none', 'm-allowed', 'm-denied', 'm-prefixed'].map((user) => ({
      user,
      mechanism: 'SCRAM-SHA-256' as const,
      password,
    })),
  });
  const prefixes = [...new Set(cases.map((each) => each.prefix))];
  await spoolAdmin.createTopics({
    topics: prefixes.flatMap((prefix) =>
      [names(prefix).data, names(prefix).doomed, names(prefix).grpcDoomed].map((topic) => ({
        topic,
        numPartitions: 1,
        replicationFactor: 1,
      })),
    ),
  });
  await spoolAdmin.createAcls(aclsOfUsers());
  // The gateway learns of users and ACLs from the metadata stream, a moment after the answers.
  const literal = cases.find((each) => each.name === 'LITERAL ALLOW')!;
  const prefixedIn = cases.find((each) => each.name === 'PREFIXED ALLOW, under the prefix')!;
  const metadata = kafkaApis.find((api) => api.api === 'Metadata')!;
  await vi.waitFor(
    async () =>
      expect([
        await kafkaOutcome(literal, metadata),
        await kafkaOutcome(prefixedIn, metadata),
      ]).toEqual([errorNumber.none, errorNumber.none]),
    { timeout: 15_000, interval: 250 },
  );
}, 90_000);

afterAll(async () => {
  await admin?.close();
  await dev?.stop();
});

describe('the security matrix on the Kafka listener', () => {
  for (const api of kafkaApis) {
    it(`${api.api}: every principal gets its code, and a refused call changes nothing`, async () => {
      const outcomes: Record<string, unknown> = {};
      const expected: Record<string, unknown> = {};
      for (const testCase of cases) {
        const before = await api.effect?.(testCase.prefix);
        const outcome = await kafkaOutcome(testCase, api);
        const after = await api.effect?.(testCase.prefix);
        const wanted = expectedKafkaOutcome(testCase, api);
        outcomes[testCase.name] = outcome;
        expected[testCase.name] = wanted;
        const wrote = api.effect !== undefined && outcome === errorNumber.none;
        outcomes[`${testCase.name}: changed`] = String(before) !== String(after);
        expected[`${testCase.name}: changed`] = wrote;
      }
      expect(outcomes).toEqual(expected);
    });
  }
});

describe('the security matrix on the gateway gRPC API', () => {
  for (const api of grpcApis) {
    it(`${api.api}: every principal gets its code, and a refused call changes nothing`, async () => {
      const outcomes: Record<string, unknown> = {};
      const expected: Record<string, unknown> = {};
      for (const testCase of cases) {
        const before = await api.effect?.(testCase.prefix);
        const outcome = await grpcOutcome(testCase, api);
        const after = await api.effect?.(testCase.prefix);
        const wanted = expectedGrpcOutcome(testCase, api);
        outcomes[testCase.name] =
          Array.isArray(wanted) && wanted.includes(outcome) ? wanted : outcome;
        expected[testCase.name] = wanted;
        outcomes[`${testCase.name}: changed`] = String(before) !== String(after);
        expected[`${testCase.name}: changed`] = api.effect !== undefined && outcome === 'OK';
      }
      expect(outcomes).toEqual(expected);
    });
  }
});

describe('AlterUserScramCredentials and DescribeUserScramCredentials on the wire', () => {
  /** A connection authenticated as `user` (PLAIN over TLS). */
  async function connectionAs(user: string, userPassword: string): Promise<KafkaTestConnection> {
    const connection = await KafkaTestConnection.open({ port: kafkaPort, ca: caPem });
    expect(await connection.authenticatePlain(user, userPassword)).toBe(errorNumber.none);
    return connection;
  }
  const upsertion = (name: string, mechanism: number, iterations: number, saltedBytes = 32) => ({
    name,
    mechanism,
    iterations,
    salt: Buffer.from('matrix-salt'),
    saltedPassword: Buffer.alloc(saltedBytes, 7),
  });
  const storedUsers = async () =>
    JSON.stringify(await admin.admin().describeUserScramCredentials());

  it("answers each user with Kafka's code and writes only the valid ones", async () => {
    const adminPassword = readFileSync(
      path.join(dev.dataDirectory, 'client.properties'),
      'utf8',
    ).match(/^sasl\.password=(.*)$/m)![1]!;
    const connection = await connectionAs('admin', adminPassword);
    try {
      const before = await storedUsers();
      const altered = await connection.request<{
        results: { user: string; errorCode: number }[];
      }>(51, 0, {
        deletions: [{ name: 'm-none', mechanism: 2 }],
        upsertions: [
          upsertion('w-few-iterations', 1, 1_000),
          upsertion('w-unknown-mechanism', 0, 8_192),
          upsertion('w-twice', 1, 8_192),
          upsertion('w-twice', 1, 8_192),
          upsertion('w-short-salted', 2, 8_192, 32),
          upsertion('w-good', 2, 8_192, 64),
        ],
      });
      expect(
        Object.fromEntries(altered.results.map((result) => [result.user, result.errorCode])),
      ).toEqual({
        // m-none holds SCRAM-SHA-256 only: deleting SCRAM-SHA-512 is RESOURCE_NOT_FOUND.
        'm-none': 91,
        'w-few-iterations': 93,
        'w-unknown-mechanism': 33,
        'w-twice': 92,
        'w-short-salted': 93,
        'w-good': 0,
      });
      const after = JSON.parse(await storedUsers()) as { user: string }[];
      expect(after.map((entry) => entry.user).sort()).toEqual(
        [...(JSON.parse(before) as { user: string }[]).map((entry) => entry.user), 'w-good'].sort(),
      );

      const described = await connection.request<{
        errorCode: number;
        results: { user: string; errorCode: number; credentialInfos: unknown[] }[];
      }>(50, 0, {
        users: [{ name: 'w-good' }, { name: 'nobody' }, { name: 'm-none' }, { name: 'm-none' }],
      });
      expect(described.errorCode).toBe(errorNumber.none);
      expect(
        Object.fromEntries(described.results.map((result) => [result.user, result.errorCode])),
      ).toEqual({ 'w-good': 0, nobody: 91, 'm-none': 92 });
      expect(described.results.find((result) => result.user === 'w-good')!.credentialInfos).toEqual(
        [{ mechanism: 2, iterations: 8_192 }],
      );
    } finally {
      connection.close();
    }
  });

  it('refuses a user without ALTER on the cluster on every user, and DESCRIBE at the top', async () => {
    const connection = await connectionAs('m-none', password);
    try {
      const before = await storedUsers();
      const altered = await connection.request<{
        results: { user: string; errorCode: number }[];
      }>(51, 0, {
        deletions: [{ name: 'admin', mechanism: 1 }],
        upsertions: [upsertion('w-sneaky', 1, 8_192)],
      });
      expect(altered.results.map((result) => [result.user, result.errorCode]).sort()).toEqual([
        ['admin', errorNumber.clusterDenied],
        ['w-sneaky', errorNumber.clusterDenied],
      ]);
      expect(await storedUsers()).toBe(before);
      const described = await connection.request<{ errorCode: number; results: unknown[] }>(50, 0, {
        users: null,
      });
      expect(described).toMatchObject({ errorCode: errorNumber.clusterDenied, results: [] });
    } finally {
      connection.close();
    }
  });
});
