/**
 * One partition replica hosted by this storage node (Kafka's `Partition`): its log, its role
 * (leader or follower) at a leader epoch, the ISR as the controller last recorded it, and the
 * high watermark (HW): the offset below which every ISR member has the records, the only ones
 * consumers may read and the point an acks=all produce waits for.
 *
 * The leader keeps each follower's log end offset from its fetches and advances the HW to the
 * smallest log end offset in the ISR. Followers learn the HW from the leader's fetch responses.
 *
 * Interleaving: every method is synchronous except the waits, so a state change is never seen
 * half done. Waiters (long-poll fetches, acks=all produces) are woken after each append or HW
 * change and re-check their condition; each wait is bounded by its own timeout.
 */
import { SpoolError } from '@spool/common';
import {
  ProducerStateLog,
  type Log,
  type LogDirGuard,
  type ProducerStateRebuildReport,
  type ProducerStateSettings,
} from '@spool/segment-store';

export enum ReplicaRole {
  Leader = 'leader',
  Follower = 'follower',
}

export interface PartitionAssignment {
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

/**
 * A follower's fetch session as the leader sees it (fetch-session.ts): while open, each of its
 * fetches fetches every partition it holds again, at the position the follower last sent.
 */
export interface FetchSessionClock {
  readonly open: boolean;
  /** When the session's fetch before the latest one arrived (0 if there was none). */
  readonly previousFetchTimeMs: number;
  /** When the session last fetched: `nowMs` while one of its fetches waits at the leader. */
  fetchTimeMs(nowMs: number): number;
}

export interface FollowerState {
  logEndOffset: bigint;
  /** The last time the follower was known to have everything the leader had (Kafka's rule). */
  lastCaughtUpTimeMs: number;
  lastFetchTimeMs: number;
  /** The leader's log end offset when the follower last fetched. */
  lastFetchLeaderLogEndOffset: bigint;
  /** The session holding this partition since its last read fetch, if any. */
  fetchSession: FetchSessionClock | undefined;
}

export class PartitionReplica {
  role: ReplicaRole;
  assignment: PartitionAssignment;
  readonly followers = new Map<number, FollowerState>();
  private readonly waiters = new Set<() => void>();
  /** Counts appends, HW moves and role changes, so a long poll can tell whether anything happened. */
  changeCount = 0;
  /**
   * Replicas this leader asked the controller to add to the ISR (AlterPartition, a
   * compare-and-set at `partitionEpoch`) without having seen the outcome. The controller may
   * have committed the change while its answer was lost (its lease ran out after the write, the
   * call timed out and is retried elsewhere), and then any of them may be elected: so until a
   * newer partition epoch or a refusal shows otherwise, they count for the HW as members
   * (Kafka's maximal ISR, KIP-497). Undefined when no expansion is pending.
   */
  private pendingIsrExpansion: { partitionEpoch: number; replicas: Set<number> } | undefined;
  /**
   * The log with its idempotent producers: appends and truncations go through it, never
   * straight to `log`, so the producer state always matches the log.
   */
  readonly producerState: ProducerStateLog;
  /** How the producer state was rebuilt when this replica was hosted. */
  readonly producerStateRebuild: ProducerStateRebuildReport;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly log: Log,
    readonly localBrokerId: number,
    assignment: PartitionAssignment,
    producerStateSettings?: ProducerStateSettings,
    logDir?: LogDirGuard,
  ) {
    this.producerState = new ProducerStateLog(
      log,
      `${topic}-${partition}`,
      producerStateSettings,
      logDir,
    );
    this.producerStateRebuild = this.producerState.rebuild();
    this.assignment = assignment;
    this.role = assignment.leaderId === localBrokerId ? ReplicaRole.Leader : ReplicaRole.Follower;
    if (this.role === ReplicaRole.Leader) {
      this.resetFollowers(Date.now());
      // The checkpoint is as old as the last checkpoint round (a kill -9 loses up to one): a
      // leader whose ISR is itself alone has no follower fetch to raise it, so a retried
      // duplicate's acks=all wait would sleep until its timeout. Compute it now, as
      // applyAssignment does for a leadership that arrives later.
      this.maybeAdvanceHighWatermark();
    }
  }

