/**
 * Replication, leader side: keeps each led partition's ISR true to its followers (Kafka's
 * `Partition.maybeShrinkIsr` / `maybeExpandIsr`). A follower that has not caught up for
 * `replica.lag.time.max.ms` leaves the ISR; one whose log end reaches the high watermark (and the
 * start of the current leader epoch) rejoins. Every change goes through the controller's
 * AlterPartition (a compare-and-set on the partition epoch) before the leader acts on it. As in
 * Kafka's AlterPartitionManager, changes are coalesced: at most one request is in flight, carrying
 * every partition that was waiting (up to `alterPartitionBatchMax`), so a node that comes back
 * rejoins thousands of ISRs in a few requests instead of one call (and one metadata write) each. A follower whose fetch session holds a
 * partition is caught up as long as the session fetches (partition-replica.ts,
 * followerLastCaughtUpTimeMs), though idle partitions are not read per fetch.
 *
 * An expansion counts for the HW from the moment it is asked (PartitionReplica's maximal ISR),
 * not from its answer: the controller may commit it and lose the answer (its lease ends right
 * after the write, the call times out and is retried elsewhere), and a replica in the committed
 * ISR may be elected. Until a newer partition epoch or a refusal at the epoch it was asked at
 * settles it (a stale-epoch refusal may answer a retry of the committed change), the leader keeps
 * asking, with a confirming request (the ISR as it is) once the joining replica fell behind, so
 * that the partition epoch moves past the pending change either way.
 *
 * A request the controllers could not answer (none reachable, a failover, a deadline) is sent
 * again, as Kafka's AlterPartitionManager does, until it is answered or moot, and within bounds:
 *   1. Before each attempt, a partition whose change is obsolete leaves the request: this node
 *      no longer leads it, or its leader or partition epoch moved on the metadata stream (the
 *      change, or another, was committed; the new state settles a pending expansion). A request
 *      left with no partition ends.
 *   2. A refusal (an answer with an error) and a failure that is not retriable end it at once.
 *   3. Otherwise it is sent again after a capped backoff, at most `alterPartitionAttemptsMax`
 *      times and for at most `alterPartitionRetryMsMax`; past either it ends with a warning
 *      that says why. A pending expansion stays pending: the next ISR check asks again with the
 *      partition's state then, in one request with the changes that waited behind this one.
 */
import { backoffMs, sleep, type Logger } from '@spool/common';
import type { AlterPartitionResponse, PartitionMetadata } from '@spool/protocol';
import type { PartitionReplica } from './partition-replica';

export interface IsrManagerOptions {
  readonly brokerId: number;
  readonly replicaLagTimeMaxMs: number;
  readonly alterPartition: (request: {
    topics: Array<{
      topic: string;
      partitions: Array<{
        partition: number;
        leaderEpoch: number;
        partitionEpoch: number;
        newIsr: number[];
      }>;
    }>;
  }) => Promise<AlterPartitionResponse>;
  readonly logger: Logger;
  readonly onShrink: () => void;
  readonly onExpand: () => void;
  /** Bounds of the retries of one request (see the header); the defaults below if unset. */
  readonly retry?: AlterPartitionRetry;
}

export interface AlterPartitionRetry {
  readonly attemptsMax: number;
  readonly durationMsMax: number;
  /** The wait before attempt `attempt + 1`. */
  readonly backoffMs: (attempt: number) => number;
}

/**
 * How long one ISR change is asked for while no controller answers: a controller failover (a
 * lease of about 2 s, then an election) several times over. Past it a controller that cannot be
 * reached has fenced this node long ago (broker.session.timeout.ms), which ends its leaderships.
 */
export const alterPartitionRetryMsMax = 30_000;
/** Attempts of one request within alterPartitionRetryMsMax, each over the controllers. */
export const alterPartitionAttemptsMax = 60;
/** The longest wait between two attempts: a new controller is found within about a second. */
const alterPartitionBackoffMsMax = 1_000;

const alterPartitionRetryDefault: AlterPartitionRetry = {
  attemptsMax: alterPartitionAttemptsMax,
  durationMsMax: alterPartitionRetryMsMax,
  backoffMs: (attempt) => backoffMs(attempt, { backoffMaxMs: alterPartitionBackoffMsMax }),
};

