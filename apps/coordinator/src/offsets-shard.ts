/**
 * One __consumer_offsets partition as its owning coordinator holds it in memory: the groups that
 * hash to it (ConsumerGroup state machines) and their committed offsets, rebuilt by replaying the
 * partition and kept current by this coordinator's own writes.
 *
 *   Loading → Active → Unloaded        (Loading → Unloaded when ownership is lost mid-load)
 *
 * Only an Active shard answers. Writes go through one queue per shard, so records reach the log
 * in the order their changes were made in memory; a write that fails for good unloads the shard
 * (its memory may now be ahead of the log) and the owner loads it again from the log.
 *
 * Replay fencing: every record carries its writer's shard epoch, and the owner writes an epoch
 * marker before serving. A record whose epoch is below the highest epoch seen so far was written
 * by a coordinator that had already lost the shard (a zombie), and is ignored.
 */
import { assert, type Logger } from '@spool/common';
import { ConsumerGroup, type GroupRecord, type GroupTimeouts } from '@spool/consumer-group';
import type { CommittedOffsetValue, OffsetsEntry, ReplayedEntry } from './offsets-records';
import { partitionKey } from './partition-leaders';

export enum ShardState {
  Loading = 'loading',
  Active = 'active',
  Unloaded = 'unloaded',
}

/** Writes pending on one shard at most: beyond it callers get COORDINATOR_NOT_AVAILABLE. */
export const shardPendingWritesMax = 1_000;

export interface CommittedOffset extends CommittedOffsetValue {
  readonly topic: string;
  readonly partition: number;
}

export class OffsetsShard {
  private stateValue = ShardState.Loading;
  readonly groups = new Map<string, ConsumerGroup>();
  /** group → topic/partition key → committed offset. */
  readonly offsets = new Map<string, Map<string, CommittedOffset>>();
  /** The highest shard epoch replay has seen; records below it are a zombie's. */
  private replayEpoch = 0;
  private writeTail: Promise<unknown> = Promise.resolve();
  private pendingWrites = 0;
  /**
   * Entries written since the last checkpoint (or, after a load, replayed): what a takeover
   * would replay beyond the checkpoint. See ShardManager's checkpoints.
   */
  entriesSinceCheckpoint = 0;
  /** Entries the last checkpoint wrote: the shard's live state. */
  lastCheckpointEntries = 0;
  /** A checkpoint is queued or being written. */
  checkpointing = false;
  /**
   * Where this owner's next record lands if nobody else writes to the partition: one past its
   * own last record (its epoch marker, after a load).
   */
  nextOffsetAfterOwnWrites: bigint | undefined;
  /**
   * Some record since the load was not this owner's: one of its appends did not land at
   * nextOffsetAfterOwnWrites. A checkpoint then deletes nothing (ShardManager, point 4).
   */
  othersWrote = false;

  /** Records where an append of `recordCount` records by this owner landed. */
  noteOwnWrite(baseOffset: bigint, recordCount: number): void {
    if (
      this.nextOffsetAfterOwnWrites !== undefined &&
      baseOffset !== this.nextOffsetAfterOwnWrites
    ) {
      this.othersWrote = true;
    }
    this.nextOffsetAfterOwnWrites = baseOffset + BigInt(recordCount);
  }

  constructor(
    readonly partition: number,
    readonly shardEpoch: number,
    private readonly timeouts: GroupTimeouts,
    private readonly logger: Logger,
  ) {}

  get state(): ShardState {
    return this.stateValue;
  }

  transitionTo(allowedFrom: readonly ShardState[], next: ShardState): void {
    assert(allowedFrom.includes(this.stateValue), `shard cannot go from ${this.stateValue}`);
    this.logger.info(
      { shard: this.partition, shardEpoch: this.shardEpoch, from: this.stateValue, to: next },
      `offsets shard ${this.partition}: ${next}`,
    );
    this.stateValue = next;
  }

  /** Writes queued or in progress. */
  get pendingWriteCount(): number {
    return this.pendingWrites;
  }

  /**
   * The entries that rebuild this shard's memory as it is now: each group's snapshotRecords()
   * and every committed offset. Exact only while no write is pending: a group applies its
   * changes before their records are written, and offsets after.
   */
  checkpointEntries(): OffsetsEntry[] {
    assert(this.pendingWrites === 0, 'a checkpoint is taken only with no write pending');
    const entries: OffsetsEntry[] = [];
    for (const group of this.groups.values()) {
      for (const record of group.snapshotRecords()) entries.push({ kind: 'group', record });
    }
    for (const [groupId, committed] of this.offsets) {
      for (const offset of committed.values()) {
        const { topic, partition, ...value } = offset;
        entries.push({ kind: 'offset', groupId, topic, partition, committed: value });
      }
    }
    return entries;
  }

  /** Applies one replayed record, unless a zombie wrote it (see the file comment). */
  replay(replayed: ReplayedEntry, nowMs: number): boolean {
    this.entriesSinceCheckpoint += 1;
    if (replayed.shardEpoch < this.replayEpoch) return false;
    this.replayEpoch = replayed.shardEpoch;
    this.apply(replayed.entry, nowMs);
    return true;
  }

  /** Applies an entry to memory: a replayed one, or one this owner just wrote. */
  apply(entry: OffsetsEntry, nowMs: number): void {
    switch (entry.kind) {
      case 'offset': {
        const key = partitionKey(entry.topic, entry.partition);
        if (entry.committed === undefined) {
          const committed = this.offsets.get(entry.groupId);
          committed?.delete(key);
          if (committed?.size === 0) this.offsets.delete(entry.groupId);
        } else {
          let committed = this.offsets.get(entry.groupId);
          if (committed === undefined) {
            committed = new Map();
            this.offsets.set(entry.groupId, committed);
          }
          committed.set(key, {
            topic: entry.topic,
            partition: entry.partition,
            ...entry.committed,
          });
        }
        return;
      }
      case 'group':
        this.replayGroupRecord(entry.record, nowMs);
        return;
      case 'shard-epoch':
        return;
    }
  }

  private replayGroupRecord(record: GroupRecord, nowMs: number): void {
    if (record.type === 'group-deleted') {
      this.groups.delete(record.groupId);
      return;
    }
    let group = this.groups.get(record.groupId);
    if (group === undefined) {
      group = new ConsumerGroup(record.groupId, this.timeouts);
      this.groups.set(record.groupId, group);
    }
    group.replay(record, nowMs);
  }

  /** The group, or a new empty one (not kept until it has something to persist). */
  groupOrNew(groupId: string): ConsumerGroup {
    return this.groups.get(groupId) ?? new ConsumerGroup(groupId, this.timeouts);
  }

  committedOffsets(groupId: string): CommittedOffset[] {
    return [...(this.offsets.get(groupId)?.values() ?? [])].sort(
      (left, right) => left.topic.localeCompare(right.topic) || left.partition - right.partition,
    );
  }

  /** Every group known here: with members or records, or with committed offsets only. */
  groupIds(): string[] {
    return [...new Set([...this.groups.keys(), ...this.offsets.keys()])].sort();
  }

  /**
   * Runs `write` after every write queued before it on this shard. Bounded by
   * shardPendingWritesMax; `undefined` means the queue is full.
   */
  enqueueWrite<T>(write: () => Promise<T>): Promise<T> | undefined {
    if (this.pendingWrites >= shardPendingWritesMax) return undefined;
    this.pendingWrites++;
    const result = this.writeTail.then(write);
    this.writeTail = result.then(
      () => this.pendingWrites--,
      () => this.pendingWrites--,
    );
    return result;
  }
}
