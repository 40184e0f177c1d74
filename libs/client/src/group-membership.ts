import { assert, backoffMs, type Logger, type SpoolError } from '@spool/common';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  TopicPartition,
} from '@spool/protocol';
import type { ConsumerConfig } from './config';
import { ClientErrorCode, coordinatorRetriableCodes, fromProtoError, toSpoolError } from './errors';
import type { GatewayConnection } from './gateway-connection';
import { isError, partitionKey, type MemberIdentity } from './offset-committer';

/**
 * A consumer's membership in a group under the server-side protocol of Kafka's KIP-848: the
 * member heartbeats its subscription and the partitions it owns; the coordinator answers with
 * the member's epoch, the heartbeat interval and, when it changed, the member's assignment.
 *
 * Reconciling an assignment (always in this order, one reconciliation at a time):
 * 1. partitions owned but no longer assigned are revoked: the handler stops fetching them,
 *    commits what was processed and tells the application; only then are they dropped from the
 *    owned set, and a heartbeat acknowledges it at once (not after a whole interval), since
 *    another member waits for them;
 * 2. partitions assigned but not owned are added: the handler positions them (committed offset
 *    or the reset policy), tells the application and starts fetching; another heartbeat at once
 *    reports them owned, so the coordinator can move the member to its target epoch.
 * An assignment arriving meanwhile is kept and reconciled next (the latest wins).
 *
 * Heartbeat errors (how each is handled):
 * 1. FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: the partitions may be someone else's already: they
 *    are lost (the application is told, nothing is committed) and the member rejoins at epoch 0
 *    right away (with a new member id after UNKNOWN_MEMBER_ID);
 * 2. NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and other retriable
 *    errors: heartbeat again after a growing backoff (the gateway finds the coordinator), keeping
 *    the partitions and consuming them meanwhile, also past sessionTimeoutMs (Kafka's consumer
 *    does the same): only the coordinator's answer (1.) says they are lost;
 * 3. anything else (UNRELEASED_INSTANCE_ID, INVALID_REQUEST, ...): the partitions are lost and
 *    the membership fails with the error, which the consumer reports (its `crash`).
 *
 * Leaving (`leave`): the loop stops, owned partitions are revoked as in 1. above (so processed
 * offsets are committed), and a last heartbeat says epoch -1, or -2 for a static member, whose
 * partitions the coordinator then keeps for it until its session times out.
 */

export enum MemberState {
  Unjoined = 'unjoined',
  Joining = 'joining',
  Stable = 'stable',
  Reconciling = 'reconciling',
  Leaving = 'leaving',
  Left = 'left',
  Failed = 'failed',
}

export interface MembershipHandler {
  /** Stop fetching, commit what was processed, tell the application; resolve once given up. */
  revokePartitions(partitions: readonly TopicPartition[]): Promise<void>;
  /**
   * Position the partitions, tell the application, start fetching. `isCurrent` turns false if
   * the membership lost its partitions meanwhile: then nothing may be started.
   */
  assignPartitions(partitions: readonly TopicPartition[], isCurrent: () => boolean): Promise<void>;
  /** Stop fetching every partition and tell the application they were lost; no commit. */
  losePartitions(partitions: readonly TopicPartition[]): Promise<void>;
  /** The membership failed for good. */
  fail(error: SpoolError): void;
}

export interface GroupSubscription {
  readonly topics: readonly string[];
  /** One regular expression (RE2 syntax on the coordinator), or '' for none. */
  readonly regex: string;
}

/** Epochs of the heartbeat request with a meaning of their own (KIP-848). */
export const joinEpoch = 0;
export const leaveEpoch = -1;
export const staticLeaveEpoch = -2;

/** Until the coordinator says, heartbeat this often: a guess that the first answer replaces. */
const heartbeatIntervalInitialMs = 3_000;

export class GroupMembership {
  private memberId = '';
  private memberEpoch = joinEpoch;
  private current = MemberState.Unjoined;
  private readonly owned = new Map<string, TopicPartition>();
  /** The latest assignment not reconciled yet. */
  private target: TopicPartition[] | undefined;
  private reconciling: Promise<void> | undefined;
  /** Bumps when the partitions are lost or the member leaves: a reconciliation then stops. */
  private generation = 0;
  private heartbeatIntervalMs = heartbeatIntervalInitialMs;
  private lastSuccessMs = Date.now();
  private failuresInARow = 0;
  /** The session ran out without an answered heartbeat and that was logged, once per silence. */
  private silenceReported = false;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wakeSleeper: (() => void) | undefined;
  /** A prompt heartbeat was asked for while one was in flight. */
  private heartbeatSoon = false;

