/**
 * The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), which KafkaJS,
 * librdkafka and kcat speak, served on the coordinators' consumer groups (KIP-848, server-side
 * assignment), as Kafka 4's coordinator serves classic members of a consumer group: a classic
 * member and an SDK member share one group, one assignment and one set of committed offsets.
 *
 * 1. JoinGroup is a consumer-group heartbeat with the member's subscription (decoded from its
 *    first protocol's ConsumerProtocolSubscription) and nothing owned: an eager classic member
 *    has released every partition before it rejoins. A new member (empty member id) joins at
 *    epoch 0 and gets its member id from the coordinator. The answer's generation id is the
 *    member epoch; no member is the leader (leader ""), so every client syncs as a follower and
 *    the coordinator's assignor decides (the protocol's name picks range for "range", uniform
 *    otherwise).
 * 2. SyncGroup answers the member's assignment as a ConsumerProtocolAssignment; the member holds
 *    those partitions from then on.
 * 3. Heartbeat is a consumer-group heartbeat that says what the member holds. When the
 *    coordinator moves the member's assignment or epoch, the answer is REBALANCE_IN_PROGRESS and
 *    the member rejoins (point 1), releasing its partitions first, so a partition is never read
 *    by two members of the group at once.
 * 4. LeaveGroup is a heartbeat at epoch -1 for each member named.
 * 5. A member the gateway does not remember (classic-member-table.ts) is told
 *    REBALANCE_IN_PROGRESS (or, for SyncGroup, to rejoin), and its rejoin rebuilds it. Fenced
 *    or stale epochs are ILLEGAL_GENERATION, the classic protocol's word for them.
 */
import {
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinGroupRequest,
  type JoinGroupResponse,
  KafkaReader,
  KafkaWriter,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type SyncGroupRequest,
  type SyncGroupResponse,
  consumerProtocolSubscriptionVersions,
  defaultHeartbeatResponse,
  defaultJoinGroupResponse,
  defaultLeaveGroupResponse,
  defaultSyncGroupResponse,
  readConsumerProtocolSubscription,
  readHeartbeatRequest,
  readJoinGroupRequest,
  readLeaveGroupRequest,
  readSyncGroupRequest,
  writeConsumerProtocolAssignment,
  writeHeartbeatResponse,
  writeJoinGroupResponse,
  writeLeaveGroupResponse,
  writeSyncGroupResponse,
} from '@spool/kafka-protocol';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  ProtoError,
} from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { ClassicMember, ClassicMemberTable } from './classic-member-table';
import { kafkaErrorNumberOf } from './kafka-errors';

const ApiKey = { JoinGroup: 11, Heartbeat: 12, LeaveGroup: 13, SyncGroup: 14 } as const;
const ClassicError = {
  IllegalGeneration: 22,
  InconsistentGroupProtocol: 23,
  RebalanceInProgress: 27,
} as const;
const consumerProtocolType = 'consumer';
/** How the coordinator's DescribeGroup tells these members from KIP-848 ones. */
const classicMemberType = 'classic';
/** The coordinator's bound on identifiers; a client id is shown, so a longer one is cut. */
const clientIdLengthMax = 255;
const joinEpoch = 0;
const leaveEpoch = -1;
/** The first LeaveGroup version that names members in a list (KIP-345). */
const leaveMembersVersion = 3;

type Heartbeat = (
  request: ConsumerGroupHeartbeatRequest,
) => Promise<ConsumerGroupHeartbeatResponse>;

/** A coordinator's error as the classic protocol's number (point 5). */
export function classicErrorNumberOf(error: ProtoError | undefined): number {
  switch (error?.code) {
    case 'FENCED_MEMBER_EPOCH':
    case 'STALE_MEMBER_EPOCH':
      return ClassicError.IllegalGeneration;
    case 'UNSUPPORTED_ASSIGNOR':
      return ClassicError.InconsistentGroupProtocol;
    default:
      return kafkaErrorNumberOf(error?.code);
  }
}

/** The topics of a ConsumerProtocolSubscription (a version, then that version's fields). */
function subscribedTopicsOf(metadata: Buffer): string[] | undefined {
  try {
    const reader = new KafkaReader(metadata);
    // Kafka reads a newer version as the newest it knows: its fields come first.
    const version = Math.min(
      reader.readInt16('version'),
      consumerProtocolSubscriptionVersions.highest,
    );
    if (version < 0) return undefined;
    return [...new Set(readConsumerProtocolSubscription(reader, version).topics)].sort();
  } catch {
    return undefined;
  }
}