/** One partition's change in a request, with the state it was asked at. */
interface SentChange {
  readonly replica: PartitionReplica;
  readonly isr: readonly number[];
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly newIsr: number[];
}

/**
 * AlterPartition refusals that say the partition moved past the epochs asked at: they do not
 * prove the change asked was never written (see applyResults).
 */
const epochMovedCodes: ReadonlySet<string> = new Set([
  'INVALID_UPDATE_VERSION',
  'FENCED_LEADER_EPOCH',
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
]);

/** The most partitions one AlterPartition carries (the controller takes up to 2,000). */
export const alterPartitionBatchMax = 1_000;

export class IsrManager {
  /** Partitions of the request in flight. */
  private readonly inFlight = new Set<string>();
  /** Partitions whose ISR should change, waiting for the next request, by name. */
  private readonly pending = new Map<string, PartitionReplica>();
  private sending = false;
  private stopped = false;
  private readonly retry: AlterPartitionRetry;

  constructor(private readonly options: IsrManagerOptions) {
    this.retry = options.retry ?? alterPartitionRetryDefault;
  }

  /** Partitions of the request in flight: none once a request ended. */
  get partitionsInFlight(): number {
    return this.inFlight.size;
  }

  /** The node is stopping: a request being retried ends at its next attempt, none is sent. */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Whether the ISR may need a change: a replica outside it, or a member that lags. Allocates
   * nothing, since the periodic check runs it over every led partition and almost all answer no.
   */
  private mayChange(replica: PartitionReplica, nowMs: number): boolean {
    const { isr, replicas } = replica.assignment;
    for (const id of replicas) {
      if (id === this.options.brokerId) continue;
      if (!isr.includes(id)) return true;
      const lastCaughtUpTimeMs = replica.followerLastCaughtUpTimeMs(id, nowMs);
      if (lastCaughtUpTimeMs === undefined) return true;
      if (nowMs - lastCaughtUpTimeMs > this.options.replicaLagTimeMaxMs) return true;
    }
    for (const id of isr) {
      if (id !== this.options.brokerId && !replicas.includes(id)) return true;
    }
    return false;
  }

  /** The ISR this leader would have now, or undefined when it is right as it is. */
  private proposedIsr(replica: PartitionReplica, nowMs: number): number[] | undefined {
    if (!this.mayChange(replica, nowMs)) return undefined;
    const { isr, replicas, leaderEpoch } = replica.assignment;
    const lagging = isr.filter((id) => {
      if (id === this.options.brokerId) return false;
      const lastCaughtUpTimeMs = replica.followerLastCaughtUpTimeMs(id, nowMs);
      return (
        lastCaughtUpTimeMs === undefined ||
        nowMs - lastCaughtUpTimeMs > this.options.replicaLagTimeMaxMs
      );
    });
    // The periodic check runs over every led partition: most have their whole replica set in
    // the ISR, and need no look at the epoch history.
    const outOfSync = replicas.filter((id) => !isr.includes(id) && id !== this.options.brokerId);
    if (lagging.length === 0 && outOfSync.length === 0) return undefined;
    const epochStart =
      outOfSync.length === 0
        ? replica.log.logEndOffset
        : (replica.log.leaderEpochEntries().find((entry) => entry.epoch === leaderEpoch)
            ?.startOffset ?? replica.log.logEndOffset);
    const caughtUp = outOfSync.filter((id) => {
      const follower = replica.followers.get(id);
      const lastCaughtUpTimeMs = replica.followerLastCaughtUpTimeMs(id, nowMs);
      return (
        follower !== undefined &&
        lastCaughtUpTimeMs !== undefined &&
        follower.logEndOffset >= replica.highWatermark &&
        follower.logEndOffset >= epochStart &&
        nowMs - lastCaughtUpTimeMs <= this.options.replicaLagTimeMaxMs
      );
    });
    if (lagging.length === 0 && caughtUp.length === 0) {
      return replica.isrExpansionPending ? [...isr] : undefined;
    }
    const next = [...isr.filter((id) => !lagging.includes(id)), ...caughtUp];
    return next.includes(this.options.brokerId) ? next : [this.options.brokerId, ...next];
  }