  get name(): string {
    return `${this.topic}-${this.partition}`;
  }

  /** Kept by the log (within its bounds, and durable at each checkpoint round). */
  get highWatermark(): bigint {
    return this.log.highWatermark;
  }

  get isLeader(): boolean {
    return this.role === ReplicaRole.Leader;
  }

  /**
   * Applies the controller's view. Returns what changed so the caller can start or stop
   * replication: a new leader epoch means a new term, whatever the role.
   */
  applyAssignment(
    assignment: PartitionAssignment,
    nowMs: number,
  ): { epochChanged: boolean; roleChanged: boolean } {
    const previous = this.assignment;
    const previousRole = this.role;
    this.assignment = assignment;
    this.role =
      assignment.leaderId === this.localBrokerId ? ReplicaRole.Leader : ReplicaRole.Follower;
    const epochChanged = assignment.leaderEpoch !== previous.leaderEpoch;
    // A newer partition epoch settles a pending expansion: either it is that change, or another
    // change won the compare-and-set and the pending one can never commit.
    if (
      this.pendingIsrExpansion !== undefined &&
      (epochChanged ||
        this.role !== ReplicaRole.Leader ||
        assignment.partitionEpoch > this.pendingIsrExpansion.partitionEpoch)
    ) {
      this.pendingIsrExpansion = undefined;
    }
    if (this.role === ReplicaRole.Leader && (epochChanged || previousRole !== ReplicaRole.Leader)) {
      this.resetFollowers(nowMs);
    } else if (this.role === ReplicaRole.Leader) {
      this.updateFollowers(nowMs);
    }
    if (this.role === ReplicaRole.Leader) this.maybeAdvanceHighWatermark();
    this.wake();
    return { epochChanged, roleChanged: previousRole !== this.role };
  }

  /** A new term: follower positions are unknown until they fetch again. */
  private resetFollowers(nowMs: number): void {
    this.followers.clear();
    for (const replica of this.assignment.replicas) {
      if (replica === this.localBrokerId) continue;
      this.followers.set(replica, {
        logEndOffset: -1n,
        lastCaughtUpTimeMs: nowMs,
        lastFetchTimeMs: 0,
        lastFetchLeaderLogEndOffset: -1n,
        fetchSession: undefined,
      });
    }
  }

  /**
   * The replica set changed within the term (a reassignment adds or removes replicas, as Kafka's
   * Partition.updateAssignmentAndIsr): new followers are tracked from their first fetch on, so
   * they can catch up and join the ISR; followers that left are forgotten. The others keep
   * their positions.
   */
  private updateFollowers(nowMs: number): void {
    for (const replica of this.followers.keys()) {
      if (!this.assignment.replicas.includes(replica)) this.followers.delete(replica);
    }
    for (const replica of this.assignment.replicas) {
      if (replica === this.localBrokerId || this.followers.has(replica)) continue;
      this.followers.set(replica, {
        logEndOffset: -1n,
        lastCaughtUpTimeMs: nowMs,
        lastFetchTimeMs: 0,
        lastFetchLeaderLogEndOffset: -1n,
        fetchSession: undefined,
      });
    }
  }

  /** Refuses a request that needs the leader, naming the current one. */
  ensureLeader(): void {
    if (this.role !== ReplicaRole.Leader) {
      throw new SpoolError(
        'NOT_LEADER_OR_FOLLOWER',
        `broker ${this.localBrokerId} is not the leader of ${this.name}; broker ${this.assignment.leaderId} is`,
        { details: { leader: String(this.assignment.leaderId) } },
      );
    }
  }

  /** Checks a request's leader epoch against this replica's (-1 skips the check). */
  checkLeaderEpoch(requestEpoch: number): void {
    if (requestEpoch < 0 || requestEpoch === this.assignment.leaderEpoch) return;
    if (requestEpoch < this.assignment.leaderEpoch) {
      throw new SpoolError(
        'FENCED_LEADER_EPOCH',
        `leader epoch ${requestEpoch} for ${this.name} is older than the current ${this.assignment.leaderEpoch}`,
      );
    }
    throw new SpoolError(
      'UNKNOWN_LEADER_EPOCH',
      `leader epoch ${requestEpoch} for ${this.name} is newer than this replica's ${this.assignment.leaderEpoch}`,
    );
  }

