/**
 * One Consume stream: the gateway long-polls the leaders of the subscribed partitions and pushes
 * their batches while the client's credit lasts, so a slow consumer holds the stream back
 * instead of growing the gateway's memory.
 *
 * 1. The first ConsumeRequest subscribes: partitions with fetch offsets, each named once. An
 *    unknown topic or partition is answered at once with its error and left out. Later requests
 *    only grant credit; one that names partitions ends the stream with INVALID_REQUEST.
 * 2. Credit is kept by a CreditAccount: fetches reserve it before they go out and settle it with
 *    what they pushed. No credit, no fetch.
 * 3. Idle partitions are fetched per leader: one data-port fetch per leader, long-polling up to
 *    consumePollWaitMs for its partitions, with a fair share of the available credit.
 * 4. A response pushes the whole batches that fit the fetch's reservation (the first comes whole,
 *    Kafka's KIP-74, so credit may go below zero by one batch) and moves each partition's
 *    position to lastOffset + 1 of its last pushed batch, read from the batch header alone. Bytes
 *    past the reservation are dropped and fetched again later.
 * 5. A retriable partition error (a leader moving) is retried after newer metadata or a backoff
 *    without bothering the client; any other is pushed and the partition leaves the stream.
 * 6. No fetch starts while a push waits for gRPC to drain, so a stream holds at most one push
 *    beyond what the transport buffers, whatever credit the client granted.
 * 7. Each fetch at a leader is timed from going out until its records are written to the stream
 *    (or it came back empty after the long poll), as Kafka times a FetchConsumer request: what
 *    an operator reads as the consumers' fetch latency.
 * 8. The stream ends when the client ends or cancels it, or the gateway stops it (its error is
 *    then the stream's status); fetches still polling are abandoned.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { SpoolError, wireErrorOf, type Logger } from '@spool/common';
import type {
  ConsumeRequest,
  ConsumeResponse,
  FetchedPartition,
  FetchPartition,
} from '@spool/protocol';
import { batchSpan } from './batch-spans';
import { CreditAccount } from './credit-account';
import { emptyPartition, fetchedFromLeader, partitionFetchBytesDefault } from './fetch-handler';
import { rerouteCodes } from './reroute-codes';
import { FetchAbandoned, type LeaderFetcher } from './leader-fetcher';
import type { MetadataLink } from './metadata-link';
import { duplicatePositions, groupByLeader, partitionName, routeOf } from './partition-routing';

/** A leader holds a stream's fetch this long when it has nothing: a new leader is noticed soon. */
export const consumePollWaitMs = 500;
/** Partitions one stream may subscribe to: one stream's fetches stay of a bounded size. */
export const consumePartitionsMax = 10_000;
/** How long a partition waits after a retriable error when no newer metadata wakes it first. */
const consumeRetryBackoffMs = 200;
/** How often a sleeping stream looks again anyway (a missed wake-up costs at most this). */
const consumeIdleCheckMs = 1_000;

export interface ConsumeDependencies {
  readonly link: MetadataLink;
  readonly fetcher: LeaderFetcher;
  /** Bytes one push carries at most, besides the first batch's overdraft (fetchMaxBytes). */
  readonly fetchMaxBytes: number;
  readonly consumeCreditBytesMax: number;
  readonly logger: Logger;
  readonly onPartitionError?: (code: string) => void;
  readonly onBytesPushed?: (sizeBytes: number) => void;
  /**
   * A fetch at a leader was answered and what it brought was written to the stream: its time
   * from going out, long-poll wait included. One call per fetch, never per record.
   */
  readonly onFetchServed?: (durationSeconds: number) => void;
}

const SessionState = {
  /** Waiting for the first ConsumeRequest. */
  Subscribing: 'subscribing',
  Streaming: 'streaming',
  Ended: 'ended',
} as const;
type SessionState = (typeof SessionState)[keyof typeof SessionState];

