import { EventEmitter } from 'node:events';
import { type Logger } from '@spool/common';
import { ClientLifecycle, ClientState } from './client-lifecycle';
import { describeTopicMetadata, listTopicNames } from './cluster-topics';
import {
  resolveConsumerConfig,
  type ConsumerConfig,
  type ConsumerOptions,
  type ResolvedSpoolConfig,
} from './config';
import {
  ConsumerFetcher,
  type FetchedChunk,
  type OffsetReset,
  type PartitionAssignment,
} from './consumer-fetcher';
import { ConsumerGroupSession, type RebalanceListener } from './consumer-group-session';
import { ClientErrorCode, clientError, partitionName, toSpoolError } from './errors';
import { GatewayConnection, type GatewayCallOptions } from './gateway-connection';
import {
  checkOffset,
  checkPartition,
  isTopicPattern,
  toGroupSubscription,
} from './consumer-arguments';
import type {
  AssignedPartition,
  ConsumerRunConfig,
  ConsumerSubscription,
  EachBatchPayload,
  PartitionOffset,
  PartitionSelection,
} from './consumer-payloads';
import type { ConsumedMessage } from './message';

/**
 * The consumer, used as KafkaJS's: `subscribe` then `run({ eachMessage })`, or `for await` over
 * the consumer itself. Without a group it consumes what it is told: `assign` names partitions
 * (and optionally offsets), `subscribe` takes every partition of the topics named or matched,
 * from the beginning or the end. Nothing is committed; a restarted application seeks or assigns
 * where it wants to resume.
 *
 * With `groupId` the consumer is a member of a consumer group (Kafka's KIP-848 protocol): `run`
 * joins, the coordinator assigns partitions among the members and moves them incrementally,
 * and committed offsets say where each partition resumes (`autoOffsetReset` where none is).
 * A group subscribes by topic names or by regular expressions (joined into one), not both; the
 * coordinator matches an expression against whole topic names, as Kafka does, and picks up
 * topics created later. The rebalance callbacks of the subscription (`onPartitionsAssigned`, `onPartitionsRevoked`,
 * `onPartitionsLost`) say what this member owns. `stop` and `close` commit (with auto
 * commit), leave the group, and let the others take the partitions over at once.
 *
 * Delivery semantics of a group member:
 * - at-least-once (the default): a message counts as processed once its handler returned (or,
 *   with the iterator, once the loop asks for the next message or leaves); auto commit (every
 *   autoCommitIntervalMs, on revocation and on stop) commits only processed offsets. A crash
 *   redelivers what was processed since the last commit, never skips anything. With
 *   `enableAutoCommit: false`, call `commit()` after processing: the same guarantee, with the
 *   commit points chosen by the application.
 * - at-most-once: `commitBeforeProcessing: true` commits each chunk's offsets before its
 *   messages reach the handler, so a crash skips what was committed but not processed instead of
 *   redelivering it. By hand: `enableAutoCommit: false` and `commitOffsets` of the next offset
 *   before processing a message.
 *
 * Commits carry the member id and epoch; the coordinator refuses them from a member that is
 * not current (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), so a fenced member cannot move offsets of
 * partitions that are someone else's by now.
 *

 * `run` resolves once consumption has started; it goes on until `stop` or `close`. If a
 * handler throws, or consumption fails, the consumer stops at the message that failed (its
 * position stays there) and emits `crash` with the error; a handler's own error is passed on
 * unchanged. Handlers run one at a time, in the order the gateway delivered: a slow handler
 * holds back the credit of what it has not finished, and so the gateway.
 */

enum RunState {
  Idle = 'idle',
  Running = 'running',
}

export class Consumer {
  private readonly config: ConsumerConfig;
  private readonly lifecycle: ClientLifecycle;
  private readonly connection: GatewayConnection;
  private readonly fetcher: ConsumerFetcher;
  private readonly logger: Logger;
  private readonly emitter = new EventEmitter();
  private subscription:
    | { patterns: (string | RegExp)[]; fromBeginning: boolean; listener: RebalanceListener }
    | undefined;
  private session: ConsumerGroupSession | undefined;
  private leaving: Promise<void> | undefined;
  private isManuallyAssigned = false;
  private readonly seeksBeforeStart = new Map<string, PartitionOffset>();
  private runState = RunState.Idle;
  private runLoop: Promise<void> | undefined;
  private readonly unregister: () => void;
  private closing: Promise<void> | undefined;