  /**
   * The leader is about to ask the controller for `newIsr` at the current partition epoch: its
   * members outside the ISR count for the HW from now on, until the outcome is known.
   */
  markIsrExpansionPending(newIsr: readonly number[]): void {
    const { isr, partitionEpoch } = this.assignment;
    const joining = newIsr.filter((replica) => !isr.includes(replica));
    if (joining.length === 0) return;
    const pending = this.pendingIsrExpansion;
    if (pending === undefined || pending.partitionEpoch !== partitionEpoch) {
      this.pendingIsrExpansion = { partitionEpoch, replicas: new Set(joining) };
    } else {
      for (const replica of joining) pending.replicas.add(replica);
    }
  }

  /**
   * The controller refused the change asked at `partitionEpoch` without writing it: the
   * replicas it would have added stop counting for the HW.
   */
  clearIsrExpansionPending(partitionEpoch: number): void {
    if (this.pendingIsrExpansion?.partitionEpoch !== partitionEpoch) return;
    this.pendingIsrExpansion = undefined;
    this.maybeAdvanceHighWatermark();
  }

  /** Whether an ISR expansion this leader asked for has no known outcome yet. */
  get isrExpansionPending(): boolean {
    return this.pendingIsrExpansion !== undefined;
  }

  /**
   * The ISR the HW must respect: the controller's, plus the replicas of a pending expansion
   * (one that may already be committed without this leader knowing).
   */
  maximalIsr(): readonly number[] {
    const pending = this.pendingIsrExpansion;
    if (pending === undefined) return this.assignment.isr;
    return [
      ...this.assignment.isr,
      ...[...pending.replicas].filter((replica) => !this.assignment.isr.includes(replica)),
    ];
  }

  /**
   * The leader's HW: the smallest log end offset in the maximal ISR (this replica's own
   * included), so that every replica the controller may have recorded in the ISR has it.
   */
  maybeAdvanceHighWatermark(): boolean {
    if (this.role !== ReplicaRole.Leader) return false;
    let candidate = this.log.logEndOffset;
    for (const replica of this.maximalIsr()) {
      if (replica === this.localBrokerId) continue;
      const follower = this.followers.get(replica);
      const followerEnd =
        follower === undefined || follower.logEndOffset < 0n
          ? this.log.highWatermark
          : follower.logEndOffset;
      if (followerEnd < candidate) candidate = followerEnd;
    }
    return this.setHighWatermark(candidate);
  }

  /** A follower's HW comes from the leader, capped at what this replica has. */
  updateHighWatermarkAsFollower(leaderHighWatermark: bigint): void {
    const capped =
      leaderHighWatermark < this.log.logEndOffset ? leaderHighWatermark : this.log.logEndOffset;
    this.setHighWatermark(capped);
  }

  private setHighWatermark(offset: bigint): boolean {
    let next = offset < this.log.logStartOffset ? this.log.logStartOffset : offset;
    if (next > this.log.logEndOffset) next = this.log.logEndOffset;
    const current = this.log.highWatermark;
    if (this.role === ReplicaRole.Leader && next < current) return false;
    if (next === current) return false;
    this.log.updateHighWatermark(next);
    this.wake();
    return true;
  }

  /** Wakes waiters: new records or a new HW. */
  wake(): void {
    this.changeCount++;
    for (const waiter of [...this.waiters]) waiter();
  }

