/**
 * Which __consumer_offsets shards this coordinator serves, and their loading. The controller's
 * heartbeat answers say which shards (and shard epochs) are ours:
 *
 * 1. A shard we own and do not hold at that epoch is loaded. While __consumer_offsets does not
 *    exist the shard waits, loading: the first group call for it creates the topic (Kafka creates
 *    it on first use too, so a cluster nobody uses for groups carries no 50 idle partitions),
 *    and once the topic exists every waiting shard loads. The partition is replayed from its log start
 *    to the high watermark through the leader's data port; a shard-epoch marker is appended
 *    (acks=all); the records between the high watermark read and the marker are replayed too,
 *    so memory equals what any later replay would rebuild; then the shard serves.
 * 2. A shard we hold and no longer own (or whose epoch grew, seen in the metadata before the
 *    next heartbeat) stops serving at once: its groups answer NOT_COORDINATOR.
 * 3. A load that fails is retried with backoff while the shard is still ours; a write that fails
 *    for good unloads the shard and loads it again (step 1), since memory may be ahead of the log.
 * 4. Checkpoints keep a takeover's replay, and the partition, as small as the shard's live state
 *    rather than its whole history (Kafka compacts __consumer_offsets for the same reason): once
 *    `checkpointIntervalEntries` entries (or, if more, as many as the last checkpoint held) were
 *    written since the last one, and no write is pending (so memory equals the log), the shard
 *    writes every group's snapshotRecords() and every committed offset, behind an epoch marker,
 *    then deletes the records before the marker (DeleteRecords). Replaying the old records and
 *    then the checkpoint rebuilds the same state, so a crash at any point loses nothing. The
 *    deletion is fenced: it happens only if every record since this owner's load was its own
 *    (each of its appends landed right after the one before). Otherwise another coordinator
 *    (the shard's new owner, while this one has not yet heard it lost it) wrote there, and its
 *    records must stay.
 */
import { backoffMs, sleep, SpoolError, type Logger } from '@spool/common';
import {
  OffsetSpec,
  consumerOffsetsTopic,
  groupPartition,
  type CoordinatorShard,
} from '@spool/protocol';
import type { ControllerLink } from './controller-link';
import type { GroupTimeouts } from '@spool/consumer-group';
import { decodeOffsetsBatches, encodeOffsetsBatch, type OffsetsEntry } from './offsets-records';
import { OffsetsShard, ShardState } from './offsets-shard';
import type { PartitionLeaders } from './partition-leaders';

/** How long one append to __consumer_offsets may take, retries included. */
export const offsetsWriteTimeoutMs = 10_000;
/** How long one read step of a load may take before the load is retried. */
const loadStepTimeoutMs = 15_000;
/** Point 4: the default number of entries written between checkpoints. */
export const checkpointIntervalEntriesDefault = 10_000;
/** Entries per batch of a checkpoint: well under the topic's max.message.bytes. */
const checkpointBatchEntriesMax = 500;

export interface ShardManagerOptions {
  readonly coordinatorId: string;
  readonly link: ControllerLink;
  readonly leaders: PartitionLeaders;
  readonly timeouts: GroupTimeouts;
  readonly logger: Logger;
  /**
   * Called when a shard starts serving. Which topics exist is not in the records, so each
   * replayed group must see the topics once (ConsumerGroup.onTopicsChanged).
   */
  readonly onLoaded: (shard: OffsetsShard) => void;
  /** Point 4; checkpointIntervalEntriesDefault if absent. */
  readonly checkpointIntervalEntries?: number;
  /** Called after each checkpoint with the entries written and the new log start offset. */
  readonly onCheckpoint?: (shard: OffsetsShard, entries: number, logStartOffset: bigint) => void;
}