  constructor(
    private readonly connection: GatewayConnection,
    private readonly config: ConsumerConfig,
    private readonly groupId: string,
    private readonly subscription: GroupSubscription,
    private readonly handler: MembershipHandler,
    private readonly logger: Logger,
  ) {}

  get state(): MemberState {
    return this.current;
  }

  identity(): MemberIdentity {
    return { memberId: this.memberId, memberEpoch: this.memberEpoch };
  }

  ownedPartitions(): TopicPartition[] {
    return [...this.owned.values()];
  }

  start(): void {
    this.transitionTo([MemberState.Unjoined], MemberState.Joining);
    this.lastSuccessMs = Date.now();
    this.loop = this.heartbeatLoop();
  }

  /** Revokes what is owned (committing it), then sends the leave heartbeat. */
  async leave(): Promise<void> {
    if (this.current === MemberState.Unjoined) {
      this.transitionTo([MemberState.Unjoined], MemberState.Left);
      return;
    }
    if (this.current === MemberState.Left || this.current === MemberState.Leaving) return;
    const failed = this.current === MemberState.Failed;
    this.transitionTo(
      [MemberState.Joining, MemberState.Stable, MemberState.Reconciling, MemberState.Failed],
      MemberState.Leaving,
    );
    this.stopping = true;
    this.generation += 1;
    this.wake();
    await this.loop;
    await this.reconciling;
    const owned = this.ownedPartitions();
    if (owned.length > 0) {
      try {
        await this.handler.revokePartitions(owned);
      } catch (error) {
        this.logger.warn({ err: error }, 'revoking partitions on leave failed');
      }
      this.owned.clear();
    }
    if (!failed && this.memberId !== '') await this.sendLeaveHeartbeat();
    this.transitionTo([MemberState.Leaving], MemberState.Left);
  }

  private async sendLeaveHeartbeat(): Promise<void> {
    const epoch = this.config.groupInstanceId === undefined ? leaveEpoch : staticLeaveEpoch;
    try {
      const response = await this.connection.callOnce(
        (client) => client.consumerGroupHeartbeat,
        { ...this.request(), memberEpoch: epoch, ownedPartitions: [] },
        this.config.requestTimeoutMs,
      );
      if (isError(response.error)) throw fromProtoError(response.error, this.subject());
      this.logger.info({ memberId: this.memberId, epoch }, 'left the group');
    } catch (error) {
      // The session timeout removes the member anyway; leaving early only spares the wait.
      this.logger.warn({ err: toSpoolError(error) }, 'the leave heartbeat failed');
    }
    this.memberEpoch = epoch;
  }

  private async heartbeatLoop(): Promise<void> {
    while (!this.stopping) {
      this.heartbeatSoon = false;
      const delayMs = await this.heartbeatOnce();
      if (this.stopping || this.current === MemberState.Failed) return;
      if (this.heartbeatSoon) continue;
      await this.sleepUnlessWoken(delayMs);
    }
  }

  /** One heartbeat and what follows from its answer; returns how long to wait for the next. */
  private async heartbeatOnce(): Promise<number> {
    const request = this.request();
    let response: ConsumerGroupHeartbeatResponse | undefined;
    let failure: SpoolError | undefined;
    try {
      response = await this.connection.callOnce(
        (client) => client.consumerGroupHeartbeat,
        request,
        Math.min(this.config.requestTimeoutMs, this.config.sessionTimeoutMs),
      );
      if (isError(response.error)) failure = fromProtoError(response.error, this.subject());
    } catch (error) {
      failure = toSpoolError(error);
    }
    if (this.stopping) {
      // A leave began while the heartbeat was in flight: only who the member is still matters,
      // so that the leave heartbeat names it.
      if (failure === undefined && response!.memberId !== '') {
        this.memberId = response!.memberId;
        this.memberEpoch = response!.memberEpoch;
      }
      return 0;
    }
    if (failure !== undefined) return this.onHeartbeatError(failure, request);
    this.onHeartbeatResponse(response!);
    return this.heartbeatIntervalMs;
  }

