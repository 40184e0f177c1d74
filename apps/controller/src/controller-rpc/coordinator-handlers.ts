// The group coordinators' RPCs: producer id blocks, heartbeats (which carry shard ownership),
// and creating __consumer_offsets on first use.
import type {
  AllocateProducerIdsRequest,
  AllocateProducerIdsResponse,
  CoordinatorHeartbeatRequest,
  CoordinatorHeartbeatResponse,
  EnsureOffsetsTopicResponse,
} from '@spool/protocol';
import { topicMetadataOf } from '../metadata-conversions';
import { ensureOffsetsTopic } from '../offsets-topic';
import { allocateProducerIdBlock } from '../producer-id-blocks';
import { type ControllerAccess } from './controller-access';

/**
 * How often a coordinator should heartbeat: a quarter of its session, at most 2 s, so a few lost
 * heartbeats do not end a session and a dead coordinator is noticed within the timeout.
 */
export function coordinatorHeartbeatIntervalMs(sessionTimeoutMs: number): number {
  return Math.max(50, Math.min(2_000, Math.floor(sessionTimeoutMs / 4)));
}

export function allocateProducerIdsHandler(role: ControllerAccess) {
  return async (request: AllocateProducerIdsRequest): Promise<AllocateProducerIdsResponse> => {
    const { controller } = await role.requireActive();
    const block = await controller.queue.run(() =>
      allocateProducerIdBlock(controller.context, request.coordinatorId),
    );
    return { error: undefined, firstProducerId: block.firstProducerId, count: block.count };
  };
}

export function coordinatorHeartbeatHandler(role: ControllerAccess) {
  return async (request: CoordinatorHeartbeatRequest): Promise<CoordinatorHeartbeatResponse> => {
    const { controller } = await role.requireActive();
    const input = {
      coordinatorId: request.coordinatorId,
      endpoints: request.endpoints,
      incarnationId: request.incarnationId,
      shuttingDown: request.shuttingDown,
    };
    // Most heartbeats change nothing: they skip the queue, so they never delay a command.
    const shards =
      controller.coordinators.heartbeatWithoutChange(input) ??
      (await controller.queue.run(() => controller.coordinators.heartbeat(input)));
    return {
      error: undefined,
      shards: shards.map((shard) => ({ ...shard })),
      heartbeatIntervalMs: coordinatorHeartbeatIntervalMs(
        controller.context.settings.coordinatorSessionTimeoutMs,
      ),
    };
  };
}

export function ensureOffsetsTopicHandler(role: ControllerAccess) {
  return async (): Promise<EnsureOffsetsTopicResponse> => {
    const { controller } = await role.requireActive();
    const topic = await controller.queue.run(() => ensureOffsetsTopic(controller.context));
    return { error: undefined, topic: topicMetadataOf(topic) };
  };
}
