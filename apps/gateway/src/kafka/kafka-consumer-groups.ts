/**
 * ConsumerGroupHeartbeat (KIP-848, the Java client's group.protocol=consumer) and
 * ConsumerGroupDescribe, on the coordinators' consumer groups: the very groups the SDK's
 * heartbeats and the classic members of kafka-classic-groups.ts share, so a Java consumer, an
 * SDK consumer and a KafkaJS consumer can be members of one group.
 *
 * 1. A request is checked as Kafka checks it, before anything is sent on: INVALID_REQUEST names
 *    the field (an empty group id or member id, a join without rebalanceTimeoutMs or a
 *    subscription, a join that claims partitions, an epoch below -2).
 * 2. Kafka's heartbeat leaves out what did not change since the member's last one (null
 *    subscription, assignor, owned partitions, -1 rebalance timeout); the coordinator's takes the
 *    member's whole state every time. The gateway remembers each member's last full state
 *    (bounded, least recently used first) and fills in what was left out. A member it does not
 *    remember (its heartbeats reached another gateway, or this one restarted) that leaves out
 *    its subscription or owned partitions is answered COORDINATOR_LOAD_IN_PROGRESS: the Java
 *    client backs off and sends every field in its next heartbeat, keeping its partitions.
 * 3. Topics are named by id on this API (owned and assigned partitions), the ids Metadata gives;
 *    an owned partition of a topic id the cluster no longer has is dropped.
 * 4. The coordinator's answer goes back with Kafka's error codes (FENCED_MEMBER_EPOCH,
 *    UNKNOWN_MEMBER_ID, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
 *    INVALID_REQUEST with the coordinator's message naming the field, INVALID_REGULAR_EXPRESSION
 *    for a subscribed regex RE2 refuses). A member that leaves, is
 *    fenced or unknown is forgotten.
 * 5. ConsumerGroupDescribe shows each group as Kafka 4 does: state, epochs, assignor, and each
 *    member's subscription, assignment, target assignment, client id and host, and its type
 *    (a classic member of the Kafka listener, or a KIP-848 member). An unknown group is
 *    GROUP_ID_NOT_FOUND.
 */
import {
  type ConsumerGroupDescribeRequest,
  type ConsumerGroupDescribeResponse,
  type ConsumerGroupDescribeResponseAssignment,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  defaultConsumerGroupDescribeResponse,
  defaultConsumerGroupDescribeResponseDescribedGroup,
  defaultConsumerGroupDescribeResponseMember,
  defaultConsumerGroupHeartbeatResponse,
  readConsumerGroupDescribeRequest,
  readConsumerGroupHeartbeatRequest,
  writeConsumerGroupDescribeResponse,
  writeConsumerGroupHeartbeatResponse,
} from '@spool/kafka-protocol';
import type {
  ConsumerGroupHeartbeatRequest as SpoolHeartbeatRequest,
  ConsumerGroupHeartbeatResponse as SpoolHeartbeatResponse,
  DescribeGroupRequest,
  DescribeGroupResponse,
  TopicPartition,
} from '@spool/protocol';
import type { KafkaApi, KafkaApiContext } from './kafka-api-dispatcher';
import { MemberTable, type RememberedMember } from './classic-member-table';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber, kafkaErrorOf } from './kafka-errors';

const ApiKey = { ConsumerGroupHeartbeat: 68, ConsumerGroupDescribe: 69 } as const;
const joinEpoch = 0;
const leaveEpoch = -1;
const staticLeaveEpoch = -2;
/** The first heartbeat version in which the client makes up its own member id. */
const clientMemberIdVersion = 1;
/** The coordinator's bound on identifiers; a client id is shown, so a longer one is cut. */
const clientIdLengthMax = 255;
/** ConsumerGroupDescribe v1's member types. */
const MemberType = { Unknown: -1, Classic: 0, Consumer: 1 } as const;

export interface ConsumerGroupCoordinators {
  readonly consumerGroupHeartbeat: (
    request: SpoolHeartbeatRequest,
  ) => Promise<SpoolHeartbeatResponse>;
  readonly describeGroup: (request: DescribeGroupRequest) => Promise<DescribeGroupResponse>;
}