interface Subscription {
  readonly topic: string;
  readonly partition: number;
  readonly partitionMaxBytes: number;
  /** The next offset to fetch. */
  position: bigint;
  /** True while a fetch for the partition is out. */
  fetching: boolean;
  /** The earliest time of the next fetch, after a retriable error. */
  retryAtMs: number;
}

export class ConsumeSession {
  private state: SessionState = SessionState.Subscribing;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly credit: CreditAccount;
  private readonly abandon = new AbortController();
  private failure: unknown;
  private pushesDraining = 0;
  private wakePending = false;
  private wakeSleeper: (() => void) | undefined;
  private endedSignal: () => void = () => {};
  private readonly ended = new Promise<void>((resolve) => (this.endedSignal = resolve));

  constructor(
    private readonly call: ServerDuplexStream<ConsumeRequest, ConsumeResponse>,
    private readonly dependencies: ConsumeDependencies,
  ) {
    this.credit = new CreditAccount(dependencies.consumeCreditBytesMax);
  }

  /** Serves the stream until it ends; rejects with the error that ended it, if any. */
  async run(): Promise<void> {
    const unsubscribe = this.dependencies.link.metadata.onChange(() => this.wake());
    this.call.on('data', (request: ConsumeRequest) => this.onRequest(request));
    this.call.on('end', () => this.end());
    this.call.on('cancelled', () => this.end());
    this.call.on('error', () => this.end());
    try {
      while (this.state !== SessionState.Ended) {
        if (this.state === SessionState.Streaming) this.startFetches();
        await this.sleep(this.nextRetryDelayMs());
      }
    } finally {
      unsubscribe();
      this.abandon.abort();
    }
    if (this.failure !== undefined) throw this.failure;
  }

  /** Ends the stream with `error` as its status (the gateway is stopping). */
  stop(error: unknown): void {
    this.failure ??= error;
    this.end();
  }

  private transitionTo(allowedFrom: readonly SessionState[], next: SessionState): void {
    if (!allowedFrom.includes(this.state)) return;
    this.dependencies.logger.debug(
      { peer: this.call.getPeer(), from: this.state, to: next },
      'consume stream state',
    );
    this.state = next;
  }

  /** A method, not a field test, so the compiler does not assume it unchanged across an await. */
  private hasEnded(): boolean {
    return this.state === SessionState.Ended;
  }

  private end(): void {
    this.transitionTo([SessionState.Subscribing, SessionState.Streaming], SessionState.Ended);
    this.abandon.abort();
    this.endedSignal();
    this.wake();
  }

