/**
 * Sends per-partition work (appends, offset lookups, record deletions) to the partitions'
 * leaders over their StorageService and collects one result per item, in the request's order.
 *
 * 1. Each round routes the items still pending from the current metadata: an unknown topic or
 *    partition is answered at once; a partition without a leader waits for the next round.
 * 2. The items of one leader go in one call; the leaders are called concurrently.
 * 3. An item the leader refused because the route was stale (NOT_LEADER_OR_FOLLOWER, ...; see
 *    rerouteCodes), and every item of a leader that could not be reached, or whose leadership
 *    the metadata moved while the call was in flight, waits for the next round; any other
 *    answer, success or error, is final.
 * 4. Between rounds the router waits for newer metadata (at most metadataWaitMsMax; the leader
 *    change it waits for comes through WatchMetadata), then backs off a little when the
 *    metadata did not move.
 * 5. At most attemptsMax rounds, all before the deadline; what is still pending then is answered
 *    with the last error it got, which is retriable.
 * 6. An item the caller marks sentOnce (an idempotent Kafka producer's batch) is routed in the
 *    first round only: if that round leaves it pending, it is answered NOT_LEADER_OR_FOLLOWER,
 *    retriable, after point 4's wait for newer metadata (so that the client's resend routes by
 *    it), and never sent again by the gateway. The client keeps up to five requests of a
 *    partition in flight and the leader takes its batches in sequence order only: had the
 *    gateway sent an earlier batch again in a later round, a later batch of the same producer,
 *    routed in its own request's first round, could reach the new leader before it and be
 *    refused OUT_OF_ORDER_SEQUENCE_NUMBER, which a client that has meanwhile seen the earlier
 *    batch acknowledged takes for records the broker lost (librdkafka stops with a fatal
 *    "sequence desynchronization"). A Kafka broker never retries for the client either: it
 *    answers NOT_LEADER_OR_FOLLOWER, and the client drains its in-flight requests and resends
 *    them in order; a batch the old leader did write is then answered by the new one as a
 *    duplicate, from the producer state it rebuilt from the replicated log.
 */
import { SpoolError, backoffMs, sleep, wireErrorOf } from '@spool/common';
import type { ProtoError } from '@spool/protocol';
import { rerouteCodes } from './reroute-codes';
import type { MetadataLink } from './metadata-link';
import { groupByLeader, partitionName, routeOf, type TopicPartitionKey } from './partition-routing';

/** Rounds per request: enough to ride out a leader election, few enough to end a bad request. */
export const routingAttemptsMax = 20;
/** How long one round waits for the controller to publish a new leader. */
const metadataWaitMsMax = 1_000;
/** Backoff cap between rounds when the metadata did not change. */
const roundBackoffMsMax = 500;

export interface LeaderCall<Item, Result> {
  /** Calls one leader with its items; one result per item, matched by topic and partition. */
  readonly send: (leaderId: number, items: Item[], remainingMs: number) => Promise<Result[]>;
  readonly errorOf: (result: Result) => ProtoError | undefined;
  readonly failed: (item: Item, error: ProtoError) => Result;
  /** Point 6: whether the item may reach a leader once only. Unset: none. */
  readonly sentOnce?: (item: Item) => boolean;
}

export async function sendToLeaders<
  Item extends TopicPartitionKey,
  Result extends TopicPartitionKey,
>(
  link: MetadataLink,
  items: readonly Item[],
  deadlineMs: number,
  call: LeaderCall<Item, Result>,
): Promise<Result[]> {
  const routing = new LeaderRouting(link, items, call);
  let pending = items.map((_, position) => position);
  for (let attempt = 1; pending.length > 0; attempt++) {
    const version = link.metadata.version;
    const { routed, retry } = routing.route(pending);
    const groups = groupByLeader(routed, (entry) => entry.leaderId);
    const retried = await Promise.all(
      [...groups].map(([leaderId, entries]) =>
        routing.send(
          leaderId,
          entries.map((entry) => entry.position),
          deadlineMs,
        ),
      ),
    );
    pending = [...retry, ...retried.flat()];
    if (pending.length === 0) break;
    // Point 5.
    const remainingMs = deadlineMs - Date.now();
    if (remainingMs <= 0 || attempt >= routingAttemptsMax) {
      routing.giveUp(pending, attempt);
      break;
    }
    // Point 4.
    const moved = await link.waitForNewerVersion(version, Math.min(remainingMs, metadataWaitMsMax));
    // Point 6.
    pending = routing.answerSentOnce(pending);
    if (pending.length === 0) break;
    if (!moved) {
      const backoffDelayMs = backoffMs(attempt, { backoffMaxMs: roundBackoffMsMax });
      await sleep(Math.min(backoffDelayMs, Math.max(0, deadlineMs - Date.now())));
    }
  }
  return routing.results();
}

/** The state of one request's routing: a result per item once it is final. */
class LeaderRouting<Item extends TopicPartitionKey, Result extends TopicPartitionKey> {
  private readonly answered: Array<Result | undefined>;
  /** The last retriable error of each item still pending, for the answer if it never succeeds. */
  private readonly lastError = new Map<number, ProtoError>();

  constructor(
    private readonly link: MetadataLink,
    private readonly items: readonly Item[],
    private readonly call: LeaderCall<Item, Result>,
  ) {
    this.answered = new Array<Result | undefined>(items.length);
  }

