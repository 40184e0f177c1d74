/**
 * WatchMetadata: every storage node, coordinator and gateway follows the cluster through one
 * server stream from the active controller: a full snapshot, then a delta per applied store
 * revision, each with its metadata version (the revision). Nobody polls. A watcher that asks to
 * resume from the version the controller is at gets no snapshot; any other gets a fresh one.
 *
 * Deltas follow the size of the change, not of the cluster (what a failover at 20,000
 * partitions needs: thousands of elections written in chunks, each chunk one revision):
 *   1. A topic whose own record changed in the revision (created, configs, partition count)
 *      goes whole in `topics`.
 *   2. A topic that changed only through partition records (elections, ISR changes) sends just
 *      those partitions, in `changedPartitions`: the ones whose record was written at this
 *      revision (their modRevision).
 *   3. A topic in the delta for which neither holds (a visible partition was deleted) goes
 *      whole, as in 1: correct whatever changed. (Readers lose partitions only through a topic
 *      record change, cluster-state.ts, so case 2 never hides a deletion.)
 * Each delta message is built once and written to every watcher, not once per watcher.
 *
 * A storage node's watch names its registration: serve() resolves when the node's stream goes
 * away (cancelled or failed, as a killed process's does), and the caller may fence the node
 * then (controller-rpc.ts); isWatching() says whether the node has watched again since. A
 * coordinator's watch names its incarnation the same way, and the caller may remove it then
 * (isCoordinatorWatching()).
 *
 * Bounds: a watcher that does not read its stream is cut off once its unsent messages pass
 * `pendingBytesMax` (it reconnects and gets a snapshot) instead of growing this process's memory.
 * When the controller stops being active every stream ends with NOT_CONTROLLER.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import { SpoolError, type Logger } from '@spool/common';
import type {
  PartitionMetadata,
  TopicMetadata,
  WatchMetadataRequest,
  WatchMetadataResponse,
} from '@spool/protocol';
import type { ClusterState, MetadataDelta, TopicState } from './cluster-state';
import {
  brokerMetadataOf,
  coordinatorMetadataOf,
  coordinatorShardOf,
  partitionMetadataOf,
  sortedBrokers,
  sortedCoordinatorShards,
  sortedCoordinators,
  topicMetadataOf,
} from './metadata-conversions';
import { userCredentialsOf } from './user-credentials';

/** Unsent bytes one watcher may hold before it is cut off. */
export const pendingBytesMax = 64 * 1024 * 1024;

type Send = (message: WatchMetadataResponse) => void;

/** A storage node's own watch: its registration (WatchMetadataRequest.broker_id). */
export interface BrokerWatch {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
}

/** The registration a watch names, or undefined for any other watcher. */
export function brokerWatchOf(request: WatchMetadataRequest): BrokerWatch | undefined {
  const { brokerId, brokerEpoch } = request;
  if (brokerId === undefined || brokerEpoch === undefined || brokerEpoch <= 0n) return undefined;
  return { brokerId, brokerEpoch };
}

export interface CoordinatorWatch {
  readonly coordinatorId: string;
  readonly incarnationId: string;
}

/** The coordinator incarnation a watch names, or undefined for any other watcher. */
export function coordinatorWatchOf(request: WatchMetadataRequest): CoordinatorWatch | undefined {
  const { coordinatorId, coordinatorIncarnationId } = request;
  if (
    coordinatorId === undefined ||
    coordinatorId === '' ||
    coordinatorIncarnationId === undefined ||
    coordinatorIncarnationId === ''
  )
    return undefined;
  return { coordinatorId, incarnationId: coordinatorIncarnationId };
}

/** The process a watch names (a storage node's registration, a coordinator's incarnation). */
function watcherKeyOf(request: WatchMetadataRequest): string | undefined {
  const broker = brokerWatchOf(request);
  if (broker !== undefined) return brokerWatchKey(broker);
  const coordinator = coordinatorWatchOf(request);
  return coordinator === undefined ? undefined : coordinatorWatchKey(coordinator);
}

export class MetadataPublisher {
  private readonly watchers = new Set<(error: Error) => void>();
  /**
   * Open watches per named process: `broker:${brokerId}:${brokerEpoch}` or
   * `coordinator:${coordinatorId}:${incarnationId}` → count.
   */
  private readonly processWatches = new Map<string, number>();
  /** Per cluster state (one per leadership): the watchers its deltas go to. */
  private readonly fanOuts = new WeakMap<ClusterState, FanOut>();

  constructor(private readonly logger: Logger) {}

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** Whether a watch of this registration is open (the node came back after a break). */
  isWatching(watch: BrokerWatch): boolean {
    return (this.processWatches.get(brokerWatchKey(watch)) ?? 0) > 0;
  }

  /** Whether a watch of this coordinator incarnation is open (it came back after a break). */
  isCoordinatorWatching(watch: CoordinatorWatch): boolean {
    return (this.processWatches.get(coordinatorWatchKey(watch)) ?? 0) > 0;
  }