  private onRequest(request: ConsumeRequest): void {
    try {
      if (this.state === SessionState.Subscribing) {
        this.subscribe(request.partitions);
      } else if (request.partitions.length > 0) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `partitions may only be named in the first ConsumeRequest of a stream; a later one ` +
            `named ${request.partitions.length}`,
        );
      }
      this.credit.grant(request.creditBytes);
    } catch (error) {
      this.stop(error);
    }
    this.wake();
  }

  /** Point 1. */
  private subscribe(partitions: readonly FetchPartition[]): void {
    if (partitions.length === 0) {
      throw new SpoolError(
        'INVALID_REQUEST',
        'the first ConsumeRequest of a stream must name the partitions to consume; it named none',
      );
    }
    if (partitions.length > consumePartitionsMax) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `the ConsumeRequest names ${partitions.length} partitions; a stream may consume at most ` +
          `${consumePartitionsMax}`,
      );
    }
    const duplicates = duplicatePositions(partitions);
    const refused: FetchedPartition[] = [];
    partitions.forEach((wanted, position) => {
      const name = partitionName(wanted);
      if (duplicates.has(position)) {
        throw new SpoolError('INVALID_REQUEST', `${name} appears more than once in partitions`);
      }
      if (wanted.fetchOffset < 0n) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `partitions[${position}].fetch_offset of ${name} is ${wanted.fetchOffset}; it must not ` +
            'be negative',
        );
      }
      const route = routeOf(this.dependencies.link.metadata, wanted, 'data');
      if (route.kind === 'failed' && route.error.code === 'UNKNOWN_TOPIC_OR_PARTITION') {
        refused.push(emptyPartition(wanted, wireErrorOf(route.error)));
        this.dependencies.onPartitionError?.(route.error.code);
        return;
      }
      this.subscriptions.set(keyOf(wanted), {
        topic: wanted.topic,
        partition: wanted.partition,
        partitionMaxBytes:
          wanted.partitionMaxBytes > 0 ? wanted.partitionMaxBytes : partitionFetchBytesDefault,
        position: wanted.fetchOffset,
        fetching: false,
        retryAtMs: 0,
      });
    });
    this.transitionTo([SessionState.Subscribing], SessionState.Streaming);
    if (refused.length > 0) void this.push({ partitions: refused });
  }

  /** Points 2, 3 and 6. */
  private startFetches(): void {
    if (this.pushesDraining > 0 || this.credit.available <= 0) return;
    const nowMs = Date.now();
    const routed: Array<{ subscription: Subscription; leaderId: number }> = [];
    for (const subscription of this.subscriptions.values()) {
      if (subscription.fetching || subscription.retryAtMs > nowMs) continue;
      const route = routeOf(this.dependencies.link.metadata, subscription, 'data');
      if (route.kind === 'leader') {
        routed.push({ subscription, leaderId: route.leaderId });
      } else if (rerouteCodes.has(route.error.code)) {
        subscription.retryAtMs = nowMs + consumeRetryBackoffMs;
      } else {
        // The topic was deleted, or shrank, while the stream read it.
        this.leave(subscription, emptyPartition(subscription, wireErrorOf(route.error)));
      }
    }
    const groups = groupByLeader(routed, (entry) => entry.leaderId);
    let shares = groups.size;
    for (const [leaderId, entries] of groups) {
      const reservedBytes = this.credit.reserve(shares--, this.dependencies.fetchMaxBytes);
      if (reservedBytes === 0) break;
      const subscriptions = entries.map((entry) => entry.subscription);
      for (const subscription of subscriptions) subscription.fetching = true;
      void this.fetchFrom(leaderId, subscriptions, reservedBytes);
    }
  }

  /** Points 4, 5 and 7. */
  private async fetchFrom(
    leaderId: number,
    subscriptions: readonly Subscription[],
    reservedBytes: number,
  ): Promise<void> {
    let pushedBytes = 0;
    const startedMs = performance.now();
    const abandon = this.fetchAbandonment(leaderId, subscriptions);
    try {
      const response = await this.dependencies.fetcher.fetch(
        leaderId,
        {
          maxWaitMs: consumePollWaitMs,
          minBytes: 1,
          maxBytes: reservedBytes,
          partitions: subscriptions.map((subscription) => ({
            topic: subscription.topic,
            partition: subscription.partition,
            fetchOffset: subscription.position,
            partitionMaxBytes: subscription.partitionMaxBytes,
          })),
        },
        abandon.signal,
      );
      if (this.state === SessionState.Ended) return;
      const pushes: FetchedPartition[] = [];
      for (const answer of response.partitions) {
        const subscription = this.subscriptions.get(keyOf(answer));
        if (subscription === undefined || !subscriptions.includes(subscription)) continue;
        const fetched = fetchedFromLeader(answer);
        if (fetched.error !== undefined) {
          if (fetched.error.retriable) {
            subscription.retryAtMs = Date.now() + consumeRetryBackoffMs;
          } else {
            this.leave(subscription);
            pushes.push(fetched);
            this.dependencies.onPartitionError?.(fetched.error.code);
          }
          continue;
        }
        const span = batchSpan(answer.records, reservedBytes - pushedBytes, {
          keepFirstBatch: pushedBytes === 0,
        });
        if (span.nextOffset === undefined) continue;
        pushes.push({ ...fetched, records: answer.records.subarray(0, span.sizeBytes) });
        pushedBytes += span.sizeBytes;
        if (span.nextOffset > subscription.position) subscription.position = span.nextOffset;
      }
      if (pushes.length > 0) await this.push({ partitions: pushes });
      // A push cut short by the stream's end is not a fetch served.
      if (!this.hasEnded()) {
        this.dependencies.onFetchServed?.((performance.now() - startedMs) / 1_000);
      }
    } catch (error) {
      if (error instanceof FetchAbandoned) return;
      this.dependencies.logger.debug(
        { err: error, leaderId, peer: this.call.getPeer() },
        'consume fetch failed; retrying',
      );
      for (const subscription of subscriptions) {
        subscription.retryAtMs = Date.now() + consumeRetryBackoffMs;
      }
    } finally {
      abandon.release();
      this.credit.settle(reservedBytes, pushedBytes);
      for (const subscription of subscriptions) subscription.fetching = false;
      this.wake();
    }
  }

  /**
   * What abandons a fetch from `leaderId`: the stream ending, or the metadata moving one of its
   * partitions to another leader while it waits. A paused or cut-off leader never answers, and
   * the fetch would hold its partitions for the poll wait plus the fetch's slack (over ten
   * seconds) after their new leader was elected; abandoned, they are fetched from it at once.
   */
  private fetchAbandonment(
    leaderId: number,
    subscriptions: readonly Subscription[],
  ): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    const onEnded = (): void => controller.abort();
    if (this.abandon.signal.aborted) controller.abort();
    this.abandon.signal.addEventListener('abort', onEnded, { once: true });
    const metadata = this.dependencies.link.metadata;
    const unsubscribe = metadata.onChange(() => {
      const moved = subscriptions.some(
        (subscription) =>
          metadata.partition(subscription.topic, subscription.partition)?.leaderId !== leaderId,
      );
      if (moved) controller.abort();
    });
    return {
      signal: controller.signal,
      release: () => {
        unsubscribe();
        this.abandon.signal.removeEventListener('abort', onEnded);
      },
    };
  }

  /** A partition leaves the stream; `answer`, when given, tells the client why. */
  private leave(subscription: Subscription, answer?: FetchedPartition): void {
    this.subscriptions.delete(keyOf(subscription));
    if (answer !== undefined) {
      if (answer.error !== undefined) this.dependencies.onPartitionError?.(answer.error.code);
      void this.push({ partitions: [answer] });
    }
  }

  /** Point 6: writes one response and waits for gRPC to take it before fetching again. */
  private async push(response: ConsumeResponse): Promise<void> {
    if (this.state === SessionState.Ended) return;
    this.pushesDraining++;
    try {
      const sizeBytes = response.partitions.reduce((sum, entry) => sum + entry.records.length, 0);
      this.dependencies.onBytesPushed?.(sizeBytes);
      if (!this.call.write(response)) {
        await Promise.race([
          new Promise<void>((resolve) => this.call.once('drain', () => resolve())),
          this.ended,
        ]);
      }
    } finally {
      this.pushesDraining--;
      this.wake();
    }
  }

  private nextRetryDelayMs(): number {
    const nowMs = Date.now();
    let delayMs = consumeIdleCheckMs;
    for (const subscription of this.subscriptions.values()) {
      if (subscription.retryAtMs > nowMs)
        delayMs = Math.min(delayMs, subscription.retryAtMs - nowMs);
    }
    return delayMs;
  }

  private wake(): void {
    if (this.wakeSleeper === undefined) this.wakePending = true;
    else this.wakeSleeper();
  }

  private sleep(durationMs: number): Promise<void> {
    if (this.wakePending) {
      this.wakePending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), durationMs);
      const done = (): void => {
        clearTimeout(timer);
        this.wakeSleeper = undefined;
        resolve();
      };
      this.wakeSleeper = done;
    });
  }
}

function keyOf(key: { topic: string; partition: number }): string {
  return `${key.partition}:${key.topic}`;
}
