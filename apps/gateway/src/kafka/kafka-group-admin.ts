/**
 * ListGroups, DescribeGroups and DeleteGroups, what kafka-consumer-groups --list, --describe and
 * --delete ask, on the coordinators' consumer groups.
 *
 * 1. States are Kafka's classic names, which these APIs report: EMPTY is Empty, STABLE Stable,
 *    ASSIGNING and RECONCILING PreparingRebalance (members are moving), DEAD Dead. Every group is
 *    of protocol type "consumer" and, for ListGroups v5, of type "consumer".
 * 2. A member's assignment is a ConsumerProtocolAssignment, as a classic group leader writes it;
 *    its metadata is empty (the coordinator, not a leader, assigns).
 * 3. DeleteGroups deletes each group as the gRPC DeleteGroup does, its committed offsets with it:
 *    a group with members is NON_EMPTY_GROUP (68), an unknown one GROUP_ID_NOT_FOUND (69), each
 *    on its own entry; the others are deleted all the same.
 */
import {
  type DeleteGroupsRequest,
  type DeleteGroupsResponse,
  type DescribeGroupsRequest,
  type DescribeGroupsResponse,
  type ListGroupsRequest,
  type ListGroupsResponse,
  defaultDeletableGroupResult,
  defaultDeleteGroupsResponse,
  defaultDescribeGroupsResponse,
  defaultDescribeGroupsResponseDescribedGroup,
  defaultListGroupsResponse,
  readDeleteGroupsRequest,
  readDescribeGroupsRequest,
  readListGroupsRequest,
  writeDeleteGroupsResponse,
  writeDescribeGroupsResponse,
  writeListGroupsResponse,
} from '@spool/kafka-protocol';
import type {
  DeleteGroupRequest,
  DeleteGroupResponse,
  DescribeGroupRequest,
  DescribeGroupResponse,
  ListGroupsRequest as SpoolListGroupsRequest,
  ListGroupsResponse as SpoolListGroupsResponse,
} from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { assignmentBytesOf, classicErrorNumberOf } from './kafka-classic-groups';

const ApiKey = { DescribeGroups: 15, ListGroups: 16, DeleteGroups: 42 } as const;
const consumerProtocolType = 'consumer';

export interface GroupAdminCoordinators {
  readonly listGroups: (request: SpoolListGroupsRequest) => Promise<SpoolListGroupsResponse>;
  readonly describeGroup: (request: DescribeGroupRequest) => Promise<DescribeGroupResponse>;
  readonly deleteGroup: (request: DeleteGroupRequest) => Promise<DeleteGroupResponse>;
}

/** Point 1. */
export function classicStateOf(state: string): string {
  switch (state) {
    case 'EMPTY':
      return 'Empty';
    case 'STABLE':
      return 'Stable';
    case 'DEAD':
      return 'Dead';
    default:
      return 'PreparingRebalance';
  }
}

export function groupAdminApis(
  coordinators: GroupAdminCoordinators,
): Array<KafkaApi<never, never>> {
  const listGroups: KafkaApi<ListGroupsRequest, ListGroupsResponse> = {
    apiKey: ApiKey.ListGroups,
    minVersion: 0,
    maxVersion: 5,
    read: readListGroupsRequest,
    write: writeListGroupsResponse,
    serve: async (request) => {
      const answer = await coordinators.listGroups({});
      const states = new Set(request.statesFilter.map((state) => state.toLowerCase()));
      const types = new Set(request.typesFilter.map((type) => type.toLowerCase()));
      return {
        ...defaultListGroupsResponse(),
        groups: answer.groups
          .map((group) => ({
            groupId: group.groupId,
            protocolType: consumerProtocolType,
            groupState: classicStateOf(group.state),
            groupType: consumerProtocolType,
          }))
          .filter((group) => states.size === 0 || states.has(group.groupState.toLowerCase()))
          .filter(() => types.size === 0 || types.has(consumerProtocolType)),
      };
    },
  };

  const describeGroups: KafkaApi<DescribeGroupsRequest, DescribeGroupsResponse> = {
    apiKey: ApiKey.DescribeGroups,
    minVersion: 0,
    maxVersion: 6,
    read: readDescribeGroupsRequest,
    write: writeDescribeGroupsResponse,
    serve: async (request) => ({
      ...defaultDescribeGroupsResponse(),
      groups: await Promise.all(
        request.groups.map(async (groupId) => {
          const answer = await coordinators.describeGroup({ groupId });
          const base = { ...defaultDescribeGroupsResponseDescribedGroup(), groupId };
          if (answer.error !== undefined) {
            return {
              ...base,
              errorCode: classicErrorNumberOf(answer.error),
              errorMessage: answer.error.message,
            };
          }
          return {
            ...base,
            groupState: classicStateOf(answer.state),
            protocolType: consumerProtocolType,
            protocolData: answer.members.length > 0 ? 'range' : '',
            // Point 2.
            members: answer.members.map((member) => ({
              memberId: member.memberId,
              groupInstanceId: member.instanceId === '' ? null : member.instanceId,
              clientId: member.clientId,
              // Kafka shows an address as Java's InetAddress prints it.
              clientHost: member.clientHost === '' ? '' : `/${member.clientHost}`,
              memberMetadata: Buffer.alloc(0),
              memberAssignment: assignmentBytesOf(member.assignment),
            })),
          };
        }),
      ),
    }),
  };

  // Point 3.
  const deleteGroups: KafkaApi<DeleteGroupsRequest, DeleteGroupsResponse> = {
    apiKey: ApiKey.DeleteGroups,
    minVersion: 0,
    maxVersion: 3,
    read: readDeleteGroupsRequest,
    write: writeDeleteGroupsResponse,
    serve: async (request) => ({
      ...defaultDeleteGroupsResponse(),
      results: await Promise.all(
        [...new Set(request.groupsNames)].map(async (groupId) => {
          const answer = await coordinators.deleteGroup({ groupId });
          return {
            ...defaultDeletableGroupResult(),
            groupId,
            errorCode: classicErrorNumberOf(answer.error),
            errorMessage: answer.error?.message ?? null,
          };
        }),
      ),
    }),
  };

  return [listGroups, describeGroups, deleteGroups] as unknown as Array<KafkaApi<never, never>>;
}