/** A ConsumerProtocolAssignment v0, which every client reads. */
export function assignmentBytesOf(
  partitions: ReadonlyArray<{ topic: string; partition: number }>,
): Buffer {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of partitions) {
    const list = byTopic.get(topic) ?? [];
    list.push(partition);
    byTopic.set(topic, list);
  }
  const writer = new KafkaWriter();
  writer.writeInt16(0);
  writeConsumerProtocolAssignment(
    writer,
    {
      assignedPartitions: [...byTopic].map(([topic, list]) => ({
        topic,
        partitions: list.sort((left, right) => left - right),
      })),
      userData: null,
    },
    0,
  );
  return writer.toBuffer();
}

function assignorOf(protocolName: string): string {
  return protocolName === 'range' ? 'range' : 'uniform';
}

export function classicGroupApis(
  members: ClassicMemberTable,
  heartbeat: Heartbeat,
  nowMs: () => number = Date.now,
): Array<KafkaApi<never, never>> {
  /** One heartbeat for a remembered member; updates its epoch and assignment. */
  const beat = async (
    member: ClassicMember,
    memberEpoch: number,
    owned: ClassicMember['owned'],
  ): Promise<ConsumerGroupHeartbeatResponse> => {
    const response = await heartbeat({
      groupId: member.groupId,
      memberId: member.memberId,
      memberEpoch,
      instanceId: '',
      subscribedTopics: member.subscribedTopics,
      subscribedRegex: '',
      ownedPartitions: owned,
      rebalanceTimeoutMs: member.rebalanceTimeoutMs,
      assignor: member.assignor,
      rackId: '',
      clientId: member.clientId,
      clientHost: member.clientHost,
      memberType: classicMemberType,
    });
    if (response.error === undefined) {
      member.memberEpoch = response.memberEpoch;
      // Absent: the assignment is what the heartbeat said the member owns.
      member.assigned = response.assignment?.partitions.map(({ topic, partition }) => ({
        topic,
        partition,
      })) ?? [...owned];
    }
    return response;
  };

  const joinGroup: KafkaApi<JoinGroupRequest, JoinGroupResponse> = {
    apiKey: ApiKey.JoinGroup,
    minVersion: 0,
    maxVersion: 9,
    read: readJoinGroupRequest,
    write: writeJoinGroupResponse,
    serve: async (request, _version, context) => {
      const failed = (errorCode: number): JoinGroupResponse => ({
        ...defaultJoinGroupResponse(),
        errorCode,
        memberId: request.memberId,
      });
      // Point 1.
      const protocol = request.protocols[0];
      const topics = protocol === undefined ? undefined : subscribedTopicsOf(protocol.metadata);
      if (request.protocolType !== consumerProtocolType || topics === undefined) {
        return failed(ClassicError.InconsistentGroupProtocol);
      }
      const known =
        request.memberId === ''
          ? undefined
          : members.get(request.groupId, request.memberId, nowMs());
      const member: ClassicMember = {
        groupId: request.groupId,
        memberId: request.memberId,
        subscribedTopics: topics,
        assignor: assignorOf(protocol!.name),
        rebalanceTimeoutMs:
          request.rebalanceTimeoutMs > 0 ? request.rebalanceTimeoutMs : request.sessionTimeoutMs,
        clientId: (context.clientId ?? '').slice(0, clientIdLengthMax),
        clientHost: context.clientHost,
        memberEpoch: known?.memberEpoch ?? joinEpoch,
        generation: known?.generation ?? joinEpoch,
        assigned: [],
        owned: [],
        lastUsedMs: nowMs(),
      };
      const response = await beat(member, member.memberEpoch, []);
      if (response.error !== undefined) return failed(classicErrorNumberOf(response.error));
      const joined: ClassicMember = {
        ...member,
        memberId: response.memberId,
        generation: response.memberEpoch,
      };
      members.set(joined);
      return {
        ...defaultJoinGroupResponse(),
        generationId: response.memberEpoch,
        protocolType: consumerProtocolType,
        protocolName: protocol!.name,
        leader: '',
        memberId: response.memberId,
      };
    },
  };

  const syncGroup: KafkaApi<SyncGroupRequest, SyncGroupResponse> = {
    apiKey: ApiKey.SyncGroup,
    minVersion: 0,
    maxVersion: 5,
    read: readSyncGroupRequest,
    write: writeSyncGroupResponse,
    serve: async (request) => {
      // Point 2.
      const member = members.get(request.groupId, request.memberId, nowMs());
      if (member === undefined) {
        return { ...defaultSyncGroupResponse(), errorCode: ClassicError.RebalanceInProgress };
      }
      if (request.generationId !== member.generation) {
        return { ...defaultSyncGroupResponse(), errorCode: ClassicError.IllegalGeneration };
      }
      member.owned = [...member.assigned];
      return {
        ...defaultSyncGroupResponse(),
        protocolType: request.protocolType,
        protocolName: request.protocolName,
        assignment: assignmentBytesOf(member.owned),
      };
    },
  };

  const heartbeatApi: KafkaApi<HeartbeatRequest, HeartbeatResponse> = {
    apiKey: ApiKey.Heartbeat,
    minVersion: 0,
    maxVersion: 4,
    read: readHeartbeatRequest,
    write: writeHeartbeatResponse,
    serve: async (request) => {
      // Point 3.
      const member = members.get(request.groupId, request.memberId, nowMs());
      if (member === undefined) {
        return { ...defaultHeartbeatResponse(), errorCode: ClassicError.RebalanceInProgress };
      }
      if (request.generationId !== member.generation) {
        return { ...defaultHeartbeatResponse(), errorCode: ClassicError.IllegalGeneration };
      }
      const response = await beat(member, member.memberEpoch, member.owned);
      if (response.error !== undefined) {
        if (response.error.code === 'UNKNOWN_MEMBER_ID')
          members.delete(member.groupId, member.memberId);
        return { ...defaultHeartbeatResponse(), errorCode: classicErrorNumberOf(response.error) };
      }
      const moved =
        response.memberEpoch !== member.generation ||
        !samePartitions(member.assigned, member.owned);
      return {
        ...defaultHeartbeatResponse(),
        errorCode: moved ? ClassicError.RebalanceInProgress : 0,
      };
    },
  };

  const leaveGroup: KafkaApi<LeaveGroupRequest, LeaveGroupResponse> = {
    apiKey: ApiKey.LeaveGroup,
    minVersion: 0,
    maxVersion: 5,
    read: readLeaveGroupRequest,
    write: writeLeaveGroupResponse,
    serve: async (request, version) => {
      // Point 4.
      const memberIds =
        version >= leaveMembersVersion
          ? request.members.map((identity) => identity.memberId)
          : [request.memberId];
      const errorCodes = await Promise.all(
        memberIds.map(async (memberId) => {
          members.delete(request.groupId, memberId);
          const response = await heartbeat({
            groupId: request.groupId,
            memberId,
            memberEpoch: leaveEpoch,
            instanceId: '',
            subscribedTopics: [],
            subscribedRegex: '',
            ownedPartitions: [],
            rebalanceTimeoutMs: 0,
            assignor: '',
            rackId: '',
            clientId: '',
            clientHost: '',
            memberType: classicMemberType,
          });
          return classicErrorNumberOf(response.error);
        }),
      );
      if (version < leaveMembersVersion) {
        return { ...defaultLeaveGroupResponse(), errorCode: errorCodes[0]! };
      }
      return {
        ...defaultLeaveGroupResponse(),
        members: request.members.map((identity, index) => ({
          memberId: identity.memberId,
          groupInstanceId: identity.groupInstanceId,
          errorCode: errorCodes[index]!,
        })),
      };
    },
  };

  return [joinGroup, syncGroup, heartbeatApi, leaveGroup] as unknown as Array<
    KafkaApi<never, never>
  >;
}

function samePartitions(
  left: ReadonlyArray<{ topic: string; partition: number }>,
  right: ReadonlyArray<{ topic: string; partition: number }>,
): boolean {
  const keys = (list: ReadonlyArray<{ topic: string; partition: number }>) =>
    list
      .map(({ topic, partition }) => `${partition}:${topic}`)
      .sort()
      .join(',');
  return left.length === right.length && keys(left) === keys(right);
}
