// Proves ConsumerGroupHeartbeat and ConsumerGroupDescribe of the Kafka listener against the SDK's
// fake coordinator (the real consumer-group state machine): Kafka's incremental heartbeats are
// filled in from what the gateway remembers, topics go by the ids Metadata gives, two members
// split a topic through a revocation, a gateway that remembers nothing asks for a full heartbeat
// (COORDINATOR_LOAD_IN_PROGRESS), bad requests are INVALID_REQUEST naming the field (a regex RE2
// refuses is INVALID_REGULAR_EXPRESSION, 128, as in Kafka 4), fencing and
// leaving are Kafka's codes, ConsumerGroupDescribe shows members as Kafka 4 does, OffsetCommit
// answers a KIP-848 member's stale epoch STALE_MEMBER_EPOCH from v9 (ILLEGAL_GENERATION before),
// and OffsetFetch from v9 checks the member it names: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, none
// for a fetch that names no member (null, -1) or a group that does not exist.
import { FakeCoordinator } from '@spool/client/testing';
import {
  type ConsumerGroupDescribeResponse,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  defaultConsumerGroupHeartbeatRequest,
  defaultOffsetCommitRequest,
  defaultOffsetFetchRequest,
} from '@spool/kafka-protocol';
import type { TopicMetadata } from '@spool/protocol';
import { beforeEach, describe, expect, it } from 'vitest';
import type { MetadataLink } from '../metadata-link';
import type { KafkaApi, KafkaApiContext } from './kafka-api-dispatcher';
import { fixedBrokerAddresses } from './kafka-broker-ports';
import { KafkaClusterView } from './kafka-cluster-view';
import { consumerGroupApis } from './kafka-consumer-groups';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';
import { ClassicMemberTable } from './classic-member-table';
import { offsetCommitApi, offsetFetchApi } from './kafka-offsets';

const topicId = '6f1c2a4e-9b3d-4c5e-8f70-112233445566';
const topicIdBytes = Buffer.from(topicId.replace(/-/g, ''), 'hex');
const groupId = 'billing';
const context = {
  peer: '127.0.0.1:50000',
  principal: 'User:ANONYMOUS',
  clientHost: '127.0.0.1',
  clientId: 'console-consumer',
} as unknown as KafkaApiContext;

type Heartbeat = (
  fields: Partial<ConsumerGroupHeartbeatRequest>,
  version?: number,
) => Promise<ConsumerGroupHeartbeatResponse>;

let coordinator: FakeCoordinator;
let view: KafkaClusterView;

function gateway(): {
  heartbeat: Heartbeat;
  describe: (ids: string[]) => Promise<ConsumerGroupDescribeResponse>;
} {
  const [heartbeatApi, describeApi] = consumerGroupApis(view, {
    consumerGroupHeartbeat: async (request) => coordinator.heartbeat(request),
    describeGroup: async ({ groupId: id }) => coordinator.describeGroup(id),
  }) as unknown as [
    KafkaApi<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>,
    KafkaApi<
      { groupIds: string[]; includeAuthorizedOperations: boolean },
      ConsumerGroupDescribeResponse
    >,
  ];
  return {
    heartbeat: async (fields, version = 1) =>
      (await heartbeatApi.serve(
        { ...defaultConsumerGroupHeartbeatRequest(), groupId, ...fields },
        version,
        context,
      ))!,
    describe: async (groupIds) =>
      (await describeApi.serve({ groupIds, includeAuthorizedOperations: false }, 0, context))!,
  };
}

const join = (memberId: string): Partial<ConsumerGroupHeartbeatRequest> => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs: 30_000,
  subscribedTopicNames: ['orders'],
  topicPartitions: [],
});

function partitionsOf(response: ConsumerGroupHeartbeatResponse): number[] {
  return response.assignment!.topicPartitions.flatMap((entry) => {
    expect(entry.topicId).toEqual(topicIdBytes);
    return entry.partitions;
  });
}

beforeEach(() => {
  coordinator = new FakeCoordinator({
    partitionCount: (topic) => (topic === 'orders' ? 4 : undefined),
    topicNames: () => ['orders'],
    logStartOffset: () => 0n,
    highWatermark: () => 0n,
    offsetForTimestamp: () => 0n,
  });
  const topics = new Map<string, TopicMetadata>([
    ['orders', { name: 'orders', topicId, partitions: [], configs: [], internal: false }],
  ]);
  const link = { metadata: { topics, version: 1n } } as unknown as MetadataLink;
  view = new KafkaClusterView(link, fixedBrokerAddresses('localhost', 9092));
});