/** A KIP-848 member's last full state, what its next heartbeat may leave out (point 2). */
export interface ConsumerMember extends RememberedMember {
  instanceId: string;
  rackId: string;
  rebalanceTimeoutMs: number;
  subscribedTopics: string[];
  subscribedRegex: string;
  assignor: string;
  owned: TopicPartition[];
}

/** Point 1: the field at fault and why, as Kafka words it, or undefined. */
export function invalidHeartbeatReason(
  request: ConsumerGroupHeartbeatRequest,
  version: number,
): string | undefined {
  if (request.groupId === '') return "GroupId can't be empty.";
  if (request.memberId === '' && (version >= clientMemberIdVersion || request.memberEpoch > 0)) {
    return "MemberId can't be empty.";
  }
  if (request.instanceId === '') return "InstanceId can't be empty.";
  if (request.rackId === '') return "RackId can't be empty.";
  if (request.memberEpoch === joinEpoch) {
    if (request.rebalanceTimeoutMs === -1) {
      return 'RebalanceTimeoutMs must be provided in first request.';
    }
    if (request.topicPartitions === null || request.topicPartitions.length > 0) {
      return 'TopicPartitions must be empty when (re-)joining.';
    }
    const names = (request.subscribedTopicNames ?? []).length > 0;
    const regex = (request.subscribedTopicRegex ?? '') !== '';
    if (!names && !regex) {
      return 'SubscribedTopicNames or SubscribedTopicRegex must be set in first request.';
    }
  } else if (request.memberEpoch === staticLeaveEpoch) {
    if (request.instanceId === null) return "InstanceId can't be null.";
  } else if (request.memberEpoch < staticLeaveEpoch) {
    return 'MemberEpoch is invalid.';
  }
  if (request.rebalanceTimeoutMs < -1) return 'RebalanceTimeoutMs is invalid.';
  return undefined;
}

/**
 * Point 2: the member's full state from the request and what the gateway remembers, or
 * undefined when something left out is not remembered.
 */
export function fullStateOf(
  request: ConsumerGroupHeartbeatRequest,
  remembered: ConsumerMember | undefined,
  owned: TopicPartition[] | null,
  nowMs: number,
): ConsumerMember | undefined {
  const joining = request.memberEpoch === joinEpoch;
  const base = joining ? undefined : remembered;
  // A member subscribes by names or by a regex: either one sent replaces the subscription.
  let subscribedTopics = base?.subscribedTopics;
  let subscribedRegex = base?.subscribedRegex;
  if (request.subscribedTopicNames !== null) {
    subscribedTopics = [...request.subscribedTopicNames];
    if (request.subscribedTopicRegex === null && subscribedTopics.length > 0) subscribedRegex = '';
  }
  if (request.subscribedTopicRegex !== null) {
    subscribedRegex = request.subscribedTopicRegex;
    if (request.subscribedTopicNames === null && subscribedRegex !== '') subscribedTopics = [];
  }
  const ownedNow = owned ?? base?.owned;
  if (subscribedTopics === undefined || subscribedRegex === undefined || ownedNow === undefined) {
    return undefined;
  }
  return {
    groupId: request.groupId,
    memberId: request.memberId,
    instanceId: request.instanceId ?? base?.instanceId ?? '',
    rackId: request.rackId ?? base?.rackId ?? '',
    rebalanceTimeoutMs:
      request.rebalanceTimeoutMs >= 0
        ? request.rebalanceTimeoutMs
        : (base?.rebalanceTimeoutMs ?? 0),
    subscribedTopics,
    subscribedRegex,
    assignor: request.serverAssignor ?? base?.assignor ?? '',
    owned: ownedNow,
    lastUsedMs: nowMs,
  };
}

/** Partitions by topic id, as Kafka's heartbeat and describe name them (point 3). */
function byTopicId(
  view: KafkaClusterView,
  partitions: readonly TopicPartition[],
): Array<{ topicId: Buffer; topicName: string; partitions: number[] }> {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of partitions) {
    const list = byTopic.get(topic) ?? [];
    list.push(partition);
    byTopic.set(topic, list);
  }
  return [...byTopic]
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([topicName, list]) => ({
      topicId: view.topicIdOf(topicName),
      topicName,
      partitions: list.sort((left, right) => left - right),
    }));
}