  private request(): ConsumerGroupHeartbeatRequest {
    return {
      groupId: this.groupId,
      memberId: this.memberId,
      memberEpoch: this.memberEpoch,
      instanceId: this.config.groupInstanceId ?? '',
      subscribedTopics: [...this.subscription.topics],
      subscribedRegex: this.subscription.regex,
      ownedPartitions: this.ownedPartitions().map(({ topic, partition }) => ({ topic, partition })),
      rebalanceTimeoutMs: this.config.rebalanceTimeoutMs,
      assignor: this.config.groupRemoteAssignor ?? '',
      // The gateway fills in the client id (the call's spool-client-id) and address.
      rackId: '',
      clientId: '',
      clientHost: '',
      memberType: 'consumer',
    };
  }

  private onHeartbeatResponse(response: ConsumerGroupHeartbeatResponse): void {
    this.failuresInARow = 0;
    this.lastSuccessMs = Date.now();
    this.silenceReported = false;
    if (response.memberId !== '') this.memberId = response.memberId;
    if (response.memberEpoch !== this.memberEpoch) {
      this.logger.debug(
        { memberId: this.memberId, from: this.memberEpoch, to: response.memberEpoch },
        'member epoch changed',
      );
    }
    this.memberEpoch = response.memberEpoch;
    if (response.heartbeatIntervalMs > 0) this.heartbeatIntervalMs = response.heartbeatIntervalMs;
    if (response.assignment !== undefined) {
      this.target = response.assignment.partitions.map(({ topic, partition }) => ({
        topic,
        partition,
      }));
      this.startReconciling();
    } else if (this.current === MemberState.Joining && this.reconciling === undefined) {
      this.transitionTo([MemberState.Joining], MemberState.Stable);
    }
  }

  private async onHeartbeatError(
    error: SpoolError,
    request: ConsumerGroupHeartbeatRequest,
  ): Promise<number> {
    if (
      error.code === ClientErrorCode.FencedMemberEpoch ||
      error.code === ClientErrorCode.UnknownMemberId
    ) {
      this.logger.warn(
        { code: error.code, memberId: request.memberId, memberEpoch: request.memberEpoch },
        'the member was fenced: its partitions are lost, rejoining',
      );
      await this.loseAndRejoin(error.code === ClientErrorCode.UnknownMemberId);
      return 0;
    }
    if (coordinatorRetriableCodes.has(error.code) || error.retriable) {
      this.failuresInARow += 1;
      // The coordinator is unreachable or busy, not saying the member is gone: the member keeps
      // its partitions and goes on consuming them while it retries, as Kafka's consumer does when
      // its session runs out without a heartbeat answered (it marks the coordinator unknown and
      // looks again). Whether the session really expired only the coordinator knows; if it did,
      // its next answer is UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH and the partitions are lost
      // then (above). Meanwhile another member may have been given them: records are delivered
      // at least once either way, and this member's commits carry its old epoch, which the
      // coordinator refuses. Dropping them on a timer here stopped every consumer of a group
      // whenever its coordinator's shard moved slowly (the fault suite: 33 s without deliveries).
      const silentMs = Date.now() - this.lastSuccessMs;
      if (
        silentMs >= this.config.sessionTimeoutMs &&
        this.memberEpoch !== joinEpoch &&
        !this.silenceReported
      ) {
        this.silenceReported = true;
        this.logger.warn(
          { code: error.code, silentMs },
          'no heartbeat answered within the session timeout; keeping the partitions while the ' +
            'coordinator is retried',
        );
      }
      const delayMs = backoffMs(this.failuresInARow, {
        backoffInitialMs: this.config.retryBackoffMs,
        backoffMaxMs: Math.min(this.config.retryBackoffMaxMs, this.heartbeatIntervalMs),
      });
      this.logger.info(
        { code: error.code, attempt: this.failuresInARow, delayMs, reason: error.message },
        'heartbeat failed, retrying',
      );
      return delayMs;
    }
    this.logger.error({ err: error }, 'the group membership failed');
    await this.loseAndRejoin(false);
    // A leave that began meanwhile owns the end of the membership.
    if (this.stopping) return 0;
    this.transitionTo(
      [MemberState.Joining, MemberState.Stable, MemberState.Reconciling],
      MemberState.Failed,
    );
    this.handler.fail(error);
    return 0;
  }

