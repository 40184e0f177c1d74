/**
 * WatchMetadata: every storage node, coordinator and gateway follows the cluster through one
 * server stream from the active controller: a full snapshot, then a delta per applied store
 * revision, each with its metadata version (the revision). Nobody polls. A watcher that asks to
 * resume from the version the controller is at gets no snapshot; any other gets a fresh one.
 *
 * Bounds: a watcher that does not read its stream is cut off once its unsent messages pass
 * `pendingBytesMax` (it reconnects and gets a snapshot) instead of growing this process's memory.
 * When the controller stops being active every stream ends with NOT_CONTROLLER.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { Logger } from '@spool/common';
import type { WatchMetadataRequest, WatchMetadataResponse } from '@spool/protocol';
import type { ClusterState, MetadataDelta } from './cluster-state';
import { ControllerError } from './controller-errors';
import {
  brokerMetadataOf,
  coordinatorMetadataOf,
  coordinatorShardOf,
  sortedBrokers,
  sortedCoordinatorShards,
  sortedCoordinators,
  topicMetadataOf,
} from './metadata-conversions';

/** Unsent bytes one watcher may hold before it is cut off. */
export const pendingBytesMax = 64 * 1024 * 1024;

export class MetadataPublisher {
  private readonly watchers = new Set<(error: Error) => void>();

  constructor(private readonly logger: Logger) {}

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** Streams until the client cancels or the controller steps down (the promise rejects). */
  serve(
    call: ServerWritableStream<WatchMetadataRequest, WatchMetadataResponse>,
    state: ClusterState,
    controllerAddress: string,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let unsubscribe = (): void => {};
      const finish = (error?: Error): void => {
        unsubscribe();
        this.watchers.delete(endWithError);
        if (error === undefined) resolve();
        else reject(error);
      };
      const endWithError = (error: Error): void => finish(error);
      this.watchers.add(endWithError);
      call.on('cancelled', () => finish());
      call.on('error', () => finish());

      const send = (message: WatchMetadataResponse): void => {
        if (call.writableLength > pendingBytesMax) {
          this.logger.warn({ peer: call.getPeer() }, 'metadata watcher too slow; cutting it off');
          finish(
            new ControllerError('UNAVAILABLE', 'metadata watcher fell too far behind; watch again'),
          );
          return;
        }
        call.write(message);
      };

      if (call.request.fromVersion !== state.revision || call.request.fromVersion === 0n) {
        send({
          metadataVersion: state.revision,
          snapshot: true,
          brokers: sortedBrokers(state),
          topics: [...state.topics.values()].map(topicMetadataOf),
          deletedTopics: [],
          deletedBrokers: [],
          controllerAddress,
          coordinators: sortedCoordinators(state),
          deletedCoordinators: [],
          coordinatorShards: sortedCoordinatorShards(state),
        });
      }
      unsubscribe = state.onDelta((delta: MetadataDelta) => {
        send({
          metadataVersion: delta.revision,
          snapshot: false,
          brokers: [...delta.changedBrokers]
            .map((brokerId) => state.brokers.get(brokerId))
            .filter((broker) => broker !== undefined)
            .map(brokerMetadataOf),
          topics: [...delta.changedTopics]
            .map((name) => state.topics.get(name))
            .filter((topic) => topic !== undefined)
            .map(topicMetadataOf),
          deletedTopics: [...delta.deletedTopics],
          deletedBrokers: [...delta.deletedBrokers],
          controllerAddress,
          coordinators: [...delta.changedCoordinators]
            .map((coordinatorId) => state.coordinators.get(coordinatorId))
            .filter((coordinator) => coordinator !== undefined)
            .map(coordinatorMetadataOf),
          deletedCoordinators: [...delta.deletedCoordinators],
          coordinatorShards: [...delta.changedShards]
            .map((partition) => state.coordinatorShards.get(partition))
            .filter((shard) => shard !== undefined)
            .map(coordinatorShardOf),
        });
      });
    });
  }

  /** Ends every stream: this controller is no longer the one to follow. */
  endAll(): void {
    for (const end of [...this.watchers]) {
      end(
        new ControllerError('NOT_CONTROLLER', 'this controller stepped down; watch the active one'),
      );
    }
  }
}