describe('ConsumerGroupHeartbeat', () => {
  it('joins, then keeps the member with heartbeats that leave out what did not change', async () => {
    const { heartbeat } = gateway();
    const joined = await heartbeat(join('member-a'));
    expect(joined.errorCode).toBe(0);
    expect(joined.memberId).toBe('member-a');
    expect(partitionsOf(joined)).toEqual([0, 1, 2, 3]);
    const owned = [{ topicId: topicIdBytes, partitions: [0, 1, 2, 3] }];
    const acknowledged = await heartbeat({
      memberId: 'member-a',
      memberEpoch: joined.memberEpoch,
      topicPartitions: owned,
    });
    expect(acknowledged.errorCode).toBe(0);
    const quiet = await heartbeat({ memberId: 'member-a', memberEpoch: joined.memberEpoch });
    expect(quiet.errorCode).toBe(0);
    expect(quiet.assignment).toBeNull();
    // The coordinator got the member's whole state every time.
    const last = coordinator.heartbeats.at(-1)!.request;
    expect(last.subscribedTopics).toEqual(['orders']);
    expect(last.ownedPartitions).toHaveLength(4);
    expect(last.rebalanceTimeoutMs).toBe(30_000);
    expect(last).toMatchObject({ clientId: 'console-consumer', clientHost: '127.0.0.1' });
  });

  it('splits a topic between two members through a revocation', async () => {
    const { heartbeat } = gateway();
    const first = await heartbeat(join('member-a'));
    await heartbeat({
      memberId: 'member-a',
      memberEpoch: first.memberEpoch,
      topicPartitions: [{ topicId: topicIdBytes, partitions: partitionsOf(first) }],
    });
    const second = await heartbeat(join('member-b'));
    expect(second.errorCode).toBe(0);
    // The first member learns it keeps two, releases the others, and the second gets them.
    const revoked = await heartbeat({ memberId: 'member-a', memberEpoch: first.memberEpoch });
    const kept = partitionsOf(revoked);
    expect(kept).toHaveLength(2);
    const released = await heartbeat({
      memberId: 'member-a',
      memberEpoch: revoked.memberEpoch,
      topicPartitions: [{ topicId: topicIdBytes, partitions: kept }],
    });
    expect(released.errorCode).toBe(0);
    const given = await heartbeat({ memberId: 'member-b', memberEpoch: second.memberEpoch });
    expect([...kept, ...partitionsOf(given)].sort()).toEqual([0, 1, 2, 3]);
  });

  it('asks a member this gateway does not remember for a full heartbeat', async () => {
    const joined = await gateway().heartbeat(join('member-a'));
    const other = gateway();
    const partial = await other.heartbeat({
      memberId: 'member-a',
      memberEpoch: joined.memberEpoch,
    });
    expect(partial.errorCode).toBe(KafkaErrorNumber.CoordinatorLoadInProgress);
    expect(partial.errorMessage).toContain('send them in full');
    const full = await other.heartbeat({
      memberId: 'member-a',
      memberEpoch: joined.memberEpoch,
      subscribedTopicNames: ['orders'],
      topicPartitions: [{ topicId: topicIdBytes, partitions: partitionsOf(joined) }],
    });
    expect(full.errorCode).toBe(0);
  });

  it('refuses bad requests with INVALID_REQUEST naming the field, as Kafka words it', async () => {
    const { heartbeat } = gateway();
    const refusal = async (fields: Partial<ConsumerGroupHeartbeatRequest>, version = 1) => {
      const response = await heartbeat(fields, version);
      return [response.errorCode, response.errorMessage];
    };
    const invalid = KafkaErrorNumber.InvalidRequest;
    expect(await refusal({ ...join('m'), rebalanceTimeoutMs: -1 })).toEqual([
      invalid,
      'RebalanceTimeoutMs must be provided in first request.',
    ]);
    expect(await refusal({ ...join('') })).toEqual([invalid, "MemberId can't be empty."]);
    expect(await refusal({ ...join('m'), subscribedTopicNames: null })).toEqual([
      invalid,
      'SubscribedTopicNames or SubscribedTopicRegex must be set in first request.',
    ]);
    expect(await refusal({ ...join('m'), topicPartitions: null })).toEqual([
      invalid,
      'TopicPartitions must be empty when (re-)joining.',
    ]);
    expect(await refusal({ memberId: 'm', memberEpoch: -3 })).toEqual([
      invalid,
      'MemberEpoch is invalid.',
    ]);
    expect(await refusal({ memberId: 'm', memberEpoch: -2 })).toEqual([
      invalid,
      "InstanceId can't be null.",
    ]);
    expect(await refusal({ ...join('m'), groupId: '' })).toEqual([
      invalid,
      "GroupId can't be empty.",
    ]);
    const sticky = await heartbeat({ ...join('m'), serverAssignor: 'sticky' });
    expect(sticky.errorCode).toBe(kafkaErrorNumberOf('UNSUPPORTED_ASSIGNOR'));
    expect(sticky.errorMessage).toContain('uniform, range');
    // Version 0 lets the coordinator make up the member id.
    const generated = await heartbeat(join(''), 0);
    expect(generated.errorCode).toBe(0);
    expect(generated.memberId).not.toBe('');
  });

  it('refuses a subscribed regex RE2 refuses with INVALID_REGULAR_EXPRESSION', async () => {
    const { heartbeat } = gateway();
    for (const pattern of ['orders-(', 'orders(?=-eu)', '(o)\\1']) {
      const refused = await heartbeat({
        ...join('m'),
        subscribedTopicNames: null,
        subscribedTopicRegex: pattern,
      });
      expect(refused.errorCode, pattern).toBe(128);
      expect(refused.errorMessage, pattern).toContain(`subscribedRegex: '${pattern}'`);
    }
    const accepted = await heartbeat({
      ...join('m'),
      subscribedTopicNames: null,
      subscribedTopicRegex: 'ord.*',
    });
    expect(accepted.errorCode).toBe(0);
    expect(partitionsOf(accepted)).toEqual([0, 1, 2, 3]);
  });

  it("answers Kafka's codes for fenced, unknown, unreleased and leaving members", async () => {
    const { heartbeat } = gateway();
    const joined = await heartbeat({ ...join('member-a'), instanceId: 'instance-1' });
    const duplicate = await heartbeat({ ...join('member-b'), instanceId: 'instance-1' });
    expect(duplicate.errorCode).toBe(kafkaErrorNumberOf('UNRELEASED_INSTANCE_ID'));
    coordinator.fenceMember(groupId, 'member-a');
    const fenced = await heartbeat({ memberId: 'member-a', memberEpoch: joined.memberEpoch });
    expect(fenced.errorCode).toBe(kafkaErrorNumberOf('FENCED_MEMBER_EPOCH'));
    // Fenced members are forgotten: a heartbeat that is not a full one must be sent again.
    const after = await heartbeat({ memberId: 'member-a', memberEpoch: joined.memberEpoch });
    expect(after.errorCode).toBe(KafkaErrorNumber.CoordinatorLoadInProgress);
    const unknown = await heartbeat({
      memberId: 'ghost',
      memberEpoch: 4,
      subscribedTopicNames: ['orders'],
      topicPartitions: [],
    });
    expect(unknown.errorCode).toBe(kafkaErrorNumberOf('UNKNOWN_MEMBER_ID'));
    const rejoined = await heartbeat(join('member-c'));
    const left = await heartbeat({ memberId: 'member-c', memberEpoch: -1 });
    expect([left.errorCode, left.memberEpoch]).toEqual([0, -1]);
    expect(
      coordinator
        .groupOf(groupId)!
        .describeMembers()
        .map((member) => member.memberId),
    ).not.toContain(rejoined.memberId);
  });
});

