import type { SpoolError } from '@spool/common';
import { backoffMs, sleep, type Logger } from '@spool/common';
import type { TopicPartition } from '@spool/protocol';
import type { ConsumerConfig, OffsetResetPolicy } from './config';
import type { ConsumerFetcher } from './consumer-fetcher';
import { coordinatorRetriableCodes, toSpoolError } from './errors';
import type { GatewayConnection } from './gateway-connection';
import {
  GroupMembership,
  type GroupSubscription,
  type MembershipHandler,
} from './group-membership';
import { OffsetCommitter, partitionKey, type TopicPartitionOffset } from './offset-committer';

/**
 * One run of a consumer as a group member: the membership (heartbeats, reconciliation), the
 * committed offsets, auto commit, and the application's rebalance callbacks, wired to the
 * consumer's fetcher. The consumer makes a session when it starts with a groupId and ends it
 * (`leave`) on stop or close.
 *
 * The application is "at" a chunk from the moment the consumer hands it over until its handler
 * returns (`beginDelivery`); a revocation waits for that (at most rebalanceTimeoutMs, after which
 * the coordinator fences the member anyway), so the offsets it commits include the message that
 * was being processed and nothing after it.
 */

export type PartitionsCallback = (partitions: TopicPartition[]) => void | Promise<void>;

/** Kafka's ConsumerRebalanceListener. */
export interface RebalanceListener {
  /** New partitions, positioned, before any of their messages is delivered. */
  readonly onPartitionsAssigned?: PartitionsCallback;
  /** Partitions given up in a rebalance or on leave, after their offsets were committed. */
  readonly onPartitionsRevoked?: PartitionsCallback;
  /**
   * Partitions that may already be someone else's (the member was fenced or evicted): nothing
   * was committed. Without it, onPartitionsRevoked is called, as Kafka's default does.
   */
  readonly onPartitionsLost?: PartitionsCallback;
}

export class ConsumerGroupSession implements MembershipHandler {
  readonly committer: OffsetCommitter;
  private readonly membership: GroupMembership;
  private autoCommitTimer: NodeJS.Timeout | undefined;
  private autoCommitInFlight: Promise<void> | undefined;
  /** Resolves when the application is done with the chunk it has. */
  private delivery: Promise<void> | undefined;

  constructor(
    connection: GatewayConnection,
    private readonly fetcher: ConsumerFetcher,
    private readonly config: ConsumerConfig,
    private readonly groupId: string,
    subscription: GroupSubscription,
    private readonly listener: RebalanceListener,
    private readonly resetPolicy: OffsetResetPolicy,
    private readonly logger: Logger,
    private readonly onFailure: (error: SpoolError) => void,
  ) {
    this.membership = new GroupMembership(connection, config, groupId, subscription, this, logger);
    this.committer = new OffsetCommitter(connection, groupId, config, logger, () =>
      this.membership.identity(),
    );
  }

  identity(): { memberId: string; memberEpoch: number } {
    return this.membership.identity();
  }

  start(): void {
    this.membership.start();
    if (this.config.enableAutoCommit) {
      this.autoCommitTimer = setInterval(() => this.autoCommit(), this.config.autoCommitIntervalMs);
      this.autoCommitTimer.unref();
    }
  }

  /** Commits (auto commit), tells the application, and leaves the group. */
  async leave(): Promise<void> {
    clearInterval(this.autoCommitTimer);
    this.autoCommitTimer = undefined;
    await this.autoCommitInFlight;
    await this.membership.leave();
  }

  /** The application takes a chunk; call the returned function once it is done with it. */
  beginDelivery(): () => void {
    let done!: () => void;
    const delivery = new Promise<void>((resolve) => (done = resolve));
    this.delivery = delivery;
    return () => {
      done();
      if (this.delivery === delivery) this.delivery = undefined;
    };
  }

  /** Manual commit: the processed offsets of every owned partition, or the offsets given. */
  async commit(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    await this.committer.commit(offsets ?? this.committer.uncommittedOffsets(), 'manual');
  }

  /** At-most-once: commit past the chunk before the application sees it. */
  async commitAhead(topic: string, partition: number, nextOffset: bigint): Promise<void> {
    this.committer.markProcessed(topic, partition, nextOffset);
    await this.committer.commit([{ topic, partition, offset: nextOffset }], 'internal');
  }

