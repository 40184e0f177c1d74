/**
 * This node's control-plane link to the active controller: it registers (a new incarnation id
 * per process, so a restart is told from an impostor), heartbeats, and registers again when the
 * controller says it was fenced. Once registered it follows WatchMetadata into the node's
 * metadata cache through the ClusterLink every service keeps, whose channel all these calls go
 * through too (it follows the active controller wherever it moves). The watch names this
 * node's registration, so the controller fences the node the moment the stream breaks (the
 * process died) rather than after a silent session timeout.
 */
import { randomUUID } from 'node:crypto';
import { ClusterLink } from '@spool/cluster-link';
import {
  backoffMs,
  callOnce,
  sleep,
  SpoolError,
  type LeaderChannel,
  type Logger,
  type TransportSecurity,
} from '@spool/common';
import type {
  AlterPartitionRequest,
  AlterPartitionResponse,
  ClusterMetadataCache,
  ConfigEntry,
  ControllerServiceClient,
  Endpoint,
  PartitionCleanerState,
  PartitionReplicaSize,
} from '@spool/protocol';

export interface ControllerLinkOptions {
  /** TLS to the controllers (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity;
  readonly brokerId: number;
  readonly rack: string;
  readonly endpoints: readonly Endpoint[];
  readonly controllerAddresses: readonly string[];
  readonly heartbeatIntervalMs: number;
  /** Whether the data directory is offline now (log-dir-health.ts); every heartbeat says so. */
  readonly logDirOffline?: () => boolean;
  /** The log cleaner's view of each compacted log here; every heartbeat carries it. */
  readonly cleanerStates?: () => PartitionCleanerState[];
  /** Each partition replica's log size here; every heartbeat carries it. */
  readonly replicaSizes?: () => PartitionReplicaSize[];
  /** Every heartbeat answer's dynamic broker configs (the values in effect for this node). */
  readonly onDynamicConfigs?: (configs: readonly ConfigEntry[]) => void;
}

/** Calls to the controller give up after this, so a dead controller cannot hang a step. */
const controllerCallDeadlineMs = 5_000;
/** One round of controlled shutdown: a few attempts over the controllers, redirects included. */
const controlledShutdownAttempts = 3;
/**
 * How long controlled shutdown keeps asking, round after round, before the node stops anyway
 * with its leaderships (then moved when the controller fences it). A rolling upgrade restarts
 * the controllers while storage nodes stop: a node that gave up after one round during a
 * controller failover left its partitions leaderless for the fence's detection, seconds of
 * produce outage, where waiting a second for the new controller costs nothing. Kafka's broker
 * likewise retries (controlled.shutdown.max.retries) and a KRaft broker waits for the
 * controller to confirm. Well inside the chart's termination grace (120 s).
 */
export const controlledShutdownTimeoutMs = 10_000;
/** The pause between two rounds. */
const controlledShutdownRetryMs = 250;
/**
 * Registration retries over the controllers for as long as it takes (Kafka's
 * BrokerLifecycleManager does too): a node that cannot register serves nothing, and stop()
 * ends the wait.
 */
const registrationAttemptsMax = 1_000_000;
/**
 * Attempts of one controller call over the controllers, NOT_CONTROLLER redirects included: a
 * round over three controllers and a second one after a backoff. A caller that must go on
 * retries on its own terms (IsrManager: until its change is moot, within its bounds).
 */
const controllerCallAttemptsMax = 6;

