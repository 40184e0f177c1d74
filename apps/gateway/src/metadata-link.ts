/**
 * The gateway's link to the controllers: one LeaderChannel that follows the active controller
 * (admin calls are forwarded through it) and a WatchMetadata stream kept open through it, resumed
 * from the last applied version after every reconnect, feeding the metadata cache every route is
 * read from. Callers that found the metadata stale (a leader said NOT_LEADER_OR_FOLLOWER) wait
 * here, bounded, for a newer version.
 */
import { LeaderChannel, StreamFollower, createGrpcClient, type Logger } from '@spool/common';
import {
  ClusterMetadataCache,
  ControllerServiceClient,
  type WatchMetadataResponse,
} from '@spool/protocol';

/** Attempts of one admin call over the controller addresses, NOT_CONTROLLER redirects included. */
const controllerCallAttemptsMax = 10;

export class MetadataLink {
  readonly metadata = new ClusterMetadataCache();
  readonly controller: LeaderChannel<ControllerServiceClient>;
  readonly firstSnapshotApplied: Promise<void>;
  private readonly follower: StreamFollower<ControllerServiceClient, WatchMetadataResponse>;

  constructor(controllerAddresses: readonly string[], logger: Logger) {
    this.controller = new LeaderChannel(
      controllerAddresses,
      (address) => createGrpcClient(ControllerServiceClient, address),
      {
        notLeaderCode: 'NOT_CONTROLLER',
        leaderDetail: 'activeController',
        attempts: controllerCallAttemptsMax,
      },
    );
    let firstSnapshot: () => void = () => {};
    this.firstSnapshotApplied = new Promise((resolve) => (firstSnapshot = resolve));
    this.follower = new StreamFollower({
      channel: this.controller,
      open: (client) => client.watchMetadata({ fromVersion: this.metadata.version }),
      onMessage: (message: WatchMetadataResponse) => {
        this.metadata.apply(message);
        if (message.snapshot) firstSnapshot();
      },
      logger,
    });
  }

  start(): void {
    void this.follower.start();
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

  stop(): void {
    this.follower.stop();
    this.controller.close();
  }
}
