/**
 * The controller while it leads: the command queue, broker lifecycles and the periodic
 * maintenance that resolves unfinished topic changes, fences silent brokers and runs automatic
 * elections. It exists only between
 * winning an election and losing it; a new leadership gets a new ActiveController built from a
 * fresh read of the store.
 */
import type { Logger } from '@spool/common';
import { AutoBalancer, type AutoBalancerSettings } from './auto-balancer';
import { ensureBootstrapUsers, type BootstrapScramUser } from './bootstrap-users';
import { BrokerLifecycle } from './broker-lifecycle';
import { CleanerStateReports } from './cleaner-state-reports';
import type { AnnouncedBroker, AnnouncementResult } from './controller-announcement';
import type { ClusterState } from './cluster-state';
import type { ControllerContext } from './controller-context';
import { ControllerEventQueue } from './controller-event-queue';
import { CoordinatorLifecycle } from './coordinator-lifecycle';
import type { ControllerMetrics } from './controller-metrics';
import type { MetadataWriter } from './metadata-writer';
import { runAutomaticElections } from './partition-commands';
import { completeReassignments } from './reassignment-commands';
import { ReplicaSizeReports } from './replica-size-reports';
import { resolvePendingTopicChanges } from './topic-changes';

export interface ActiveControllerSettings extends AutoBalancerSettings {
  readonly brokerSessionTimeoutMs: number;
  readonly defaultReplicationFactor: number;
  readonly defaultPartitionCount: number;
  readonly coordinatorSessionTimeoutMs: number;
  readonly offsetsTopicPartitionCount: number;
  /** How often sessions and offline partitions are checked. */
  readonly maintenanceIntervalMs: number;
  /** Kafka's auto.leader.rebalance.enable and leader.imbalance.check.interval.seconds. */
  readonly autoLeaderRebalanceEnable: boolean;
  readonly leaderImbalanceCheckIntervalMs: number;
  /** The auto-balancer (auto-balancer.ts), off by default. */
  readonly autoBalance: boolean;
  /** Users whose SCRAM credentials follow a configured password (bootstrap-users.ts). */
  readonly bootstrapScramUsers?: readonly BootstrapScramUser[];
}

export class ActiveController {
  readonly queue = new ControllerEventQueue();
  readonly brokers: BrokerLifecycle;
  readonly coordinators: CoordinatorLifecycle;
  /** The storage nodes' log cleaner reports (BrokerHeartbeat), for DescribeTopics. */
  readonly cleanerStates = new CleanerStateReports();
  /** The storage nodes' replica sizes (BrokerHeartbeat), for the balancer and the gauges. */
  readonly replicaSizes = new ReplicaSizeReports();
  readonly context: ControllerContext;
  /** Undefined unless --auto-balance. */
  readonly balancer: AutoBalancer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastPreferredElectionMs = Date.now();
  /** The election inputs (electionInputsKey) of the last scan that elected nothing. */
  private settledElectionInputs: string | undefined;
  /** The same key for the last scan that completed no reassignment. */
  private settledReassignmentInputs: string | undefined;
  /** Whether the bootstrap users are as configured, for this leadership. */
  private bootstrapUsersSettled: boolean;

  constructor(
    state: ClusterState,
    writer: MetadataWriter,
    logger: Logger,
    metrics: ControllerMetrics,
    private readonly settings: ActiveControllerSettings,
    /** Whether this registration's metadata stream is open on this controller (the publisher's). */
    private readonly isBrokerWatching: (brokerId: number, brokerEpoch: bigint) => boolean = () =>
      true,
    /** Tells the inherited brokers this controller leads now (controller-announcement.ts). */
    private readonly announce?: (
      brokers: readonly AnnouncedBroker[],
    ) => Promise<AnnouncementResult[]>,
  ) {
    const liveBrokerIds = (): Set<number> =>
      new Set([...state.brokers.keys()].filter((brokerId) => this.brokers.isLive(brokerId)));
    this.context = { state, writer, logger, metrics, settings, liveBrokerIds };
    this.brokers = new BrokerLifecycle(this.context);
    this.coordinators = new CoordinatorLifecycle(this.context);
    this.balancer = settings.autoBalance
      ? new AutoBalancer(this.context, this.replicaSizes, settings)
      : undefined;
    this.bootstrapUsersSettled = (settings.bootstrapScramUsers ?? []).length === 0;
  }

  start(): void {
    // A change the previous controller left half-written is resolved before anything else runs.
    this.queue
      .run(() => resolvePendingTopicChanges(this.context))
      .catch((error: unknown) => {
        this.context.logger.warn(
          { err: error },
          'resolving unfinished topic changes failed; retrying in maintenance',
        );
      });
    if (!this.bootstrapUsersSettled) {
      this.queue.run(() => this.ensureBootstrapUsers()).catch(() => {});
    }
    void this.announceTakeover();
    this.timer = setInterval(() => {
      // Maintenance waits behind client commands, and never queues up behind itself.
      if (this.queue.pending > 0) return;
      this.queue
        .run(() => this.maintain())
        .catch((error: unknown) => {
          this.context.logger.warn(
            { err: error },
            'controller maintenance failed; retrying next round',
          );
        });
    }, this.settings.maintenanceIntervalMs);
    this.timer.unref();
  }