describe('ConsumerGroupDescribe', () => {
  it('shows each member as Kafka 4 does, and an unknown group as GROUP_ID_NOT_FOUND', async () => {
    const { heartbeat, describe: describeGroups } = gateway();
    const joined = await heartbeat(join('member-a'));
    await heartbeat({
      memberId: 'member-a',
      memberEpoch: joined.memberEpoch,
      topicPartitions: [{ topicId: topicIdBytes, partitions: partitionsOf(joined) }],
    });
    const { groups } = await describeGroups([groupId, 'nobody']);
    const [described, unknown] = groups;
    expect(described).toMatchObject({
      errorCode: 0,
      groupId,
      groupState: 'Stable',
      assignorName: 'uniform',
    });
    expect(described!.assignmentEpoch).toBe(described!.groupEpoch);
    expect(described!.members).toHaveLength(1);
    const member = described!.members[0]!;
    expect(member).toMatchObject({
      memberId: 'member-a',
      instanceId: null,
      clientId: 'console-consumer',
      clientHost: '/127.0.0.1',
      subscribedTopicNames: ['orders'],
      subscribedTopicRegex: null,
      memberType: 1,
    });
    expect(member.assignment.topicPartitions).toEqual([
      { topicId: topicIdBytes, topicName: 'orders', partitions: [0, 1, 2, 3] },
    ]);
    expect(member.targetAssignment).toEqual(member.assignment);
    expect(unknown!.errorCode).toBe(kafkaErrorNumberOf('GROUP_ID_NOT_FOUND'));
  });
});