  /** Streams until the client cancels or the controller steps down (the promise rejects). */
  serve(
    call: ServerWritableStream<WatchMetadataRequest, WatchMetadataResponse>,
    state: ClusterState,
    controllerAddress: string,
  ): Promise<void> {
    const processKey = watcherKeyOf(call.request);
    if (processKey !== undefined) {
      this.processWatches.set(processKey, (this.processWatches.get(processKey) ?? 0) + 1);
    }
    return new Promise<void>((resolve, reject) => {
      let unsubscribe = (): void => {};
      let finished = false;
      const finish = (error?: Error): void => {
        if (finished) return;
        finished = true;
        unsubscribe();
        this.watchers.delete(endWithError);
        if (processKey !== undefined) {
          const count = (this.processWatches.get(processKey) ?? 1) - 1;
          if (count > 0) this.processWatches.set(processKey, count);
          else this.processWatches.delete(processKey);
        }
        if (error === undefined) resolve();
        else reject(error);
      };
      const endWithError = (error: Error): void => finish(error);
      this.watchers.add(endWithError);
      call.on('cancelled', () => finish());
      call.on('error', () => finish());

      const send: Send = (message) => {
        if (call.writableLength > pendingBytesMax) {
          this.logger.warn({ peer: call.getPeer() }, 'metadata watcher too slow; cutting it off');
          finish(
            new SpoolError('UNAVAILABLE', 'metadata watcher fell too far behind; watch again'),
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
          changedPartitions: [],
          aclSet: { acls: [...state.acls.list] },
          security: {
            users: [...state.users.values()].map(({ record }) => userCredentialsOf(record)),
            deletedUsers: [],
          },
        });
      }
      unsubscribe = this.fanOutOf(state, controllerAddress).add(send);
    });
  }

  /** Ends every stream: this controller is no longer the one to follow. */
  endAll(): void {
    for (const end of [...this.watchers]) {
      end(new SpoolError('NOT_CONTROLLER', 'this controller stepped down; watch the active one'));
    }
  }

  private fanOutOf(state: ClusterState, controllerAddress: string): FanOut {
    let fanOut = this.fanOuts.get(state);
    if (fanOut === undefined) {
      fanOut = new FanOut(state, controllerAddress);
      this.fanOuts.set(state, fanOut);
    }
    return fanOut;
  }
}

/** One subscription to a cluster state's deltas; each delta is encoded once for all watchers. */
class FanOut {
  private readonly sends = new Set<Send>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly state: ClusterState,
    private readonly controllerAddress: string,
  ) {}

  add(send: Send): () => void {
    this.sends.add(send);
    this.unsubscribe ??= this.state.onDelta((delta) => this.publish(delta));
    return () => {
      this.sends.delete(send);
      if (this.sends.size > 0) return;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    };
  }

  private publish(delta: MetadataDelta): void {
    const message = deltaMessage(this.state, delta, this.controllerAddress);
    for (const send of [...this.sends]) send(message);
  }
}

/** The delta message of one applied revision, by the cases in the header. */
export function deltaMessage(
  state: ClusterState,
  delta: MetadataDelta,
  controllerAddress: string,
): WatchMetadataResponse {
  const topics: TopicMetadata[] = [];
  const changedPartitions: PartitionMetadata[] = [];
  for (const name of delta.changedTopics) {
    const topic = state.topics.get(name);
    if (topic === undefined) continue;
    const partitions =
      topic.modRevision === delta.revision ? [] : partitionsWrittenAt(topic, delta.revision);
    if (partitions.length === 0) topics.push(topicMetadataOf(topic));
    else changedPartitions.push(...partitions);
  }
  return {
    metadataVersion: delta.revision,
    snapshot: false,
    brokers: [...delta.changedBrokers]
      .map((brokerId) => state.brokers.get(brokerId))
      .filter((broker) => broker !== undefined)
      .map(brokerMetadataOf),
    topics,
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
    changedPartitions,
    ...(delta.aclsChanged ? { aclSet: { acls: [...state.acls.list] } } : {}),
    ...(delta.changedUsers.size === 0 && delta.deletedUsers.size === 0
      ? {}
      : {
          security: {
            users: [...delta.changedUsers]
              .map((user) => state.users.get(user))
              .filter((user) => user !== undefined)
              .map(({ record }) => userCredentialsOf(record)),
            deletedUsers: [...delta.deletedUsers],
          },
        }),
  };
}

/** Case 2: the topic's partitions whose record this revision wrote, in partition order. */
function partitionsWrittenAt(topic: TopicState, revision: bigint): PartitionMetadata[] {
  const written: PartitionMetadata[] = [];
  for (const partition of topic.partitions.values()) {
    if (partition.modRevision === revision) written.push(partitionMetadataOf(partition));
  }
  return written.sort((left, right) => left.partition - right.partition);
}

function brokerWatchKey(watch: BrokerWatch): string {
  return `broker:${watch.brokerId}:${watch.brokerEpoch}`;
}

function coordinatorWatchKey(watch: CoordinatorWatch): string {
  return `coordinator:${watch.coordinatorId}:${watch.incarnationId}`;
}