  /**
   * Announces this leadership to the brokers it inherited; one that answers is alive and
   * reached, one whose address refuses the connection is gone and is fenced now, the rest are
   * left to the takeover grace (controller-announcement.ts says why).
   */
  private async announceTakeover(): Promise<void> {
    if (this.announce === undefined) return;
    const inherited = this.brokers.inheritedBrokers();
    if (inherited.length === 0) return;
    const results = await this.announce(inherited);
    const counts = { reached: 0, refused: 0, unanswered: 0 };
    for (const result of results) counts[result.outcome]++;
    this.context.logger.info(
      { ...counts, durationMs: Math.max(...results.map((result) => result.durationMs)) },
      'announced this controller to the brokers it inherited',
    );
    await this.queue
      .run(async () => {
        for (const result of results) {
          if (result.outcome === 'reached') {
            this.brokers.reachedAtTakeover(result.brokerId, result.brokerEpoch);
          } else if (
            result.outcome === 'refused' &&
            // Reached meanwhile (a heartbeat, its stream): alive, whatever its address said;
            // an advertised address this controller cannot connect to is not a death.
            this.brokers.unreachedSinceTakeoverNow(result.brokerId, this.isBrokerWatching)
          ) {
            await this.brokers.fenceDisconnected(
              result.brokerId,
              result.brokerEpoch,
              'its address refused a connection when this controller took over',
            );
          }
        }
      })
      .catch((error: unknown) => {
        // Stepped down meanwhile, or a write failed: the takeover grace still applies.
        this.context.logger.info({ err: error }, 'acting on the takeover announcement failed');
      });
  }

  /** Once per leadership; a failure is logged and retried by maintenance. */
  private async ensureBootstrapUsers(): Promise<void> {
    if (this.bootstrapUsersSettled) return;
    try {
      await ensureBootstrapUsers(this.context, this.settings.bootstrapScramUsers ?? []);
      this.bootstrapUsersSettled = true;
    } catch (error) {
      this.context.logger.warn(
        { err: error },
        'writing the bootstrap users failed; retrying next maintenance round',
      );
    }
  }

  private async maintain(): Promise<void> {
    await resolvePendingTopicChanges(this.context);
    await this.ensureBootstrapUsers();
    for (const brokerId of this.brokers.expiredBrokers()) await this.brokers.fence(brokerId);
    for (const brokerId of this.brokers.unreachedSinceTakeover(this.isBrokerWatching)) {
      await this.brokers.fence(
        brokerId,
        'it did not reach this controller within the takeover grace',
      );
    }
    const expiredCoordinators = this.coordinators.expiredCoordinators();
    if (expiredCoordinators.length > 0)
      await this.coordinators.remove(expiredCoordinators, 'session expired');
    const preferredDue =
      this.settings.autoLeaderRebalanceEnable &&
      Date.now() - this.lastPreferredElectionMs >= this.settings.leaderImbalanceCheckIntervalMs;
    if (preferredDue) this.lastPreferredElectionMs = Date.now();
    // Whether a partition needs a leader depends only on the metadata view (partition records,
    // topic configs: its revision) and on which brokers are live. A round where neither changed
    // since a scan that found nothing to elect skips the scan: at 20,000 partitions it was most of
    // an idle controller's CPU, ten times a second.
    const electionInputs = electionInputsKey(
      this.context.state.revision,
      this.context.liveBrokerIds(),
    );
    if (electionInputs !== this.settledReassignmentInputs) {
      // A move completes once its target is in the ISR; usually right after the leader's
      // AlterPartition, here when that attempt failed or this controller took over midway.
      const completed = await completeReassignments(this.context);
      this.settledReassignmentInputs = completed === 0 ? electionInputs : undefined;
    }
    if (this.balancer !== undefined) {
      await this.balancer.maybeBalance();
      this.context.metrics.balancerMovesInProgress.set(this.balancer.movesInProgress());
    }
    if (!preferredDue && electionInputs === this.settledElectionInputs) return;
    const elected = await runAutomaticElections(this.context, this.brokers, {
      preferred: preferredDue,
    });
    // After elections the view moves on (their writes), so the next round scans once more.
    this.settledElectionInputs = elected === 0 ? electionInputs : undefined;
  }

  stop(): void {
    clearInterval(this.timer);
    this.queue.close();
  }
}

/** What automatic elections depend on: the view's revision and the live brokers. */
function electionInputsKey(revision: bigint, liveBrokerIds: ReadonlySet<number>): string {
  return `${revision}/${[...liveBrokerIds].sort((a, b) => a - b).join(',')}`;
}
