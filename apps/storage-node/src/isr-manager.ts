/**
 * Replication, leader side: keeps each led partition's ISR true to its followers (Kafka's
 * `Partition.maybeShrinkIsr` / `maybeExpandIsr`). A follower that has not caught up for
 * `replica.lag.time.max.ms` leaves the ISR; one whose log end reaches the high watermark (and the
 * start of the current leader epoch) rejoins. Every change goes through the controller's
 * AlterPartition (a compare-and-set on the partition epoch) before the leader acts on it, and
 * one change per partition is in flight at a time. A follower whose fetch session holds a
 * partition is caught up as long as the session fetches (partition-replica.ts,
 * followerLastCaughtUpTimeMs), though idle partitions are not read per fetch.
 */
import type { Logger } from '@spool/common';
import type { AlterPartitionResponse } from '@spool/protocol';
import type { PartitionReplica } from './partition-replica';

export interface IsrManagerOptions {
  readonly brokerId: number;
  readonly replicaLagTimeMaxMs: number;
  readonly alterPartition: (request: {
    topic: string;
    partition: number;
    leaderEpoch: number;
    partitionEpoch: number;
    newIsr: number[];
  }) => Promise<AlterPartitionResponse>;
  readonly logger: Logger;
  readonly onShrink: () => void;
  readonly onExpand: () => void;
}

export class IsrManager {
  private readonly inFlight = new Set<string>();

  constructor(private readonly options: IsrManagerOptions) {}

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
    if (lagging.length === 0 && caughtUp.length === 0) return undefined;
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

  /** Checks one led partition and, when its ISR should change, asks the controller. */
  maybeUpdate(replica: PartitionReplica, nowMs = Date.now()): void {
    if (!replica.isLeader || this.inFlight.has(replica.name)) return;
    const newIsr = this.proposedIsr(replica, nowMs);
    if (newIsr === undefined) return;
    const previous = replica.assignment;
    this.inFlight.add(replica.name);
    this.options
      .alterPartition({
        topic: replica.topic,
        partition: replica.partition,
        leaderEpoch: previous.leaderEpoch,
        partitionEpoch: previous.partitionEpoch,
        newIsr,
      })
      .then((response) => {
        const updated = response.partition;
        if (response.error !== undefined || updated === undefined) {
          this.options.logger.info(
            {
              partition: replica.name,
              error: response.error?.code,
              message: response.error?.message,
            },
            'ISR change refused; waiting for newer metadata',
          );
          return;
        }
        // Act on the controller's answer at once; the metadata stream brings the same state.
        if (updated.partitionEpoch > replica.assignment.partitionEpoch) {
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
        if (updated.isr.length < previous.isr.length) this.options.onShrink();
        else this.options.onExpand();
        this.options.logger.info(
          { partition: replica.name, isr: updated.isr, previousIsr: previous.isr },
          updated.isr.length < previous.isr.length ? 'ISR shrank' : 'ISR expanded',
        );
      })
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error, partition: replica.name }, 'AlterPartition failed');
      })
      .finally(() => this.inFlight.delete(replica.name));
  }
}