export function consumerGroupApis(
  view: KafkaClusterView,
  coordinators: ConsumerGroupCoordinators,
  members: MemberTable<ConsumerMember> = new MemberTable<ConsumerMember>(),
  nowMs: () => number = Date.now,
): Array<KafkaApi<never, never>> {
  const failed = (
    request: ConsumerGroupHeartbeatRequest,
    errorCode: number,
    errorMessage: string,
  ): ConsumerGroupHeartbeatResponse => ({
    ...defaultConsumerGroupHeartbeatResponse(),
    errorCode,
    errorMessage,
    memberId: request.memberId,
    memberEpoch: request.memberEpoch,
  });

  /** Point 3: owned partitions by name; null when the request leaves them out. */
  const ownedOf = (request: ConsumerGroupHeartbeatRequest): TopicPartition[] | null =>
    request.topicPartitions?.flatMap(({ topicId, partitions }) => {
      const topic = view.topicNameOf(topicId);
      return topic === undefined ? [] : partitions.map((partition) => ({ topic, partition }));
    }) ?? null;

  const leave = async (
    request: ConsumerGroupHeartbeatRequest,
    context: KafkaApiContext,
  ): Promise<ConsumerGroupHeartbeatResponse> => {
    const remembered = members.get(request.groupId, request.memberId, nowMs());
    members.delete(request.groupId, request.memberId);
    const answer = await coordinators.consumerGroupHeartbeat(
      spoolRequestOf(remembered ?? emptyState(request, nowMs()), request.memberEpoch, context),
    );
    if (answer.error !== undefined) {
      const { errorCode, errorMessage } = kafkaErrorOf(answer.error);
      return failed(request, errorCode, errorMessage ?? answer.error.code);
    }
    return {
      ...defaultConsumerGroupHeartbeatResponse(),
      memberId: request.memberId,
      memberEpoch: request.memberEpoch,
    };
  };

  const heartbeat: KafkaApi<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse> = {
    apiKey: ApiKey.ConsumerGroupHeartbeat,
    minVersion: 0,
    maxVersion: 1,
    read: readConsumerGroupHeartbeatRequest,
    write: writeConsumerGroupHeartbeatResponse,
    serve: async (request, version, context) => {
      // Point 1.
      const invalid = invalidHeartbeatReason(request, version);
      if (invalid !== undefined) return failed(request, KafkaErrorNumber.InvalidRequest, invalid);
      if (request.memberEpoch === leaveEpoch || request.memberEpoch === staticLeaveEpoch) {
        return leave(request, context);
      }
      // Point 2.
      const remembered =
        request.memberId === ''
          ? undefined
          : members.get(request.groupId, request.memberId, nowMs());
      const state = fullStateOf(request, remembered, ownedOf(request), nowMs());
      if (state === undefined) {
        return failed(
          request,
          KafkaErrorNumber.CoordinatorLoadInProgress,
          `this gateway does not know member ${request.memberId}'s subscription and owned ` +
            'partitions (its heartbeats went to another gateway); send them in full',
        );
      }
      // Point 4.
      const answer = await coordinators.consumerGroupHeartbeat(
        spoolRequestOf(state, request.memberEpoch, context),
      );
      if (answer.error !== undefined) {
        const code = answer.error.code;
        if (code === 'UNKNOWN_MEMBER_ID' || code === 'FENCED_MEMBER_EPOCH') {
          members.delete(request.groupId, request.memberId);
        }
        const { errorCode, errorMessage } = kafkaErrorOf(answer.error);
        return failed(request, errorCode, errorMessage ?? code);
      }
      members.set({ ...state, memberId: answer.memberId });
      return {
        ...defaultConsumerGroupHeartbeatResponse(),
        memberId: answer.memberId,
        memberEpoch: answer.memberEpoch,
        heartbeatIntervalMs: answer.heartbeatIntervalMs,
        assignment:
          answer.assignment === undefined
            ? null
            : {
                topicPartitions: byTopicId(view, answer.assignment.partitions).map(
                  ({ topicId, partitions }) => ({ topicId, partitions }),
                ),
              },
      };
    },
  };

  // Point 5.
  const describe: KafkaApi<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse> = {
    apiKey: ApiKey.ConsumerGroupDescribe,
    minVersion: 0,
    maxVersion: 1,
    read: readConsumerGroupDescribeRequest,
    write: writeConsumerGroupDescribeResponse,
    serve: async (request) => ({
      ...defaultConsumerGroupDescribeResponse(),
      groups: await Promise.all(
        [...new Set(request.groupIds)].map(async (groupId) =>
          describedGroupOf(view, groupId, await coordinators.describeGroup({ groupId })),
        ),
      ),
    }),
  };

  return [heartbeat, describe] as unknown as Array<KafkaApi<never, never>>;
}