export class ControllerLink {
  readonly incarnationId = randomUUID();
  private brokerEpochValue = -1n;
  private readonly cluster: ClusterLink;
  private readonly channel: LeaderChannel<ControllerServiceClient>;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly options: ControllerLinkOptions,
    metadata: ClusterMetadataCache,
    private readonly logger: Logger,
  ) {
    this.cluster = new ClusterLink({
      controllerAddresses: options.controllerAddresses,
      controllerCallAttempts: controllerCallAttemptsMax,
      transportSecurity: options.transportSecurity,
      metadata,
      logger,
      // The link starts watching after registering, so the epoch is this process's.
      watchingBroker: () =>
        this.brokerEpochValue > 0n
          ? { brokerId: options.brokerId, brokerEpoch: this.brokerEpochValue }
          : undefined,
    });
    this.channel = this.cluster.channel;
  }

  get firstSnapshotApplied(): Promise<void> {
    return this.cluster.firstSnapshotApplied;
  }

  get brokerEpoch(): bigint {
    return this.brokerEpochValue;
  }

  /** Registers (retrying until a controller answers), then heartbeats and follows metadata. */
  async start(): Promise<void> {
    await this.register();
    if (this.options.logDirOffline?.() === true) this.heartbeatNow();
    this.heartbeatTimer = setInterval(
      () => void this.heartbeat(),
      this.options.heartbeatIntervalMs,
    );
    this.heartbeatTimer.unref();
    this.cluster.start();
  }

  /**
   * Registers, retrying until it works. DUPLICATE_BROKER_REGISTRATION is retried too: after a
   * crash the controller still holds this id's previous session until it times out, and the
   * restarted process must wait that out rather than give up.
   */
  private async register(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.registerOnce();
        return;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code !== 'DUPLICATE_BROKER_REGISTRATION' || this.stopped) throw error;
        if (attempt === 1)
          this.logger.warn({ err: error }, 'the controller still holds this broker id; retrying');
        await sleep(Math.min(1_000, backoffMs(attempt)));
      }
    }
  }

  private async registerOnce(): Promise<void> {
    const response = await this.channel.call(
      (client) =>
        callOnce(
          client,
          client.registerBroker,
          {
            brokerId: this.options.brokerId,
            rack: this.options.rack,
            endpoints: [...this.options.endpoints],
            incarnationId: this.incarnationId,
          },
          { deadlineMs: controllerCallDeadlineMs },
        ),
      { attempts: registrationAttemptsMax },
    );
    this.brokerEpochValue = response.brokerEpoch;
    this.logger.info(
      { brokerEpoch: response.brokerEpoch.toString() },
      'registered with the controller',
    );
  }

  private heartbeating = false;
  /** A heartbeat was asked for while one was in flight: send another when it ends. */
  private heartbeatAgain = false;

  /**
   * Heartbeats now rather than at the next interval: the data directory went offline or came
   * back, and the controller should move leaderships (or may elect this node again) at once.
   */
  heartbeatNow(): void {
    // Before registering there is no epoch to send; the first heartbeat carries the state.
    if (this.brokerEpochValue <= 0n || this.stopped) return;
    if (this.heartbeating) this.heartbeatAgain = true;
    else void this.heartbeat();
  }

  private async heartbeat(): Promise<void> {
    if (this.heartbeating || this.stopped) return;
    this.heartbeating = true;
    this.heartbeatAgain = false;
    const logDirOffline = this.options.logDirOffline?.() ?? false;
    try {
      const client = this.channel.client();
      const response = await callOnce(
        client,
        client.brokerHeartbeat,
        {
          brokerId: this.options.brokerId,
          brokerEpoch: this.brokerEpochValue,
          logDirOffline,
          cleanerStates: this.options.cleanerStates?.() ?? [],
          replicaSizes: this.options.replicaSizes?.() ?? [],
        },
        { deadlineMs: this.options.heartbeatIntervalMs },
      );
      if (!response.fenced) this.options.onDynamicConfigs?.(response.dynamicConfigs);
      if (response.fenced) {
        this.logger.warn('the controller fenced this broker; registering again');
        await this.register();
        // A new registration starts with its directory online: say otherwise at once.
        if (this.options.logDirOffline?.() === true) this.heartbeatAgain = true;
      }
    } catch (error) {
      this.channel.follow(error);
      this.logger.debug({ err: error }, 'heartbeat failed');
    } finally {
      this.heartbeating = false;
    }
    if (this.heartbeatAgain) void this.heartbeat();
  }

  /**
   * A leader's ISR change, through the active controller (used by replication): one request,
   * over at most `controllerCallAttemptsMax` attempts; IsrManager decides whether to send it again.
   */
  alterPartition(
    request: Omit<AlterPartitionRequest, 'brokerId' | 'brokerEpoch'>,
  ): Promise<AlterPartitionResponse> {
    return this.channel.call((client) =>
      callOnce(
        client,
        client.alterPartition,
        { ...request, brokerId: this.options.brokerId, brokerEpoch: this.brokerEpochValue },
        { deadlineMs: controllerCallDeadlineMs },
      ),
    );
  }

  /** The newest controller epoch announced to this node (BeginControllerEpoch). */
  private controllerEpochFollowed = -1n;

  /**
   * A controller announced that it has become active (BeginControllerEpoch): controller calls and
   * the metadata stream move to it now, and a heartbeat follows, instead of this node finding
   * out only when its pings to the previous controller go unanswered. An announcement older than
   * one already followed is ignored (a controller deposed since). Returns whether it was followed.
   */
  controllerAnnounced(address: string, controllerEpoch: bigint): boolean {
    if (this.stopped || controllerEpoch < this.controllerEpochFollowed) return false;
    this.controllerEpochFollowed = controllerEpoch;
    if (this.cluster.controllerAnnounced(address)) {
      this.logger.info(
        { controller: address, controllerEpoch: controllerEpoch.toString() },
        'a new active controller announced itself; following it',
      );
    }
    this.heartbeatNow();
    return true;
  }

  /** Asks the controller to move this node's leaderships elsewhere before it stops. */
  async controlledShutdown(): Promise<number> {
    // Never registered: it leads nothing and there is nothing to hand over.
    if (this.brokerEpochValue <= 0n) return 0;
    // Bounded: a node must stop even when no controller answers.
    const deadlineMs = Date.now() + controlledShutdownTimeoutMs;
    for (let round = 1; ; round++) {
      try {
        const response = await this.channel.call(
          (client) =>
            callOnce(
              client,
              client.controlledShutdown,
              { brokerId: this.options.brokerId, brokerEpoch: this.brokerEpochValue },
              {
                deadlineMs: Math.max(
                  100,
                  Math.min(controllerCallDeadlineMs, deadlineMs - Date.now()),
                ),
              },
            ),
          { attempts: controlledShutdownAttempts },
        );
        return response.remainingPartitions.length;
      } catch (error) {
        const retriable = error instanceof SpoolError && error.retriable;
        if (!retriable || Date.now() + controlledShutdownRetryMs >= deadlineMs) throw error;
        if (round === 1) {
          this.logger.warn(
            { err: error, retryForMs: deadlineMs - Date.now() },
            'controlled shutdown: no active controller answered; asking again',
          );
        }
        await sleep(controlledShutdownRetryMs);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.heartbeatTimer);
    this.cluster.stop();
  }
}