  /** The partitions may be someone else's: drop them uncommitted and join again at epoch 0. */
  private async loseAndRejoin(forgetMemberId: boolean): Promise<void> {
    this.generation += 1;
    this.target = undefined;
    await this.reconciling;
    const lost = this.ownedPartitions();
    this.owned.clear();
    this.memberEpoch = joinEpoch;
    if (forgetMemberId) this.memberId = '';
    try {
      await this.handler.losePartitions(lost);
    } catch (error) {
      this.logger.warn({ err: error }, 'the partitions-lost callback failed');
    }
    if (this.current === MemberState.Stable || this.current === MemberState.Reconciling) {
      this.transitionTo([MemberState.Stable, MemberState.Reconciling], MemberState.Joining);
    }
  }

  private startReconciling(): void {
    if (this.reconciling !== undefined) return;
    if (this.current !== MemberState.Reconciling) {
      this.transitionTo([MemberState.Joining, MemberState.Stable], MemberState.Reconciling);
    }
    const generation = this.generation;
    this.reconciling = this.reconcile(generation)
      .catch((error: unknown) => {
        // A handler failing (say OffsetFetch without end) leaves the member unable to consume
        // what it was given; failing loudly beats holding partitions nobody reads.
        const failure = toSpoolError(error, `group ${this.groupId}: reconciling the assignment`);
        this.logger.error({ err: failure }, 'reconciliation failed');
        if (this.current !== MemberState.Failed && !this.stopping) {
          this.transitionTo(
            [MemberState.Joining, MemberState.Stable, MemberState.Reconciling],
            MemberState.Failed,
          );
          this.stopping = true;
          this.wake();
          this.handler.fail(failure);
        }
      })
      .finally(() => {
        this.reconciling = undefined;
        if (this.current === MemberState.Reconciling && generation === this.generation) {
          this.transitionTo([MemberState.Reconciling], MemberState.Stable);
        }
      });
  }

  private async reconcile(generation: number): Promise<void> {
    const isCurrent = (): boolean => generation === this.generation;
    while (this.target !== undefined && isCurrent()) {
      const target = this.target;
      this.target = undefined;
      const targetKeys = new Set(
        target.map(({ topic, partition }) => partitionKey(topic, partition)),
      );
      const revoked = this.ownedPartitions().filter(
        ({ topic, partition }) => !targetKeys.has(partitionKey(topic, partition)),
      );
      const added = target.filter(
        ({ topic, partition }) => !this.owned.has(partitionKey(topic, partition)),
      );
      if (revoked.length > 0) {
        await this.handler.revokePartitions(revoked);
        if (!isCurrent()) return;
        for (const { topic, partition } of revoked)
          this.owned.delete(partitionKey(topic, partition));
        this.heartbeatNow();
      }
      if (added.length > 0) {
        await this.handler.assignPartitions(added, isCurrent);
        if (!isCurrent()) return;
        for (const tp of added) this.owned.set(partitionKey(tp.topic, tp.partition), tp);
        this.heartbeatNow();
      }
    }
  }

  /** Acknowledges a reconciliation step with a heartbeat now rather than after the interval. */
  private heartbeatNow(): void {
    this.heartbeatSoon = true;
    this.wake();
  }

  private wake(): void {
    this.wakeSleeper?.();
  }

  private sleepUnlessWoken(durationMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.wakeSleeper = undefined;
        resolve();
      };
      const timer = setTimeout(wake, durationMs);
      this.wakeSleeper = wake;
    });
  }

  private subject(): string {
    return `group ${this.groupId} heartbeat (member ${this.memberId || '(joining)'}, epoch ${this.memberEpoch})`;
  }

  private transitionTo(allowedFrom: readonly MemberState[], next: MemberState): void {
    assert(
      allowedFrom.includes(this.current),
      `group membership: no transition from ${this.current} to ${next}`,
    );
    this.logger.debug({ from: this.current, to: next }, 'membership state change');
    this.current = next;
  }
}