  /**
   * The controller changed the ISR of a partition this node leads, in the same term, without
   * this leader asking: a fenced broker leaves every ISR at once (broker-lifecycle.ts). Counted
   * as a shrink (or expand), as Kafka's IsrShrinksPerSec counts a dead broker's partitions; a
   * change this leader has in flight is counted when its answer comes, not here.
   */
  observeAssignment(
    replica: PartitionReplica,
    change: { epochChanged: boolean; roleChanged: boolean; previousIsr?: readonly number[] },
  ): void {
    const previousIsr = change.previousIsr;
    if (previousIsr === undefined || change.epochChanged || change.roleChanged) return;
    if (this.inFlight.has(replica.name)) return;
    const isr = replica.assignment.isr;
    if (isr.length < previousIsr.length) this.options.onShrink();
    else if (isr.length > previousIsr.length) this.options.onExpand();
    else return;
    this.options.logger.info(
      { partition: replica.name, isr, previousIsr },
      isr.length < previousIsr.length
        ? 'ISR shrank by the controller (a replica was fenced)'
        : 'ISR expanded by the controller',
    );
  }

  /**
   * Checks one led partition and, when its ISR should change, queues it for the next
   * AlterPartition (sent at once when none is in flight).
   */
  maybeUpdate(replica: PartitionReplica, nowMs = Date.now()): void {
    if (
      this.stopped ||
      !replica.isLeader ||
      this.inFlight.has(replica.name) ||
      this.pending.has(replica.name)
    ) {
      return;
    }
    if (this.proposedIsr(replica, nowMs) === undefined) return;
    this.pending.set(replica.name, replica);
    if (!this.sending) {
      this.sending = true;
      // After the current turn, so one periodic pass over every partition makes one request.
      setImmediate(() => void this.sendPending());
    }
  }

