/**
 * A process's link to the active controller, as every storage node, coordinator and gateway
 * keeps one: the channel all its controller calls go through (it follows NOT_CONTROLLER to the
 * active controller), and the controller's WatchMetadata stream, kept open through that channel,
 * feeding a ClusterMetadataCache. After every break the stream is reopened after a capped
 * backoff, on whichever controller is active by then, from the last version applied: a link
 * that missed nothing gets only what comes next, one that missed something gets a new snapshot.
 * The cap is short (`controllerStreamBackoffMaxMs`): during a controller failover the link asks
 * the standby again every quarter second, so it watches the new controller, and is pushed its
 * state, within a quarter second of the standby winning, rather than up to two seconds later.
 *
 * `firstSnapshotApplied` resolves once the cache holds a whole picture of the cluster, the point
 * from which a service may call itself ready. Callers that found the metadata stale (a leader
 * said NOT_LEADER_OR_FOLLOWER) wait here, bounded, for it to change.
 *
 * What a service does beyond this (a broker's registration and heartbeats, a coordinator's
 * shard ownership) stays in that service and uses `channel`.
 */
import {
  StreamFollower,
  type LeaderChannel,
  type Logger,
  type TransportSecurity,
} from '@spool/common';
import {
  ClusterMetadataCache,
  type ControllerServiceClient,
  type WatchMetadataResponse,
} from '@spool/protocol';
import { controllerChannel } from './controller-channel';

/** The longest pause between two attempts to open the metadata stream (see the header). */
export const controllerStreamBackoffMaxMs = 250;

export interface ClusterLinkOptions {
  readonly controllerAddresses: readonly string[];
  /**
   * Attempts of one controller call over the addresses, NOT_CONTROLLER redirects included; the
   * channel's default if unset.
   */
  readonly controllerCallAttempts?: number;
  /** The cache to keep up to date; a new one if unset. */
  readonly metadata?: ClusterMetadataCache;
  /**
   * A storage node's registration, sent with each watch so the controller fences the node as
   * soon as its stream breaks (WatchMetadataRequest.broker_id); undefined while unregistered
   * and for other services.
   */
  readonly watchingBroker?: () => { brokerId: number; brokerEpoch: bigint } | undefined;
  /**
   * A coordinator's incarnation, sent with each watch so the controller removes the coordinator
   * (moving its shards) as soon as its stream breaks (WatchMetadataRequest.coordinator_id).
   */
  readonly watchingCoordinator?: () => { coordinatorId: string; coordinatorIncarnationId: string };
  /** TLS to the controllers (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity;
  readonly logger: Logger;
}

export class ClusterLink {
  readonly metadata: ClusterMetadataCache;
  /** Every call to the active controller goes through this; stop() closes it. */
  readonly channel: LeaderChannel<ControllerServiceClient>;
  readonly firstSnapshotApplied: Promise<void>;
  private readonly follower: StreamFollower<ControllerServiceClient, WatchMetadataResponse>;

  constructor(options: ClusterLinkOptions) {
    this.metadata = options.metadata ?? new ClusterMetadataCache();
    this.channel = controllerChannel(options.controllerAddresses, {
      attempts: options.controllerCallAttempts,
      transportSecurity: options.transportSecurity,
    });
    let firstSnapshot: () => void = () => {};
    this.firstSnapshotApplied = new Promise((resolve) => (firstSnapshot = resolve));
    this.follower = new StreamFollower({
      channel: this.channel,
      open: (client) =>
        client.watchMetadata({
          fromVersion: this.metadata.version,
          ...options.watchingBroker?.(),
          ...options.watchingCoordinator?.(),
        }),
      onMessage: (message: WatchMetadataResponse) => {
        this.metadata.apply(message);
        if (message.snapshot) firstSnapshot();
      },
      logger: options.logger,
      backoffMaxMs: controllerStreamBackoffMaxMs,
    });
  }

  /** Starts following the metadata in the background; it never gives up until stop(). */
  start(): void {
    void this.follower.start();
  }

  /**
   * Settles once the follow loop has ended after stop(): from then on the link opens no stream
   * (at once if it never started).
   */
  stopped(): Promise<void> {
    return this.follower.finished();
  }

  /** Resolves true once `condition` holds, checked now and after every metadata change. */
  waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    if (timeoutMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (met: boolean): void => {
        clearTimeout(timer);
        unsubscribe();
        resolve(met);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      const unsubscribe = this.metadata.onChange(() => {
        if (condition()) finish(true);
      });
    });
  }

  /** Resolves true once the metadata is newer than `version`, false after `timeoutMs`. */
  waitForNewerVersion(version: bigint, timeoutMs: number): Promise<boolean> {
    return this.waitUntil(() => this.metadata.version > version, timeoutMs);
  }

  /**
   * A controller announced that it is active (BeginControllerEpoch): calls go to it from now on
   * and the metadata stream moves there at once. Returns whether the link was elsewhere.
   */
  controllerAnnounced(address: string): boolean {
    const moved = this.channel.leaderAnnounced(address);
    this.follower.moveToLeader();
    return moved;
  }

  /** Cancels the metadata stream and closes the channel. */
  stop(): void {
    this.follower.stop();
    this.channel.close();
  }
}
