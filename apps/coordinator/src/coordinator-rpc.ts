/**
 * The CoordinatorService handlers: each call goes to the runtime (groups, shards, producer ids)
 * once the coordinator has started; before that it answers COORDINATOR_NOT_AVAILABLE
 * (retriable). Calls with an error field in their response carry errors there; ListGroups,
 * which has none, throws.
 */
import type {
  DeleteOffsetsRequest,
  DeleteOffsetsResponse,
  ClusterMetadataCache,
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  DeleteGroupRequest,
  DeleteGroupResponse,
  DescribeGroupRequest,
  DescribeGroupResponse,
  FindCoordinatorRequest,
  FindCoordinatorResponse,
  InitProducerIdRequest,
  InitProducerIdResponse,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
} from '@spool/protocol';
import { SpoolError, wireErrorOf } from '@spool/common';
import type { GroupCoordinator } from './group-coordinator';
import { resetOffsets } from './offset-resets';
import type { PartitionLeaders } from './partition-leaders';
import type { ProducerIdManager } from './producer-id-manager';
import type { ShardManager } from './shard-manager';

export interface CoordinatorRuntime {
  readonly groups: GroupCoordinator;
  readonly shards: ShardManager;
  readonly leaders: PartitionLeaders;
  readonly metadata: ClusterMetadataCache;
  readonly producerIds: ProducerIdManager;
}

export function coordinatorHandlers(runtimeOf: () => CoordinatorRuntime | undefined) {
  const runtime = (): CoordinatorRuntime => {
    const started = runtimeOf();
    if (started === undefined)
      throw new SpoolError('COORDINATOR_NOT_AVAILABLE', 'this coordinator is starting');
    return started;
  };
  return {
    findCoordinator: async (request: FindCoordinatorRequest): Promise<FindCoordinatorResponse> =>
      runtime().groups.findCoordinator(request),

    consumerGroupHeartbeat: async (
      request: ConsumerGroupHeartbeatRequest,
    ): Promise<ConsumerGroupHeartbeatResponse> => runtime().groups.heartbeat(request),

    offsetCommit: async (request: OffsetCommitRequest): Promise<OffsetCommitResponse> =>
      runtime().groups.offsetCommit(request),

    offsetFetch: async (request: OffsetFetchRequest): Promise<OffsetFetchResponse> =>
      runtime().groups.offsetFetch(request),

    listGroups: async (): Promise<ListGroupsResponse> => runtime().groups.listGroups(),

    describeGroup: async (request: DescribeGroupRequest): Promise<DescribeGroupResponse> =>
      runtime().groups.describeGroup(request),

    deleteGroup: async (request: DeleteGroupRequest): Promise<DeleteGroupResponse> =>
      runtime().groups.deleteGroup(request),

    resetOffsets: async (request: ResetOffsetsRequest): Promise<ResetOffsetsResponse> =>
      resetOffsets(runtime(), request),

    deleteOffsets: async (request: DeleteOffsetsRequest): Promise<DeleteOffsetsResponse> =>
      runtime().groups.deleteOffsets(request),

    initProducerId: async (request: InitProducerIdRequest): Promise<InitProducerIdResponse> => {
      try {
        return await runtime().producerIds.initProducerId(request);
      } catch (error) {
        return { error: wireErrorOf(error), producerId: -1n, producerEpoch: -1 };
      }
    },
  };
}