describe('OffsetCommit of a KIP-848 member', () => {
  it('commits at its epoch, and answers a stale one STALE_MEMBER_EPOCH from v9', async () => {
    const joined = await gateway().heartbeat(join('member-a'));
    const commit = offsetCommitApi(view, new ClassicMemberTable(), {
      offsetCommit: async (request) => coordinator.offsetCommit(request),
      offsetFetch: async () => ({ error: undefined, offsets: [] }),
    }) as KafkaApi<OffsetCommitRequest, OffsetCommitResponse>;
    const errorOf = async (memberEpoch: number, version: number) => {
      const response = await commit.serve(
        {
          ...defaultOffsetCommitRequest(),
          groupId,
          memberId: 'member-a',
          generationIdOrMemberEpoch: memberEpoch,
          topics: [
            {
              name: 'orders',
              topicId: topicIdBytes,
              partitions: [
                {
                  partitionIndex: 0,
                  committedOffset: 7n,
                  committedLeaderEpoch: -1,
                  committedMetadata: null,
                },
              ],
            },
          ],
        },
        version,
        context,
      );
      return response!.topics[0]!.partitions[0]!.errorCode;
    };
    expect(await errorOf(joined.memberEpoch, 9)).toBe(0);
    expect(coordinator.committedOffset(groupId, 'orders', 0)).toBe(7n);
    expect(await errorOf(joined.memberEpoch + 5, 9)).toBe(kafkaErrorNumberOf('STALE_MEMBER_EPOCH'));
    expect(await errorOf(joined.memberEpoch + 5, 10)).toBe(
      kafkaErrorNumberOf('STALE_MEMBER_EPOCH'),
    );
    // Before v9 a client only knows generations: the classic protocol's ILLEGAL_GENERATION.
    expect(await errorOf(joined.memberEpoch + 5, 8)).toBe(22);
  });
});

describe('OffsetFetch of a KIP-848 member', () => {
  it('answers the member at its epoch, refuses an unknown member and a stale epoch from v9', async () => {
    const joined = await gateway().heartbeat(join('member-a'));
    coordinator.offsetCommit({
      groupId,
      memberId: 'member-a',
      memberEpoch: joined.memberEpoch,
      offsets: [{ topic: 'orders', partition: 0, offset: 7n, metadata: '', leaderEpoch: -1 }],
    });
    const fetchApi = offsetFetchApi(view, {
      offsetCommit: async (request) => coordinator.offsetCommit(request),
      offsetFetch: async (request) => coordinator.offsetFetch(request),
    }) as KafkaApi<OffsetFetchRequest, OffsetFetchResponse>;
    const fetched = async (
      member: { memberId: string | null; memberEpoch: number },
      version = 9,
      group = groupId,
    ) => {
      const response = await fetchApi.serve(
        {
          ...defaultOffsetFetchRequest(),
          groups: [
            {
              groupId: group,
              ...member,
              topics: [{ name: 'orders', topicId: topicIdBytes, partitionIndexes: [0] }],
            },
          ],
        },
        version,
        context,
      );
      const answered = response!.groups[0]!;
      return [answered.errorCode, answered.topics[0]?.partitions[0]?.committedOffset];
    };
    const memberA = { memberId: 'member-a', memberEpoch: joined.memberEpoch };
    expect(await fetched(memberA)).toEqual([0, 7n]);
    expect(await fetched(memberA, 10)).toEqual([0, 7n]);
    expect(await fetched({ ...memberA, memberEpoch: joined.memberEpoch + 1 })).toEqual([
      kafkaErrorNumberOf('STALE_MEMBER_EPOCH'),
      undefined,
    ]);
    expect(await fetched({ memberId: 'ghost', memberEpoch: 1 })).toEqual([
      kafkaErrorNumberOf('UNKNOWN_MEMBER_ID'),
      undefined,
    ]);
    // A null member id with an epoch is no member either, as in Kafka.
    expect((await fetched({ memberId: null, memberEpoch: 1 }))[0]).toBe(
      kafkaErrorNumberOf('UNKNOWN_MEMBER_ID'),
    );
    // Not checked: a fetch that names no member, one before v9, a group that does not exist.
    expect(await fetched({ memberId: null, memberEpoch: -1 })).toEqual([0, 7n]);
    expect(await fetched({ memberId: 'ghost', memberEpoch: 1 }, 8)).toEqual([0, 7n]);
    expect(await fetched({ memberId: 'ghost', memberEpoch: 1 }, 9, 'no-such-group')).toEqual([
      0,
      -1n,
    ]);
  });
});