/** A leave needs no remembered state: only who leaves. */
function emptyState(request: ConsumerGroupHeartbeatRequest, nowMs: number): ConsumerMember {
  return {
    groupId: request.groupId,
    memberId: request.memberId,
    instanceId: request.instanceId ?? '',
    rackId: '',
    rebalanceTimeoutMs: 0,
    subscribedTopics: [],
    subscribedRegex: '',
    assignor: '',
    owned: [],
    lastUsedMs: nowMs,
  };
}

function spoolRequestOf(
  state: ConsumerMember,
  memberEpoch: number,
  context: KafkaApiContext,
): SpoolHeartbeatRequest {
  return {
    groupId: state.groupId,
    memberId: state.memberId,
    memberEpoch,
    instanceId: state.instanceId,
    subscribedTopics: state.subscribedTopics,
    subscribedRegex: state.subscribedRegex,
    ownedPartitions: state.owned,
    rebalanceTimeoutMs: state.rebalanceTimeoutMs,
    assignor: state.assignor,
    rackId: state.rackId,
    clientId: (context.clientId ?? '').slice(0, clientIdLengthMax),
    clientHost: context.clientHost,
    memberType: 'consumer',
  };
}

/** Kafka's names of a consumer group's states. */
function consumerGroupStateOf(state: string): string {
  switch (state) {
    case 'EMPTY':
      return 'Empty';
    case 'ASSIGNING':
      return 'Assigning';
    case 'RECONCILING':
      return 'Reconciling';
    case 'STABLE':
      return 'Stable';
    default:
      return 'Dead';
  }
}

function describedGroupOf(
  view: KafkaClusterView,
  groupId: string,
  answer: DescribeGroupResponse,
): ConsumerGroupDescribeResponse['groups'][number] {
  const base = { ...defaultConsumerGroupDescribeResponseDescribedGroup(), groupId };
  if (answer.error !== undefined) {
    return { ...base, groupState: 'Dead', ...kafkaErrorOf(answer.error) };
  }
  const assignmentOf = (
    partitions: readonly TopicPartition[],
  ): ConsumerGroupDescribeResponseAssignment => ({
    topicPartitions: byTopicId(view, partitions),
  });
  return {
    ...base,
    groupState: consumerGroupStateOf(answer.state),
    groupEpoch: answer.groupEpoch,
    assignmentEpoch: answer.assignmentEpoch,
    assignorName: answer.assignor,
    members: answer.members.map((member) => ({
      ...defaultConsumerGroupDescribeResponseMember(),
      memberId: member.memberId,
      instanceId: member.instanceId === '' ? null : member.instanceId,
      rackId: member.rackId === '' ? null : member.rackId,
      memberEpoch: member.memberEpoch,
      clientId: member.clientId,
      clientHost: member.clientHost === '' ? '' : `/${member.clientHost}`,
      subscribedTopicNames: member.subscribedTopics,
      subscribedTopicRegex: member.subscribedRegex === '' ? null : member.subscribedRegex,
      assignment: assignmentOf(member.assignment),
      targetAssignment: assignmentOf(member.targetAssignment),
      memberType:
        member.memberType === 'classic'
          ? MemberType.Classic
          : member.memberType === 'consumer'
            ? MemberType.Consumer
            : MemberType.Unknown,
    })),
  };
}