  constructor(spool: ResolvedSpoolConfig, options: ConsumerOptions = {}) {
    this.config = resolveConsumerConfig(options);
    this.logger = spool.logger.child({ component: 'consumer', groupId: this.config.groupId });
    this.lifecycle = new ClientLifecycle('consumer', this.logger);
    this.connection = new GatewayConnection(
      spool.brokers,
      spool.clientId,
      this.logger,
      spool.channelCredentials,
    );
    this.fetcher = new ConsumerFetcher(this.connection, this.config, this.logger, (reset) =>
      this.emitter.emit('offsetReset', reset),
    );
    this.unregister = spool.registry?.register(this) ?? (() => {});
  }

  /** Waits until a gateway accepts a connection; optional, `run` connects on first use. */
  async connect(): Promise<void> {
    this.lifecycle.ensureOpen('connect');
    await this.connection.waitForReady(this.config.requestTimeoutMs);
    if (this.lifecycle.state === ClientState.Created) {
      this.lifecycle.transitionTo([ClientState.Created], ClientState.Connected);
    }
  }

  async subscribe(subscription: ConsumerSubscription): Promise<void> {
    this.lifecycle.ensureOpen('subscribe');
    if (this.runState !== RunState.Idle) {
      throw clientError(ClientErrorCode.InvalidRequest, 'cannot subscribe while running');
    }
    if (this.isManuallyAssigned) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        'cannot subscribe: partitions were assigned',
      );
    }
    const patterns = [...(subscription.topics ?? [])];
    if (subscription.topic !== undefined) patterns.push(subscription.topic);
    if (patterns.length === 0 || !patterns.every(isTopicPattern)) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        'subscribe needs topics: topic names or regular expressions',
      );
    }
    if (this.config.groupId !== undefined) {
      const all = [...(this.subscription?.patterns ?? []), ...patterns];
      if (
        all.some((pattern) => pattern instanceof RegExp) &&
        all.some((p) => typeof p === 'string')
      ) {
        // KIP-848 subscribes a member by topic names or by one expression, not both.
        throw clientError(
          ClientErrorCode.InvalidRequest,
          'a group subscription takes topic names or regular expressions, not both',
        );
      }
      const flagged = patterns.find((pattern) => pattern instanceof RegExp && pattern.flags !== '');
      if (flagged !== undefined) {
        // The coordinator matches topic names itself and receives only the expression's source.
        throw clientError(
          ClientErrorCode.InvalidRequest,
          `a group subscription's regular expression cannot have flags, got ${String(flagged)}`,
        );
      }
    }
    const previous = this.subscription?.patterns ?? [];
    const { onPartitionsAssigned, onPartitionsRevoked, onPartitionsLost } = subscription;
    this.subscription = {
      patterns: [...previous, ...patterns],
      fromBeginning: subscription.fromBeginning ?? this.subscription?.fromBeginning ?? false,
      listener: {
        ...this.subscription?.listener,
        ...(onPartitionsAssigned === undefined ? {} : { onPartitionsAssigned }),
        ...(onPartitionsRevoked === undefined ? {} : { onPartitionsRevoked }),
        ...(onPartitionsLost === undefined ? {} : { onPartitionsLost }),
      },
    };
  }

  /** Consume exactly these partitions, without a group; replaces any earlier assignment. */
  assign(partitions: readonly AssignedPartition[]): void {
    this.lifecycle.ensureOpen('assign');
    if (this.config.groupId !== undefined) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `cannot assign: the consumer is a member of group ${this.config.groupId}, whose ` +
          'coordinator assigns its partitions; subscribe instead, or consume without groupId',
      );
    }
    if (this.subscription !== undefined) {
      throw clientError(ClientErrorCode.InvalidRequest, 'cannot assign: the consumer subscribed');
    }
    for (const assigned of partitions) {
      checkPartition(assigned.topic, assigned.partition);
      if (assigned.offset !== undefined)
        checkOffset(assigned.topic, assigned.partition, assigned.offset);
    }
    this.isManuallyAssigned = true;
    this.fetcher.assign(
      partitions.map((assigned) => ({
        topic: assigned.topic,
        partition: assigned.partition,
        position: assigned.offset,
        resetPolicy: this.config.autoOffsetReset,
      })),
    );
  }

  /** The partitions being consumed (after `assign`, or once `run` resolved a subscription). */
  assignment(): { topic: string; partition: number }[] {
    return this.fetcher.assignedPartitions();
  }

  async run(handlers: ConsumerRunConfig): Promise<void> {
    const { eachMessage, eachBatch } = handlers;
    if ((eachMessage === undefined) === (eachBatch === undefined)) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        'run needs exactly one of eachMessage, eachBatch',
      );
    }
    await this.start();
    this.runLoop = this.consumeLoop(handlers)
      .catch((error: unknown) => this.crash(error))
      .finally(() => {
        this.runState = RunState.Idle;
        this.runLoop = undefined;
      });
  }

  /**
   * Messages one by one; breaking out of the loop stops the consumer (and leaves the group). A
   * message counts as processed once the loop asks for the next one, or leaves, as Kafka's
   * close counts what poll returned.
   */
  async *messages(): AsyncGenerator<ConsumedMessage, void, undefined> {
    await this.start();
    try {
      for (;;) {
        const chunk = await this.fetcher.next();
        if (chunk === undefined) return;
        const done = this.session?.beginDelivery();
        let inHand: ConsumedMessage | undefined;
        try {
          if (!(await this.commitAheadIfAtMostOnce(chunk))) continue;
          let delivered = 0;
          for (const message of chunk.messages) {
            if (!this.fetcher.shouldDeliver(chunk)) break;
            inHand = message;
            yield message;
            inHand = undefined;
            this.markProcessed(chunk, message.offset + 1n);
            delivered += 1;
          }
          this.finishChunk(chunk, delivered === chunk.messages.length);
        } finally {
          if (inHand !== undefined) this.markProcessed(chunk, inHand.offset + 1n);
          done?.();
        }
      }
    } catch (error) {
      throw toSpoolError(error);
    } finally {
      this.fetcher.stop();
      await this.leaveGroup();
      this.runState = RunState.Idle;
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<ConsumedMessage, void, undefined> {
    return this.messages();
  }

  /** The next message of the partition will be at `offset`; applies at once while running. */
  seek(target: PartitionOffset): void {
    checkPartition(target.topic, target.partition);
    checkOffset(target.topic, target.partition, target.offset);
    const isAssigned = this.fetcher
      .assignedPartitions()
      .some(
        (assigned) => assigned.topic === target.topic && assigned.partition === target.partition,
      );
    if (isAssigned) {
      this.fetcher.seek(target.topic, target.partition, target.offset);
    } else if (this.config.groupId !== undefined) {
      // The coordinator decides what this member owns: a seek waits for nothing.
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `cannot seek ${partitionName(target.topic, target.partition)}: group ` +
          `${this.config.groupId} has not assigned it to this member; seek in onPartitionsAssigned`,
      );
    } else {
      this.seeksBeforeStart.set(partitionName(target.topic, target.partition), target);
    }
  }

  pause(selections: readonly PartitionSelection[]): void {
    for (const { topic, partition } of this.select(selections)) {
      this.fetcher.setPaused(topic, partition, true);
    }
  }

  resume(selections: readonly PartitionSelection[]): void {
    for (const { topic, partition } of this.select(selections)) {
      this.fetcher.setPaused(topic, partition, false);
    }
  }

  paused(): { topic: string; partitions: number[] }[] {
    const byTopic = new Map<string, number[]>();
    for (const { topic, partition } of this.fetcher.pausedPartitions()) {
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
    }
    return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
  }

  /** The next offset the consumer will deliver for a partition, if it has one yet. */
  position(topic: string, partition: number): bigint | undefined {
    return this.fetcher.position(topic, partition);
  }

  /**
   * `crash`: consumption stopped on an error; the listener gets the error.
   * `offsetReset`: a partition's position was out of range (past the log end or before the log
   * start: OFFSET_OUT_OF_RANGE) and autoOffsetReset moved it; the listener learns from where to
   * where. With autoOffsetReset `none` consumption fails with OFFSET_OUT_OF_RANGE instead.
   */
  on(event: 'crash', listener: (error: Error) => void): this;
  on(event: 'offsetReset', listener: (reset: OffsetReset) => void): this;
  on(
    event: 'crash' | 'offsetReset',
    listener: ((error: Error) => void) | ((reset: OffsetReset) => void),
  ): this {
    this.emitter.on(event, listener);
    return this;
  }

  /**
   * Commits what was processed (the group's offsets, with auto commit or as `commit()`): the
   * next offset of each owned partition after the last message its handler finished.
   * STALE_MEMBER_EPOCH means the group moved on while the commit travelled: nothing was written.
   */
  async commit(): Promise<void> {
    await this.groupSession('commit').commit();
  }

  /** Commits these offsets (each the next offset to consume) for the group, as given. */
  async commitOffsets(offsets: readonly PartitionOffset[]): Promise<void> {
    for (const { topic, partition, offset } of offsets) {
      checkPartition(topic, partition);
      checkOffset(topic, partition, offset);
    }
    await this.groupSession('commit offsets').commit(offsets);
  }

  /** The group member's id and epoch, while it is a member. */
  memberIdentity(): { memberId: string; memberEpoch: number } | undefined {
    return this.session?.identity();
  }

  /** Stops `run` or the iterator after the handler in progress returns; leaves the group. */
  async stop(): Promise<void> {
    this.fetcher.stop();
    await this.runLoop;
    await this.leaveGroup();
  }

  /**
   * Stops consuming, commits (with auto commit), leaves the group, closes the connection; calls
   * after it fail CLIENT_CLOSED. Kafka's close(); a second call waits for the first.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  /** KafkaJS's name for `close`, kept as an alias. */
  disconnect(): Promise<void> {
    return this.close();
  }

  private async closeOnce(): Promise<void> {
    this.lifecycle.transitionTo([ClientState.Created, ClientState.Connected], ClientState.Closing);
    try {
      await this.stop();
    } finally {
      this.connection.close();
      this.lifecycle.transitionTo([ClientState.Closing], ClientState.Closed);
      this.unregister();
    }
  }

  private async start(): Promise<void> {
    this.lifecycle.ensureOpen('run');
    if (this.runState !== RunState.Idle) {
      throw clientError(ClientErrorCode.InvalidRequest, 'the consumer is already running');
    }
    this.runState = RunState.Running;
    try {
      if (this.config.groupId !== undefined) {
        // A session left over from a crash is left first: one membership at a time.
        await this.leaveGroup();
        this.startGroupSession(this.config.groupId);
        return;
      }
      if (this.subscription !== undefined) {
        this.fetcher.assign(await this.resolveSubscription(this.subscription));
      }
      if (this.fetcher.assignedPartitions().length === 0) {
        throw clientError(
          ClientErrorCode.InvalidRequest,
          'the consumer has no partitions: subscribe or assign first',
        );
      }
      for (const [key, target] of this.seeksBeforeStart) {
        this.seeksBeforeStart.delete(key);
        this.seek(target);
      }
      this.fetcher.start();
    } catch (error) {
      this.runState = RunState.Idle;
      throw toSpoolError(error);
    }
  }

  private async consumeLoop(handlers: ConsumerRunConfig): Promise<void> {
    for (;;) {
      const chunk = await this.fetcher.next();
      if (chunk === undefined) return;
      const done = this.session?.beginDelivery();
      try {
        if (!(await this.commitAheadIfAtMostOnce(chunk))) continue;
        let delivered = 0;
        if (handlers.eachBatch !== undefined) {
          if (chunk.messages.length > 0) await handlers.eachBatch(this.batchPayload(chunk));
          delivered = chunk.messages.length;
        } else {
          for (const message of chunk.messages) {
            if (!this.fetcher.shouldDeliver(chunk)) break;
            await handlers.eachMessage!({
              topic: chunk.topic,
              partition: chunk.partition,
              message,
            });
            this.markProcessed(chunk, message.offset + 1n);
            delivered += 1;
          }
        }
        this.finishChunk(chunk, delivered === chunk.messages.length);
      } finally {
        done?.();
      }
    }
  }

  /** The application finished the chunk's messages below `offset`. */
  private markProcessed(chunk: FetchedChunk, offset: bigint): void {
    if (!this.fetcher.isCurrent(chunk)) return;
    this.fetcher.advance(chunk, offset);
    if (this.session !== undefined && !this.config.commitBeforeProcessing) {
      this.session.committer.markProcessed(chunk.topic, chunk.partition, offset);
    }
  }

  private finishChunk(chunk: FetchedChunk, complete: boolean): void {
    if (complete) this.markProcessed(chunk, chunk.nextPosition);
    this.fetcher.finish(chunk, complete);
  }

  /**
   * At-most-once: commit past the chunk before the application sees any of it. False if the
   * chunk is no longer to be delivered (its partition was revoked while the commit travelled).
   */
  private async commitAheadIfAtMostOnce(chunk: FetchedChunk): Promise<boolean> {
    if (this.session === undefined || !this.config.commitBeforeProcessing) return true;
    if (chunk.messages.length === 0) return true;
    await this.session.commitAhead(chunk.topic, chunk.partition, chunk.nextPosition);
    if (this.fetcher.shouldDeliver(chunk)) return true;
    this.fetcher.finish(chunk, false);
    return false;
  }

  private startGroupSession(groupId: string): void {
    if (this.subscription === undefined) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `group ${groupId}: the consumer has no subscription: subscribe first`,
      );
    }
    const session = new ConsumerGroupSession(
      this.connection,
      this.fetcher,
      this.config,
      groupId,
      toGroupSubscription(this.subscription.patterns),
      this.subscription.listener,
      this.subscription.fromBeginning ? 'earliest' : this.config.autoOffsetReset,
      this.logger,
      (error) => this.fetcher.fail(error),
    );
    this.session = session;
    this.fetcher.start();
    session.start();
  }

  /** Leaves once: `stop` and the iterator's end may both ask, and both wait for it. */
  private async leaveGroup(): Promise<void> {
    if (this.leaving !== undefined) return this.leaving;
    const session = this.session;
    if (session === undefined) return;
    this.session = undefined;
    this.leaving = session.leave().finally(() => (this.leaving = undefined));
    await this.leaving;
  }

  private groupSession(operation: string): ConsumerGroupSession {
    this.lifecycle.ensureOpen(operation);
    if (this.config.groupId === undefined) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `cannot ${operation}: offsets are committed for a group, and the consumer has no groupId`,
      );
    }
    if (this.session === undefined) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `cannot ${operation}: the consumer is not running in group ${this.config.groupId}`,
      );
    }
    return this.session;
  }

  private batchPayload(chunk: FetchedChunk): EachBatchPayload {
    const messages = chunk.messages;
    return {
      batch: {
        topic: chunk.topic,
        partition: chunk.partition,
        highWatermark: chunk.highWatermark,
        messages,
        firstOffset: () => messages[0]?.offset ?? null,
        lastOffset: () => messages.at(-1)?.offset ?? chunk.nextPosition - 1n,
      },
      isRunning: () => this.runState === RunState.Running && this.lifecycle.isOpen,
      isStale: () => !this.fetcher.isCurrent(chunk),
    };
  }

  private crash(error: unknown): void {
    this.fetcher.stop();
    const reported = error instanceof Error ? error : toSpoolError(error);
    if (this.emitter.listenerCount('crash') > 0) {
      this.emitter.emit('crash', reported);
    } else {
      this.logger.error({ err: reported }, 'the consumer stopped on an error');
    }
  }

  private async resolveSubscription(subscription: {
    patterns: (string | RegExp)[];
    fromBeginning: boolean;
  }): Promise<PartitionAssignment[]> {
    const callOptions = this.callOptions();
    const names = new Set(subscription.patterns.filter((pattern) => typeof pattern === 'string'));
    const expressions = subscription.patterns.filter((pattern) => pattern instanceof RegExp);
    if (expressions.length > 0) {
      for (const name of await listTopicNames(this.connection, false, callOptions)) {
        if (
          expressions.some((expression) =>
            new RegExp(expression.source, expression.flags.replace('g', '')).test(name),
          )
        ) {
          names.add(name);
        }
      }
    }
    const topics = await describeTopicMetadata(this.connection, [...names], callOptions);
    const resetPolicy = subscription.fromBeginning ? 'earliest' : this.config.autoOffsetReset;
    return topics.flatMap((topic) =>
      topic.partitions.map((partition) => ({
        topic: topic.name,
        partition: partition.partition,
        resetPolicy,
      })),
    );
  }

  private select(
    selections: readonly PartitionSelection[],
  ): { topic: string; partition: number }[] {
    const assigned = this.fetcher.assignedPartitions();
    return selections.flatMap((selection) =>
      selection.partitions === undefined
        ? assigned.filter((candidate) => candidate.topic === selection.topic)
        : selection.partitions.map((partition) => ({ topic: selection.topic, partition })),
    );
  }

  private callOptions(): GatewayCallOptions {
    return {
      deadlineMs: this.config.requestTimeoutMs,
      attempts: this.config.retries + 1,
      backoffInitialMs: this.config.retryBackoffMs,
      backoffMaxMs: this.config.retryBackoffMaxMs,
    };
  }
}