export class ShardManager {
  private readonly shards = new Map<number, OffsetsShard>();
  /** Shards waiting for __consumer_offsets to exist before they load. */
  private readonly awaitingTopic = new Set<OffsetsShard>();
  private creatingTopic: Promise<void> | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: ShardManagerOptions) {
    // Point 2, early: the metadata may say a shard moved before our next heartbeat does.
    this.unsubscribe = options.link.metadata.onChange((change) => {
      if (this.awaitingTopic.size > 0 && this.offsetsTopicExists()) this.resumeAwaitingLoads();
      for (const partition of change.changedShards) {
        const held = this.shards.get(partition);
        const published = options.link.metadata.coordinatorShards.get(partition);
        if (
          held !== undefined &&
          published !== undefined &&
          published.shardEpoch > held.shardEpoch &&
          published.coordinatorId !== options.coordinatorId
        ) {
          this.unload(held, 'the controller gave the shard to another coordinator');
        }
      }
    });
  }

  /** Shards held now (loading or serving). */
  get heldShards(): readonly OffsetsShard[] {
    return [...this.shards.values()];
  }

  activeShards(): OffsetsShard[] {
    return [...this.shards.values()].filter((shard) => shard.state === ShardState.Active);
  }

  /** Points 1 and 2: the shards the controller says we own now. */
  onShards(owned: readonly CoordinatorShard[]): void {
    if (this.stopped) return;
    const wanted = new Map(owned.map((shard) => [shard.partition, shard.shardEpoch]));
    for (const shard of [...this.shards.values()]) {
      const epoch = wanted.get(shard.partition);
      if (epoch === undefined) this.unload(shard, 'the controller moved the shard away');
      else if (epoch !== shard.shardEpoch) this.unload(shard, 'the shard epoch changed');
    }
    for (const [partition, shardEpoch] of wanted) {
      if (!this.shards.has(partition)) this.startLoad(partition, shardEpoch);
    }
  }

  private unload(shard: OffsetsShard, reason: string): void {
    if (this.shards.get(shard.partition) === shard) this.shards.delete(shard.partition);
    this.awaitingTopic.delete(shard);
    if (shard.state === ShardState.Unloaded) return;
    this.options.logger.info({ shard: shard.partition, reason }, 'offsets shard unloaded');
    shard.transitionTo([ShardState.Loading, ShardState.Active], ShardState.Unloaded);
  }

  private startLoad(partition: number, shardEpoch: number): void {
    const shard = new OffsetsShard(
      partition,
      shardEpoch,
      this.options.timeouts,
      this.options.logger.child({ shard: partition }),
    );
    this.shards.set(partition, shard);
    if (this.offsetsTopicExists()) void this.loadWithRetries(shard);
    else this.awaitingTopic.add(shard);
  }

  private offsetsTopicExists(): boolean {
    return this.options.link.metadata.topics.has(consumerOffsetsTopic);
  }

  private resumeAwaitingLoads(): void {
    for (const shard of [...this.awaitingTopic]) {
      this.awaitingTopic.delete(shard);
      if (shard.state === ShardState.Loading) void this.loadWithRetries(shard);
    }
  }

  /** Point 1: the first group call of a waiting shard creates the topic, once. */
  private createOffsetsTopic(): void {
    this.creatingTopic ??= this.options.link
      .ensureOffsetsTopic()
      .then(async () => {
        // The loads need the topic's leaders, which come with the metadata.
        await this.options.link.waitUntil(() => this.offsetsTopicExists(), loadStepTimeoutMs);
        this.resumeAwaitingLoads();
      })
      .catch((error: unknown) => {
        this.options.logger.warn(
          { err: error },
          'creating __consumer_offsets failed; retrying on the next call',
        );
      })
      .finally(() => (this.creatingTopic = undefined));
  }

  private async loadWithRetries(shard: OffsetsShard): Promise<void> {
    for (let attempt = 1; shard.state === ShardState.Loading && !this.stopped; attempt++) {
      try {
        await this.load(shard);
        return;
      } catch (error) {
        if (shard.state !== ShardState.Loading) return;
        this.options.logger.warn(
          { err: error, shard: shard.partition, attempt },
          'loading an offsets shard failed; retrying',
        );
        // Start from scratch: a half-replayed shard must not keep what it read.
        shard.groups.clear();
        shard.offsets.clear();
        await sleep(Math.min(backoffMs(attempt), 2_000));
      }
    }
  }

  /** Point 1. */
  private async load(shard: OffsetsShard): Promise<void> {
    const startedMs = Date.now();
    const { leaders } = this.options;
    const topic = consumerOffsetsTopic;
    const deadline = (): number => Date.now() + loadStepTimeoutMs;
    const logStart = await leaders.listOffset(
      topic,
      shard.partition,
      OffsetSpec.OFFSET_SPEC_EARLIEST,
      deadline(),
    );
    const highWatermark = await leaders.listOffset(
      topic,
      shard.partition,
      OffsetSpec.OFFSET_SPEC_LATEST,
      deadline(),
    );
    let position = await this.replayRange(shard, logStart.offset, highWatermark.offset);
    if (shard.state !== ShardState.Loading) return;
    const markerOffset = await leaders.append(
      topic,
      shard.partition,
      encodeOffsetsBatch(
        [{ kind: 'shard-epoch', coordinatorId: this.options.coordinatorId }],
        shard.shardEpoch,
        Date.now(),
      ),
      Date.now() + offsetsWriteTimeoutMs,
    );
    position = await this.replayRange(shard, position, markerOffset);
    if (shard.state !== ShardState.Loading) return;
    shard.noteOwnWrite(markerOffset, 1);
    shard.transitionTo([ShardState.Loading], ShardState.Active);
    this.options.onLoaded(shard);
    this.options.logger.info(
      {
        shard: shard.partition,
        shardEpoch: shard.shardEpoch,
        groups: shard.groupIds().length,
        recordsEndOffset: position.toString(),
        loadMs: Date.now() - startedMs,
      },
      'offsets shard loaded',
    );
  }

  /** Replays [from, to) of the shard's partition; returns where it stopped (`to`). */
  private async replayRange(shard: OffsetsShard, from: bigint, to: bigint): Promise<bigint> {
    let position = from;
    while (position < to && shard.state === ShardState.Loading) {
      const fetched = await this.options.leaders.fetch(
        consumerOffsetsTopic,
        shard.partition,
        position,
        Date.now() + loadStepTimeoutMs,
      );
      if (fetched.records.length === 0) {
        if (fetched.highWatermark >= to) {
          throw new SpoolError(
            'COORDINATOR_NOT_AVAILABLE',
            `${consumerOffsetsTopic}-${shard.partition} returned nothing at offset ${position} below ${to}`,
          );
        }
        await sleep(50);
        continue;
      }
      const nowMs = Date.now();
      const { entries, nextOffset } = decodeOffsetsBatches(
        fetched.records,
        `${consumerOffsetsTopic}-${shard.partition}`,
      );
      for (const replayed of entries) {
        if (replayed.offset < position) continue;
        if (replayed.offset >= to) return to;
        shard.replay(replayed, nowMs);
      }
      if (nextOffset <= position) {
        throw new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `${consumerOffsetsTopic}-${shard.partition} answered batches ending before offset ${position}`,
        );
      }
      position = nextOffset;
    }
    return position > to ? position : to;
  }

  /**
   * The shard serving `groupId`: NOT_COORDINATOR when it is not ours, COORDINATOR_LOAD_IN_PROGRESS
   * while it loads.
   */
  shardFor(groupId: string): OffsetsShard {
    const shardCount = this.options.link.metadata.coordinatorShardCount;
    if (shardCount === 0) {
      throw new SpoolError(
        'COORDINATOR_NOT_AVAILABLE',
        'the coordinator shards are not known yet; retry shortly',
      );
    }
    const partition = groupPartition(groupId, shardCount);
    const shard = this.shards.get(partition);
    if (shard === undefined) {
      const owner = this.options.link.metadata.shardOwner(partition)?.coordinatorId ?? 'none';
      throw new SpoolError(
        'NOT_COORDINATOR',
        `group "${groupId}" lives on shard ${partition}, which this coordinator ` +
          `(${this.options.coordinatorId}) does not own (owner: ${owner})`,
      );
    }
    if (shard.state === ShardState.Loading) {
      if (this.awaitingTopic.has(shard)) this.createOffsetsTopic();
      throw new SpoolError(
        'COORDINATOR_LOAD_IN_PROGRESS',
        `shard ${partition} of group "${groupId}" is still loading`,
      );
    }
    return shard;
  }

  /**
   * Appends entries to the shard's partition (acks=all) in the shard's write order, then runs
   * `afterWrite` (in that same order, so memory follows the log). Point 3 on failure.
   */
  write(
    shard: OffsetsShard,
    entries: readonly OffsetsEntry[],
    afterWrite: () => void = () => {},
  ): Promise<void> {
    if (entries.length === 0) {
      afterWrite();
      return Promise.resolve();
    }
    const queued = shard.enqueueWrite(async () => {
      if (shard.state !== ShardState.Active) {
        throw new SpoolError(
          'NOT_COORDINATOR',
          `shard ${shard.partition} moved before its change was written`,
        );
      }
      try {
        const baseOffset = await this.options.leaders.append(
          consumerOffsetsTopic,
          shard.partition,
          encodeOffsetsBatch(entries, shard.shardEpoch, Date.now()),
          Date.now() + offsetsWriteTimeoutMs,
        );
        shard.noteOwnWrite(baseOffset, entries.length);
        shard.entriesSinceCheckpoint += entries.length;
      } catch (error) {
        this.options.logger.error(
          { err: error, shard: shard.partition },
          'a write to __consumer_offsets failed; reloading the shard from the log',
        );
        if (this.shards.get(shard.partition) === shard && shard.state === ShardState.Active) {
          this.unload(shard, 'a write failed');
          this.startLoad(shard.partition, shard.shardEpoch);
        }
        throw new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `writing to ${consumerOffsetsTopic}-${shard.partition} failed: ${(error as Error).message}`,
          { cause: error },
        );
      }
      afterWrite();
      // Point 4, once this write has left the queue.
      setImmediate(() => this.maybeCheckpoint(shard));
    });
    if (queued === undefined) {
      return Promise.reject(
        new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `shard ${shard.partition} has too many writes pending; retry later`,
        ),
      );
    }
    return queued;
  }

  /** Point 4. */
  private maybeCheckpoint(shard: OffsetsShard): void {
    if (this.stopped || shard.state !== ShardState.Active || shard.checkpointing) return;
    if (shard.pendingWriteCount > 0) return; // The last write to finish tries again.
    const intervalEntries =
      this.options.checkpointIntervalEntries ?? checkpointIntervalEntriesDefault;
    if (shard.entriesSinceCheckpoint < Math.max(intervalEntries, shard.lastCheckpointEntries)) {
      return;
    }
    // Taken now, in the same turn as it is queued: no change can come between.
    const entries: OffsetsEntry[] = [
      { kind: 'shard-epoch', coordinatorId: this.options.coordinatorId },
      ...shard.checkpointEntries(),
    ];
    shard.checkpointing = true;
    const queued = shard.enqueueWrite(() => this.writeCheckpoint(shard, entries));
    void (queued ?? Promise.resolve())
      .catch((error: unknown) => {
        // The log is still right: a checkpoint only restates what is already there.
        this.options.logger.warn(
          { err: error, shard: shard.partition },
          'an offsets checkpoint failed; the next write tries again',
        );
      })
      .finally(() => (shard.checkpointing = false));
  }

  private async writeCheckpoint(shard: OffsetsShard, entries: OffsetsEntry[]): Promise<void> {
    if (shard.state !== ShardState.Active) return;
    const { leaders, logger } = this.options;
    const expectedOffset = shard.nextOffsetAfterOwnWrites;
    let markerOffset: bigint | undefined;
    for (let start = 0; start < entries.length; start += checkpointBatchEntriesMax) {
      const chunk = entries.slice(start, start + checkpointBatchEntriesMax);
      const baseOffset = await leaders.append(
        consumerOffsetsTopic,
        shard.partition,
        encodeOffsetsBatch(chunk, shard.shardEpoch, Date.now()),
        Date.now() + offsetsWriteTimeoutMs,
      );
      markerOffset ??= baseOffset;
      shard.noteOwnWrite(baseOffset, chunk.length);
    }
    shard.entriesSinceCheckpoint = 0;
    shard.lastCheckpointEntries = entries.length;
    if (shard.othersWrote || markerOffset === undefined || markerOffset !== expectedOffset) {
      logger.warn(
        {
          shard: shard.partition,
          markerOffset: markerOffset?.toString(),
          expectedOffset: expectedOffset?.toString(),
        },
        'another writer appended to this offsets shard; its records are kept (no deletion)',
      );
      return;
    }
    const logStartOffset = await leaders.deleteRecordsBefore(
      consumerOffsetsTopic,
      shard.partition,
      markerOffset,
      Date.now() + offsetsWriteTimeoutMs,
    );
    logger.info(
      {
        shard: shard.partition,
        entries: entries.length,
        logStartOffset: logStartOffset.toString(),
      },
      'offsets shard checkpointed',
    );
    this.options.onCheckpoint?.(shard, entries.length, logStartOffset);
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    for (const shard of [...this.shards.values()]) this.unload(shard, 'stopping');
  }
}
