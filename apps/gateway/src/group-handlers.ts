/**
 * The group RPCs (consumer groups, committed offsets, producer ids) belong to the coordinator
 * service, which this cluster does not run yet. Until it does, each answers
 * COORDINATOR_NOT_AVAILABLE, retriable as in Kafka, naming the call and the group, rather than
 * pretend with made-up results.
 */
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  DeleteGroupRequest,
  DeleteGroupResponse,
  DescribeGroupRequest,
  DescribeGroupResponse,
  InitProducerIdRequest,
  InitProducerIdResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
} from '@spool/protocol';
import { GatewayError } from './gateway-errors';

function coordinatorNotAvailable(api: string, groupId?: string): Promise<never> {
  const subject = groupId === undefined ? '' : ` for group "${groupId}"`;
  return Promise.reject(
    new GatewayError(
      'COORDINATOR_NOT_AVAILABLE',
      `${api}${subject} needs the group coordinator, which is not deployed in this cluster yet`,
    ),
  );
}

export function groupHandlers() {
  return {
    consumerGroupHeartbeat: (
      request: ConsumerGroupHeartbeatRequest,
    ): Promise<ConsumerGroupHeartbeatResponse> =>
      coordinatorNotAvailable('ConsumerGroupHeartbeat', request.groupId),
    offsetCommit: (request: OffsetCommitRequest): Promise<OffsetCommitResponse> =>
      coordinatorNotAvailable('OffsetCommit', request.groupId),
    offsetFetch: (request: OffsetFetchRequest): Promise<OffsetFetchResponse> =>
      coordinatorNotAvailable('OffsetFetch', request.groupId),
    listGroups: (_request: ListGroupsRequest): Promise<ListGroupsResponse> =>
      coordinatorNotAvailable('ListGroups'),
    describeGroup: (request: DescribeGroupRequest): Promise<DescribeGroupResponse> =>
      coordinatorNotAvailable('DescribeGroup', request.groupId),
    deleteGroup: (request: DeleteGroupRequest): Promise<DeleteGroupResponse> =>
      coordinatorNotAvailable('DeleteGroup', request.groupId),
    resetOffsets: (request: ResetOffsetsRequest): Promise<ResetOffsetsResponse> =>
      coordinatorNotAvailable('ResetOffsets', request.groupId),
    initProducerId: (_request: InitProducerIdRequest): Promise<InitProducerIdResponse> =>
      coordinatorNotAvailable('InitProducerId'),
  };
}