  /** Point 1: the leader of each pending item, or its final error, or a retry. */
  route(pending: readonly number[]): {
    routed: Array<{ position: number; leaderId: number }>;
    retry: number[];
  } {
    const routed: Array<{ position: number; leaderId: number }> = [];
    const retry: number[] = [];
    for (const position of pending) {
      const route = routeOf(this.link.metadata, this.items[position]!, 'grpc');
      if (route.kind === 'leader') routed.push({ position, leaderId: route.leaderId });
      else if (route.error.code === 'UNKNOWN_TOPIC_OR_PARTITION') {
        // The gateway's metadata is the controller's live stream: a topic or partition it does
        // not know does not exist, and waiting would only delay the answer (Produce answers it
        // at once too). The same code from a leader is a stale route and is retried.
        this.answered[position] = this.call.failed(this.items[position]!, wireErrorOf(route.error));
      } else if (this.settle(position, wireErrorOf(route.error))) retry.push(position);
    }
    return { routed, retry };
  }

  /** Points 2 and 3: one leader's call; returns the positions to retry. */
  async send(
    leaderId: number,
    positions: readonly number[],
    deadlineMs: number,
  ): Promise<number[]> {
    const retry: number[] = [];
    try {
      const answers = await this.sendUnlessMoved(leaderId, positions, deadlineMs);
      const byKey = new Map(answers.map((answer) => [keyOf(answer), answer]));
      for (const position of positions) {
        const item = this.items[position]!;
        const answer = byKey.get(keyOf(item));
        const error =
          answer === undefined
            ? {
                code: 'UNKNOWN_SERVER_ERROR',
                message: `broker ${leaderId} did not answer for ${partitionName(item)}`,
                retriable: false,
              }
            : this.call.errorOf(answer);
        if (error === undefined) this.answered[position] = answer;
        else if (this.settle(position, error, answer)) retry.push(position);
      }
    } catch (error) {
      for (const position of positions) {
        const prefix = `${partitionName(this.items[position]!)}: leader broker ${leaderId}: `;
        if (this.settle(position, wireErrorOf(error, prefix))) retry.push(position);
      }
    }
    return retry;
  }

  /**
   * Point 3's call, abandoned when the metadata moves one of its items to another leader before
   * the answer comes: a leader that is paused or cut off never answers, and waiting out the
   * deadline for it would hold the items past their new leader's election. The abandoned items
   * are retried at the new leader as after an unreachable one (an idempotent producer's retry is
   * deduplicated there; a fenced leader that wakes up can no longer commit what it appends).
   */
  private async sendUnlessMoved(
    leaderId: number,
    positions: readonly number[],
    deadlineMs: number,
  ): Promise<Result[]> {
    const items = positions.map((position) => this.items[position]!);
    let unsubscribe: () => void = () => {};
    const moved = new Promise<never>((_, reject) => {
      unsubscribe = this.link.metadata.onChange(() => {
        const item = items.find(
          (candidate) =>
            this.link.metadata.partition(candidate.topic, candidate.partition)?.leaderId !==
            leaderId,
        );
        if (item === undefined) return;
        reject(
          new SpoolError(
            'NOT_LEADER_OR_FOLLOWER',
            `the leadership of ${partitionName(item)} moved away from broker ${leaderId} ` +
              'while the call was in flight',
          ),
        );
      });
    });
    try {
      return await Promise.race([
        this.call.send(leaderId, items, Math.max(1, deadlineMs - Date.now())),
        moved,
      ]);
    } finally {
      unsubscribe();
    }
  }

  /** Point 6: answers the pending items that are sent once; returns the others. */
  answerSentOnce(pending: readonly number[]): number[] {
    const others: number[] = [];
    for (const position of pending) {
      const item = this.items[position]!;
      if (this.call.sentOnce?.(item) !== true) {
        others.push(position);
        continue;
      }
      const error = this.lastError.get(position)!;
      this.answered[position] = this.call.failed(item, {
        code: 'NOT_LEADER_OR_FOLLOWER',
        message:
          `${error.message} (${error.code}); an idempotent producer's batch is not sent again ` +
          'by the gateway: the producer resends it in sequence order',
        retriable: true,
      });
    }
    return others;
  }

  /** Point 5: what is still pending gets its last error. */
  giveUp(pending: readonly number[], attempts: number): void {
    for (const position of this.answerSentOnce(pending)) {
      const error = this.lastError.get(position)!;
      // Every reroute code is retriable in Kafka's terms (a storage node may call its own
      // FENCED_LEADER_EPOCH final): the client's retry may find the new leader.
      this.answered[position] = this.call.failed(this.items[position]!, {
        ...error,
        message: `${error.message} (gave up after ${attempts} attempts)`,
        retriable: true,
      });
    }
  }

  results(): Result[] {
    return this.answered.map((result) => result!);
  }

  /**
   * An error for an item: a stale route is remembered and retried (returns true); any other is
   * the item's final answer (the leader's own result when there is one).
   */
  private settle(position: number, error: ProtoError, answer?: Result): boolean {
    if (rerouteCodes.has(error.code)) {
      this.lastError.set(position, error);
      return true;
    }
    this.answered[position] = answer ?? this.call.failed(this.items[position]!, error);
    return false;
  }
}

function keyOf(key: TopicPartitionKey): string {
  return `${key.partition}:${key.topic}`;
}
