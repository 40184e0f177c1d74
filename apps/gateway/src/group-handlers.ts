/**
 * The group RPCs (consumer groups, committed offsets, producer ids), forwarded to coordinators:
 * a group's calls to the coordinator that owns its shard (coordinator-router.ts), ListGroups to
 * every coordinator (merged), InitProducerId to any live one. When no coordinator can answer
 * before the deadline the call is answered COORDINATOR_NOT_AVAILABLE (retriable), in the
 * response's error field where it has one, as the coordinators answer their own errors.
 */
import type { ServerUnaryCall } from '@grpc/grpc-js';
import { callOnce, clientHostOf, SpoolError, wireErrorOf } from '@spool/common';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  CoordinatorServiceClient,
  DeleteGroupRequest,
  DeleteGroupResponse,
  DeleteOffsetsRequest,
  DeleteOffsetsResponse,
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
  ProtoError,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
} from '@spool/protocol';
import { callDeadlineMs, type CoordinatorRouter } from './coordinator-router';

type Call = ServerUnaryCall<unknown, unknown>;

/** The SDK's client.id, sent with every call (libs/client). */
const clientIdMetadataKey = 'spool-client-id';
/** The coordinator's bound on identifiers; a client id is shown, so a longer one is cut. */
const clientIdLengthMax = 255;

/** A heartbeat with who sent it, for DescribeGroup: the call's client id and address. */
function withCaller(
  request: ConsumerGroupHeartbeatRequest,
  call: Call | undefined,
): ConsumerGroupHeartbeatRequest {
  if (call === undefined) return request;
  const clientId = call.metadata.get(clientIdMetadataKey)[0];
  return {
    ...request,
    clientId:
      request.clientId === '' && typeof clientId === 'string'
        ? clientId.slice(0, clientIdLengthMax)
        : request.clientId,
    clientHost: request.clientHost === '' ? clientHostOf(call) : request.clientHost,
  };
}
export function groupHandlers(router: CoordinatorRouter) {
  /** One group call to the owner of the group's shard; `failed` shapes a final error. */
  async function toOwner<Request extends { groupId: string }, Response>(
    request: Request,
    call: Call | undefined,
    send: (
      client: CoordinatorServiceClient,
      request: Request,
      deadlineMs: number,
    ) => Promise<Response>,
    errorOf: (response: Response) => ProtoError | undefined,
    failed: (error: ProtoError) => Response,
  ): Promise<Response> {
    try {
      return await router.call(
        () => router.ownerOf(request.groupId),
        (client, remainingMs) => send(client, request, remainingMs),
        errorOf,
        callDeadlineMs(call),
      );
    } catch (error) {
      if (error instanceof SpoolError && error.code === 'COORDINATOR_NOT_AVAILABLE')
        return failed(wireErrorOf(error));
      throw error;
    }
  }

  return {
    consumerGroupHeartbeat: (
      request: ConsumerGroupHeartbeatRequest,
      call?: Call,
    ): Promise<ConsumerGroupHeartbeatResponse> =>
      toOwner(
        withCaller(request, call),
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.consumerGroupHeartbeat, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({
          error,
          memberId: request.memberId,
          memberEpoch: request.memberEpoch,
          heartbeatIntervalMs: 0,
          assignment: undefined,
        }),
      ),

    offsetCommit: (request: OffsetCommitRequest, call?: Call): Promise<OffsetCommitResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.offsetCommit, forwarded, { deadlineMs }),
        // A coordinator that refuses the whole commit answers every partition with one error.
        (response) => response.results.find((result) => result.error !== undefined)?.error,
        (error) => ({
          results: request.offsets.map((offset) => ({
            topic: offset.topic,
            partition: offset.partition,
            error,
          })),
        }),
      ),

    offsetFetch: (request: OffsetFetchRequest, call?: Call): Promise<OffsetFetchResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.offsetFetch, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({ error, offsets: [] }),
      ),

    describeGroup: (request: DescribeGroupRequest, call?: Call): Promise<DescribeGroupResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.describeGroup, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({
          error,
          groupId: request.groupId,
          state: '',
          groupEpoch: 0,
          members: [],
          partitions: [],
          assignor: '',
          assignmentEpoch: 0,
        }),
      ),

    deleteGroup: (request: DeleteGroupRequest, call?: Call): Promise<DeleteGroupResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.deleteGroup, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({ error }),
      ),

    resetOffsets: (request: ResetOffsetsRequest, call?: Call): Promise<ResetOffsetsResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.resetOffsets, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({ error, offsets: [] }),
      ),

    deleteOffsets: (request: DeleteOffsetsRequest, call?: Call): Promise<DeleteOffsetsResponse> =>
      toOwner(
        request,
        call,
        (client, forwarded, deadlineMs) =>
          callOnce(client, client.deleteOffsets, forwarded, { deadlineMs }),
        (response) => response.error,
        (error) => ({ error, partitions: [] }),
      ),

    /** Every coordinator's groups, merged; one that cannot answer fails the call (retriable). */
    listGroups: async (request: ListGroupsRequest, call?: Call): Promise<ListGroupsResponse> => {
      const deadlineMs = callDeadlineMs(call);
      const coordinatorIds = router.coordinatorIds();
      if (coordinatorIds.length === 0) {
        throw new SpoolError('COORDINATOR_NOT_AVAILABLE', 'no coordinator is registered');
      }
      const answers = await Promise.all(
        coordinatorIds.map((coordinatorId) =>
          router.call(
            () => ({ coordinatorId }),
            (client, remainingMs) =>
              callOnce(client, client.listGroups, request, { deadlineMs: remainingMs }),
            () => undefined,
            deadlineMs,
          ),
        ),
      );
      const merged = new Map<string, ListGroupsResponse['groups'][number]>();
      for (const answer of answers)
        for (const group of answer.groups) merged.set(group.groupId, group);
      return {
        groups: [...merged.values()].sort((left, right) =>
          left.groupId.localeCompare(right.groupId),
        ),
      };
    },

    /** Producer ids come from any live coordinator; the next one is tried if it cannot answer. */
    initProducerId: async (
      request: InitProducerIdRequest,
      call?: Call,
    ): Promise<InitProducerIdResponse> => {
      let attempt = 0;
      try {
        return await router.call(
          () => {
            const coordinatorIds = router.coordinatorIds();
            if (coordinatorIds.length === 0) {
              return {
                error: {
                  code: 'COORDINATOR_NOT_AVAILABLE',
                  message: 'no coordinator is registered',
                  retriable: true,
                },
              };
            }
            return { coordinatorId: coordinatorIds[attempt++ % coordinatorIds.length]! };
          },
          (client, remainingMs) =>
            callOnce(client, client.initProducerId, request, { deadlineMs: remainingMs }),
          (response) => response.error,
          callDeadlineMs(call),
        );
      } catch (error) {
        if (error instanceof SpoolError && error.code === 'COORDINATOR_NOT_AVAILABLE')
          return { error: wireErrorOf(error), producerId: -1n, producerEpoch: -1 };
        throw error;
      }
    },
  };
}