  async revokePartitions(partitions: readonly TopicPartition[]): Promise<void> {
    this.fetcher.removePartitions(partitions);
    await this.waitForDelivery();
    if (this.config.enableAutoCommit) {
      try {
        await this.committer.commit(this.committer.uncommittedOffsets(partitions), 'internal');
      } catch (error) {
        // The next owner starts from the last commit: records are delivered again, not lost.
        this.logger.warn({ err: toSpoolError(error) }, 'committing revoked partitions failed');
      }
    }
    await this.callListener('onPartitionsRevoked', partitions);
    for (const { topic, partition } of partitions) this.committer.untrack(topic, partition);
  }

  async assignPartitions(
    partitions: readonly TopicPartition[],
    isCurrent: () => boolean,
  ): Promise<void> {
    const committed = await this.fetchCommittedRetrying(partitions, isCurrent);
    if (committed === undefined || !isCurrent()) return;
    for (const { topic, partition } of partitions) {
      this.committer.track(topic, partition, committed.get(partitionKey(topic, partition)));
    }
    // Held until the callback returns, so it may seek before a message of them is delivered.
    this.fetcher.addPartitions(
      partitions.map(({ topic, partition }) => ({
        topic,
        partition,
        position: committed.get(partitionKey(topic, partition)),
        resetPolicy: this.resetPolicy,
      })),
      { held: true },
    );
    await this.callListener('onPartitionsAssigned', partitions);
    if (isCurrent()) this.fetcher.release(partitions);
  }

  async losePartitions(partitions: readonly TopicPartition[]): Promise<void> {
    this.committer.untrackAll();
    this.fetcher.removePartitions(this.fetcher.assignedPartitions());
    await this.waitForDelivery();
    if (partitions.length === 0) return;
    await this.callListener(
      this.listener.onPartitionsLost === undefined ? 'onPartitionsRevoked' : 'onPartitionsLost',
      partitions,
    );
  }

  fail(error: SpoolError): void {
    clearInterval(this.autoCommitTimer);
    this.onFailure(error);
  }

  private autoCommit(): void {
    if (this.autoCommitInFlight !== undefined) return;
    const offsets = this.committer.uncommittedOffsets();
    if (offsets.length === 0) return;
    this.autoCommitInFlight = this.committer
      .commit(offsets, 'internal')
      .catch((error: unknown) =>
        this.logger.warn({ err: toSpoolError(error) }, 'auto commit failed'),
      )
      .finally(() => (this.autoCommitInFlight = undefined));
  }

  /** The chunk being processed, at most rebalanceTimeoutMs (the coordinator fences after). */
  private async waitForDelivery(): Promise<void> {
    if (this.delivery === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.delivery,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.config.rebalanceTimeoutMs))),
    ]);
    clearTimeout(timer);
  }

  /** OffsetFetch, tried again while the coordinator moves; undefined if the partitions went. */
  private async fetchCommittedRetrying(
    partitions: readonly TopicPartition[],
    isCurrent: () => boolean,
  ): Promise<Map<string, bigint | undefined> | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.committer.fetchCommitted(partitions);
      } catch (error) {
        const failure = toSpoolError(error);
        const retriable = coordinatorRetriableCodes.has(failure.code) || failure.retriable;
        if (!retriable || attempt > this.config.retries) throw failure;
        await sleep(
          backoffMs(attempt, {
            backoffInitialMs: this.config.retryBackoffMs,
            backoffMaxMs: this.config.retryBackoffMaxMs,
          }),
        );
        if (!isCurrent()) return undefined;
      }
    }
  }

  private async callListener(
    name: keyof RebalanceListener,
    partitions: readonly TopicPartition[],
  ): Promise<void> {
    const callback = this.listener[name];
    if (callback === undefined) return;
    try {
      await callback(partitions.map(({ topic, partition }) => ({ topic, partition })));
    } catch (error) {
      // Kafka logs a listener's exception and goes on: the rebalance must complete regardless.
      this.logger.error({ err: error, groupId: this.groupId }, `${name} threw`);
    }
  }
}
