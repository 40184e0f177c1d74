// WatchMetadata: the stream of cluster metadata every storage node, coordinator and gateway
// follows; a storage node's or coordinator's own stream closing is how the controller learns at
// once that its process is gone.
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { WatchMetadataRequest, WatchMetadataResponse } from '@spool/protocol';
import type { ActiveController } from '../active-controller';
import {
  brokerWatchOf,
  coordinatorWatchOf,
  type BrokerWatch,
  type CoordinatorWatch,
  type MetadataPublisher,
} from '../metadata-publisher';
import type { ControllerAccess } from './controller-access';

export function watchMetadataHandler(role: ControllerAccess, publisher: MetadataPublisher) {
  return async (
    request: WatchMetadataRequest,
    call: ServerWritableStream<WatchMetadataRequest, WatchMetadataResponse>,
  ): Promise<void> => {
    const { controller, state } = await role.requireActive();
    await publisher.serve(call, state, await role.activeAddress());
    // Resolved: the watcher went away. A storage node's own stream going away means its
    // process most likely did (broker-lifecycle.ts, fenceDisconnected, says why fencing is safe).
    const broker = brokerWatchOf(request);
    if (broker !== undefined) void fenceUnlessBack(controller, publisher, broker);
    // A coordinator's likewise: its shards move now, not a session timeout later.
    const coordinator = coordinatorWatchOf(request);
    if (coordinator !== undefined) void removeUnlessBack(controller, publisher, coordinator);
  };
}

/**
 * How long a storage node whose watch broke has to watch again before it is fenced: a reconnect
 * after a benign break (its link backs off about 100 ms first) is not a death.
 */
export const brokerWatchReconnectGraceMs = 1_000;

async function fenceUnlessBack(
  controller: ActiveController,
  publisher: MetadataPublisher,
  broker: BrokerWatch,
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, brokerWatchReconnectGraceMs));
  if (publisher.isWatching(broker)) return;
  try {
    const fenced = await controller.queue.run(() =>
      controller.brokers.fenceDisconnected(broker.brokerId, broker.brokerEpoch),
    );
    if (!fenced) {
      // Said, so the decision not to fence is visible (operators, and tests that wait for it).
      controller.context.logger.info(
        { brokerId: broker.brokerId },
        'stream of a broker closed and not back within the grace; not fenced: it shut down in ' +
          'order, registered again or is fenced already',
      );
    }
  } catch (error) {
    // This controller stepped down, or the write failed: the session timeout still applies.
    controller.context.logger.info(
      { err: error, brokerId: broker.brokerId },
      'fencing a disconnected broker failed; its session timeout applies',
    );
  }
}

/**
 * Removes a coordinator whose watch broke and did not come back within the same grace as a
 * storage node's: the process most likely died. Safe as removal on a session timeout is (a
 * live coordinator removed by mistake registers again at its next heartbeat and its shards get
 * new epochs, fencing anything the old owner still writes); only the incarnation that watched
 * is removed, never a newer one.
 */
async function removeUnlessBack(
  controller: ActiveController,
  publisher: MetadataPublisher,
  coordinator: CoordinatorWatch,
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, brokerWatchReconnectGraceMs));
  if (publisher.isCoordinatorWatching(coordinator)) return;
  try {
    await controller.queue.run(() =>
      controller.coordinators.removeDisconnected(
        coordinator.coordinatorId,
        coordinator.incarnationId,
      ),
    );
  } catch (error) {
    controller.context.logger.info(
      { err: error, coordinatorId: coordinator.coordinatorId },
      'removing a disconnected coordinator failed; its session timeout applies',
    );
  }
}