  /**
   * The leader learns a follower's position from its fetch: the fetch offset is the follower's
   * log end offset. A follower that reached the leader's log end offset is caught up now.
   * Returns whether the HW moved.
   */
  recordFollowerFetch(followerId: number, fetchOffset: bigint, nowMs: number): boolean {
    const follower = this.followers.get(followerId);
    if (follower === undefined) return false;
    const leaderLogEndOffset = this.log.logEndOffset;
    // Kafka's rule: a follower that reached the leader's end is caught up now; one that reached
    // the end the leader had at its previous fetch was caught up then. Under steady produce a
    // follower is never exactly at the end, yet it is not lagging. A fetch session fetched this
    // partition, unread, at every request since its last read: its previous fetch is the
    // session's (a lower bound by at most one fetch wait).
    if (fetchOffset >= leaderLogEndOffset) follower.lastCaughtUpTimeMs = nowMs;
    else if (fetchOffset >= follower.lastFetchLeaderLogEndOffset && follower.lastFetchTimeMs > 0) {
      const session = follower.fetchSession;
      const previousFetchTimeMs =
        session?.open === true
          ? Math.max(follower.lastFetchTimeMs, session.previousFetchTimeMs)
          : follower.lastFetchTimeMs;
      follower.lastCaughtUpTimeMs = Math.max(follower.lastCaughtUpTimeMs, previousFetchTimeMs);
    }
    follower.logEndOffset = fetchOffset;
    follower.lastFetchTimeMs = nowMs;
    follower.lastFetchLeaderLogEndOffset = leaderLogEndOffset;
    return this.maybeAdvanceHighWatermark();
  }

  /**
   * The last time the follower was caught up: at its last read fetch (recordFollowerFetch), or
   * later while an open fetch session holds this partition with the follower at the log end
   * (each of the session's fetches fetches it again there). Undefined for a non-follower.
   */
  followerLastCaughtUpTimeMs(followerId: number, nowMs: number): number | undefined {
    const follower = this.followers.get(followerId);
    if (follower === undefined) return undefined;
    const session = follower.fetchSession;
    if (session?.open !== true || follower.logEndOffset < this.log.logEndOffset) {
      return follower.lastCaughtUpTimeMs;
    }
    return Math.max(follower.lastCaughtUpTimeMs, session.fetchTimeMs(nowMs));
  }

  /** The follower's fetch session holds this partition from its latest read fetch on. */
  attachFetchSession(followerId: number, fetchSession: FetchSessionClock): void {
    const follower = this.followers.get(followerId);
    if (follower !== undefined) follower.fetchSession = fetchSession;
  }

  /** The follower's session stopped holding this partition: its clock no longer speaks for it. */
  detachFetchSession(followerId: number, fetchSession: FetchSessionClock): void {
    const follower = this.followers.get(followerId);
    if (follower?.fetchSession === fetchSession) follower.fetchSession = undefined;
  }

  /**
   * Resolves when `ready()` holds, after `timeoutMs`, or when the signal aborts; `ready` is
   * re-checked after every append and HW change. Returns whether it became ready.
   */
  waitUntil(ready: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    if (timeoutMs <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (result: boolean): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
        signal?.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const check = (): void => {
        if (ready()) finish(true);
      };
      const onAbort = (): void => finish(false);
      const timer = setTimeout(() => finish(ready()), timeoutMs);
      this.waiters.add(check);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Calls `callback` once, at the next append, HW move or role change; returns the function that
   * cancels it. For waits on several partitions at once (waitForAnyChange).
   */
  onNextChange(callback: () => void): () => void {
    const waiter = (): void => {
      this.waiters.delete(waiter);
      callback();
    };
    this.waiters.add(waiter);
    return () => this.waiters.delete(waiter);
  }
}

/**
 * A delayed fetch's wait (Kafka's fetch purgatory): resolves at the first change of any of
 * `replicas` after the call, after `timeoutMs`, or when `signal` aborts, whichever comes first.
 * One timer and one callback per replica, all removed at the first event; no AbortController
 * per wait (aborting one builds a DOMException with a stack, a cost a follower paid per fetch).
 */
export function waitForAnyChange(
  replicas: Iterable<PartitionReplica>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  if (timeoutMs <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const cancels: Array<() => void> = [];
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      for (const cancel of cancels) cancel();
      resolve();
    };
    const timer = setTimeout(finish, timeoutMs);
    signal.addEventListener('abort', finish, { once: true });
    for (const replica of replicas) cancels.push(replica.onNextChange(finish));
  });
}
