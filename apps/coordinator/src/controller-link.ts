/**
 * The coordinator's link to the active controller: a CoordinatorHeartbeat loop that registers
 * this process (its id, endpoints and a new incarnation per start) and learns which
 * __consumer_offsets shards it owns, on top of the ClusterLink every service keeps (its channel
 * follows NOT_CONTROLLER to the active controller, and its WatchMetadata stream feeds the
 * metadata cache: topics for assignments, partition leaders for reads and writes, other
 * coordinators' shards).
 *
 * A coordinator that cannot reach any controller for a whole session must assume the controller
 * already gave its shards to others, so it reports an empty ownership then and stops serving:
 * two coordinators never knowingly serve one group.
 */
import { randomUUID } from 'node:crypto';
import { ClusterLink } from '@spool/cluster-link';
import {
  callOnce,
  SpoolError,
  type LeaderChannel,
  type Logger,
  type TransportSecurity,
} from '@spool/common';
import type {
  ClusterMetadataCache,
  ControllerServiceClient,
  CoordinatorShard,
  Endpoint,
  TopicMetadata,
} from '@spool/protocol';
import { controllerProducerIdBlocks } from './controller-producer-id-blocks';
import type { ProducerIdBlock } from './producer-id-manager';

/** A controller call gives up after this, so a dead controller cannot hang a step. */
const controllerCallDeadlineMs = 5_000;
/** Attempts of one call over the controller addresses, NOT_CONTROLLER redirects included. */
const controllerCallAttemptsMax = 10;
/** Used until the controller's first answer says how often to heartbeat. */
const heartbeatIntervalMsInitial = 500;

export interface ControllerLinkOptions {
  /** TLS to the controllers (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity;
  readonly coordinatorId: string;
  readonly endpoints: readonly Endpoint[];
  readonly controllerAddresses: readonly string[];
  /** With no successful heartbeat for this long, every shard is given up. */
  readonly sessionTimeoutMs: number;
  /** Called with the shards this coordinator owns after every heartbeat (or loss of contact). */
  readonly onShards: (shards: readonly CoordinatorShard[]) => void;
}

export class ControllerLink {
  readonly incarnationId = randomUUID();
  /** AllocateProducerIds on the active controller, for this coordinator's ProducerIdManager. */
  readonly allocateProducerIds: () => Promise<ProducerIdBlock>;
  private readonly cluster: ClusterLink;
  private readonly channel: LeaderChannel<ControllerServiceClient>;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatIntervalMs = heartbeatIntervalMsInitial;
  private lastHeartbeatOkMs = Date.now();
  private stopped = false;

  constructor(
    private readonly options: ControllerLinkOptions,
    private readonly logger: Logger,
  ) {
    this.cluster = new ClusterLink({
      controllerAddresses: options.controllerAddresses,
      controllerCallAttempts: controllerCallAttemptsMax,
      transportSecurity: options.transportSecurity,
      logger,
      // The controller removes this incarnation as soon as its watch breaks (the process died),
      // not a session timeout later: the shards move, and gateways learn it from their watch.
      watchingCoordinator: () => ({
        coordinatorId: options.coordinatorId,
        coordinatorIncarnationId: this.incarnationId,
      }),
    });
    this.channel = this.cluster.channel;
    this.allocateProducerIds = controllerProducerIdBlocks(this.channel, options.coordinatorId);
  }

  get metadata(): ClusterMetadataCache {
    return this.cluster.metadata;
  }

  get firstSnapshotApplied(): Promise<void> {
    return this.cluster.firstSnapshotApplied;
  }

  /** Resolves true once `condition` holds, checked now and after every metadata change. */
  waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    return this.cluster.waitUntil(condition, timeoutMs);
  }

  start(): void {
    this.cluster.start();
    this.scheduleHeartbeat(0);
  }

  private scheduleHeartbeat(delayMs: number): void {
    if (this.stopped) return;
    this.heartbeatTimer = setTimeout(() => void this.heartbeat(), delayMs);
  }

  private async heartbeat(): Promise<void> {
    try {
      const client = this.channel.client();
      const response = await callOnce(
        client,
        client.coordinatorHeartbeat,
        {
          coordinatorId: this.options.coordinatorId,
          endpoints: [...this.options.endpoints],
          incarnationId: this.incarnationId,
          shuttingDown: false,
        },
        { deadlineMs: Math.min(controllerCallDeadlineMs, this.options.sessionTimeoutMs) },
      );
      if (this.stopped) return;
      if (response.error !== undefined)
        throw new SpoolError('COORDINATOR_NOT_AVAILABLE', response.error.message);
      this.lastHeartbeatOkMs = Date.now();
      if (response.heartbeatIntervalMs > 0) this.heartbeatIntervalMs = response.heartbeatIntervalMs;
      this.options.onShards(response.shards);
    } catch (error) {
      this.channel.follow(error);
      this.logger.debug({ err: error }, 'coordinator heartbeat failed');
      if (Date.now() - this.lastHeartbeatOkMs > this.options.sessionTimeoutMs) {
        this.logger.warn(
          { sessionTimeoutMs: this.options.sessionTimeoutMs },
          'no controller reached for a whole session; giving up every shard',
        );
        this.options.onShards([]);
      }
    } finally {
      this.scheduleHeartbeat(this.heartbeatIntervalMs);
    }
  }

  /** Creates __consumer_offsets if it does not exist yet; answers its metadata. */
  async ensureOffsetsTopic(): Promise<TopicMetadata> {
    const response = await this.channel.call((client) =>
      callOnce(client, client.ensureOffsetsTopic, {}, { deadlineMs: controllerCallDeadlineMs }),
    );
    if (response.error !== undefined || response.topic === undefined) {
      throw new SpoolError(
        'COORDINATOR_NOT_AVAILABLE',
        `the controller could not create __consumer_offsets: ${response.error?.message ?? 'no topic'}`,
      );
    }
    return response.topic;
  }

  /**
   * Tells the controller this coordinator stops, so its shards move at once instead of after
   * the session timeout. Bounded: the process stops even when no controller answers.
   */
  async shutDown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.heartbeatTimer);
    try {
      await this.channel.call(
        (client) =>
          callOnce(
            client,
            client.coordinatorHeartbeat,
            {
              coordinatorId: this.options.coordinatorId,
              endpoints: [...this.options.endpoints],
              incarnationId: this.incarnationId,
              shuttingDown: true,
            },
            { deadlineMs: 2_000 },
          ),
        { attempts: 3 },
      );
    } catch (error) {
      this.logger.warn({ err: error }, 'could not hand the shards off before stopping');
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.heartbeatTimer);
    this.cluster.stop();
  }
}