  /** Sends the waiting changes, one request at a time, until none is left. */
  private async sendPending(): Promise<void> {
    try {
      while (this.pending.size > 0) {
        const batch = this.takeBatch(Date.now());
        if (batch.length === 0) continue;
        await this.send(batch);
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * Up to `alterPartitionBatchMax` waiting partitions, each with the ISR proposed now (the
   * assignment may have moved since it was queued; one that needs no change any more is dropped).
   */
  private takeBatch(nowMs: number): Array<{ replica: PartitionReplica; newIsr: number[] }> {
    const batch: Array<{ replica: PartitionReplica; newIsr: number[] }> = [];
    for (const [name, replica] of this.pending) {
      if (batch.length >= alterPartitionBatchMax) break;
      this.pending.delete(name);
      const newIsr = replica.isLeader ? this.proposedIsr(replica, nowMs) : undefined;
      if (newIsr !== undefined) batch.push({ replica, newIsr });
    }
    return batch;
  }

  private async send(batch: Array<{ replica: PartitionReplica; newIsr: number[] }>): Promise<void> {
    const sent = new Map<string, SentChange>();
    for (const { replica, newIsr } of batch) {
      const assignment = replica.assignment;
      sent.set(replica.name, {
        replica,
        isr: assignment.isr,
        leaderEpoch: assignment.leaderEpoch,
        partitionEpoch: assignment.partitionEpoch,
        newIsr,
      });
      this.inFlight.add(replica.name);
      replica.markIsrExpansionPending(newIsr);
    }
    const startedAtMs = Date.now();
    try {
      for (let attempt = 1; ; attempt++) {
        // 1.
        this.dropObsolete(sent);
        if (sent.size === 0) return;
        let response: AlterPartitionResponse;
        try {
          response = await this.options.alterPartition(requestOf(sent.values()));
        } catch (error) {
          // 3.
          const givingUp = this.giveUpReason(error, attempt, Date.now() - startedAtMs);
          if (givingUp !== undefined) {
            this.options.logger.warn(
              { err: error, partitions: sent.size, attempts: attempt, why: givingUp },
              'AlterPartition failed; the next ISR check asks again',
            );
            return;
          }
          await sleep(this.retry.backoffMs(attempt));
          continue;
        }
        // 2.
        if (response.error !== undefined) {
          this.options.logger.info(
            { partitions: sent.size, error: response.error.code, message: response.error.message },
            'AlterPartition refused; waiting for newer metadata',
          );
          return;
        }
        this.applyResults(response, sent);
        return;
      }
    } finally {
      for (const { replica } of batch) this.inFlight.delete(replica.name);
    }
  }

  /** Step 1: takes out of `sent` (and out of flight) every change that is obsolete now. */
  private dropObsolete(sent: Map<string, SentChange>): void {
    const dropped: string[] = [];
    for (const [name, change] of sent) {
      const reason = obsoleteReasonOf(change);
      if (reason === undefined) continue;
      sent.delete(name);
      this.inFlight.delete(name);
      dropped.push(`${name}: ${reason}`);
    }
    if (dropped.length > 0) {
      this.options.logger.info(
        { dropped: dropped.length, sample: dropped.slice(0, 5), left: sent.size },
        'ISR change no longer needed; not asking again',
      );
    }
  }

  /** Step 3: why a failed attempt is the last, or undefined to try again. */
  private giveUpReason(error: unknown, attempt: number, elapsedMs: number): string | undefined {
    if (this.stopped) return 'the node is stopping';
    if ((error as { retriable?: unknown }).retriable !== true)
      return 'the failure is not retriable';
    if (attempt >= this.retry.attemptsMax) return `${attempt} attempts failed`;
    if (elapsedMs >= this.retry.durationMsMax) return `no answer for ${elapsedMs} ms`;
    return undefined;
  }

  private applyResults(response: AlterPartitionResponse, previous: Map<string, SentChange>): void {
    let shrunk = 0;
    let expanded = 0;
    const refused: string[] = [];
    for (const topic of response.topics) {
      for (const result of topic.partitions) {
        const sent = previous.get(`${topic.topic}-${result.partition}`);
        if (sent === undefined) continue;
        const updated = result.partitionMetadata;
        if (result.error !== undefined || updated === undefined) {
          // Refused per partition before any write. Only a refusal at the partition epoch asked
          // at proves that the expansion never committed; a stale epoch (or leader) may be this
          // very expansion, committed by an earlier attempt whose answer was lost, so the newer
          // partition epoch on the metadata stream settles it instead.
          if (result.error !== undefined && !epochMovedCodes.has(result.error.code))
            sent.replica.clearIsrExpansionPending(sent.partitionEpoch);
          refused.push(`${sent.replica.name}: ${result.error?.code ?? 'no partition'}`);
          continue;
        }
        // Act on the controller's answer at once; the metadata stream brings the same state.
        this.applyUpdated(sent.replica, updated);
        if (updated.isr.length < sent.isr.length) {
          shrunk += 1;
          this.options.onShrink();
        } else if (updated.isr.length > sent.isr.length) {
          expanded += 1;
          this.options.onExpand();
        }
      }
    }
    if (shrunk + expanded > 0) {
      this.options.logger.info({ shrunk, expanded }, 'ISR changed');
    }
    if (refused.length > 0) {
      this.options.logger.info(
        { refused: refused.length, sample: refused.slice(0, 5) },
        'ISR change refused; waiting for newer metadata',
      );
    }
  }

  private applyUpdated(replica: PartitionReplica, updated: PartitionMetadata): void {
    if (updated.partitionEpoch <= replica.assignment.partitionEpoch) return;
    replica.applyAssignment(
      {
        leaderId: updated.leaderId,
        leaderEpoch: updated.leaderEpoch,
        partitionEpoch: updated.partitionEpoch,
        replicas: updated.replicas,
        isr: updated.isr,
      },
      Date.now(),
    );
  }
}

/** Why a change asked at `change`'s epochs is moot now, or undefined while it still stands. */
function obsoleteReasonOf(change: SentChange): string | undefined {
  const { replica } = change;
  if (!replica.isLeader) return 'no longer the leader';
  if (replica.assignment.leaderEpoch !== change.leaderEpoch) return 'a newer leader epoch';
  if (replica.assignment.partitionEpoch !== change.partitionEpoch) return 'a newer partition epoch';
  return undefined;
}

function requestOf(
  changes: Iterable<SentChange>,
): Parameters<IsrManagerOptions['alterPartition']>[0] {
  const topics = new Map<
    string,
    Array<{ partition: number; leaderEpoch: number; partitionEpoch: number; newIsr: number[] }>
  >();
  for (const { replica, leaderEpoch, partitionEpoch, newIsr } of changes) {
    let partitions = topics.get(replica.topic);
    if (partitions === undefined) {
      partitions = [];
      topics.set(replica.topic, partitions);
    }
    partitions.push({ partition: replica.partition, leaderEpoch, partitionEpoch, newIsr });
  }
  return { topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) };
}
