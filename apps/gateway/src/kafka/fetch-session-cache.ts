/**
 * Fetch sessions (KIP-227), Kafka's FetchSession.scala without the I/O: a consumer that fetches
 * the same partitions again and again names them once, in a full fetch, and from then on sends
 * only what changed (incremental fetches); the broker answers only the partitions with something
 * new. One cache per gateway, as one per Kafka broker: the sessions of every connection.
 *
 * 1. A request's (session id, epoch) says what it is, as Kafka's FetchMetadata reads it:
 *    - (0, -1): a sessionless full fetch; no session is created.
 *    - (0, 0): a full fetch that asks for a new session.
 *    - (id, -1): closes session id, then a sessionless full fetch.
 *    - (id, 0): closes session id, then a full fetch that asks for a new session.
 *    - (id, epoch > 0): an incremental fetch in session id. An unknown id is
 *      FETCH_SESSION_ID_NOT_FOUND; an epoch other than the session's is
 *      INVALID_FETCH_SESSION_EPOCH; a session made with topic names used with topic ids or the
 *      other way round (the version crossed 13) is FETCH_SESSION_TOPIC_ID_ERROR. None of these
 *      fetches anything, and the answer carries session id 0.
 * 2. An incremental fetch adds the partitions it names that the session lacks, replaces the
 *    fetch state (offset, max bytes, epochs) of those it has, then drops its forgotten ones, and
 *    fetches every partition of the session. A session left empty is removed and the fetch
 *    answered sessionless. The session's epoch moves on when the request is accepted, so a
 *    second request with the same epoch is refused.
 * 3. A full fetch that asks for a session gets one once it is answered, when a slot is free or
 *    one can be evicted (point 5); otherwise its answer carries session id 0 and the client goes
 *    on with full fetches. Each partition's high watermark and log start offset are remembered.
 * 4. An incremental answer holds only the partitions that must be sent (Kafka's
 *    CachedPartition.maybeUpdateResponseData): records, an error, or a high watermark or log
 *    start offset that differs from the one last sent. An error forgets the cached high
 *    watermark, so the partition is sent again once the error is gone. Partitions sent move to
 *    the end of the session's order, so the next fetch's bytes go to the others first. If the
 *    session's epoch moved while the fetch ran, the answer is INVALID_FETCH_SESSION_EPOCH.
 * 5. At most slotsMax sessions. A new one may take the slot of the least recently used session
 *    if that one has been idle for evictionMs, or else of the smallest session (fewest
 *    partitions, then lowest id) created more than evictionMs ago, if the new one has strictly
 *    more partitions (Kafka's tryEvict; no client here is a privileged follower).
 *
 * Everything is synchronous: a session is read and written between two awaits of the caller,
 * and the epoch check of point 4 catches a session that moved during the fetch.
 */
import { assert } from '@spool/common';

/** Kafka's FetchMetadata: the session id of "no session". */
export const invalidSessionId = 0;
/** The epoch of a full fetch that asks for a session. */
export const initialSessionEpoch = 0;
/** The epoch of a full fetch that wants no session, or closes one. */
export const finalSessionEpoch = -1;

/** Kafka's min.incremental.fetch.session.eviction.ms: how long a session is safe from eviction. */
export const fetchSessionEvictionMsDefault = 120_000;
/** Kafka's max.incremental.fetch.session.cache.slots default. */
export const fetchSessionSlotsMaxDefault = 1_000;

/** Kafka's error numbers for the session errors. */
export const FetchSessionError = {
  FetchSessionIdNotFound: 70,
  InvalidFetchSessionEpoch: 71,
  FetchSessionTopicIdError: 106,
} as const;

/**
 * What a fetch asks of one partition. `topicKey` names the topic as the request does: its name
 * below version 13, its id (hex) from 13 on; `fetch` is the request's state, kept opaque.
 */
export interface SessionPartitionRequest<Fetch> {
  readonly topicKey: string;
  readonly partition: number;
  readonly fetch: Fetch;
}

/** A partition's answer, as far as the session cares. */
export interface SessionPartitionAnswer {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
  readonly recordsBytes: number;
}

/** One partition of a session: the request state and what was last sent. */
export interface CachedPartition<Fetch> {
  readonly topicKey: string;
  readonly partition: number;
  fetch: Fetch;
  highWatermark: bigint;
  logStartOffset: bigint;
}

export interface FetchSession<Fetch> {
  readonly id: number;
  /** The epoch the next incremental request must carry. */
  epoch: number;
  readonly usesTopicIds: boolean;
  readonly creationMs: number;
  lastUsedMs: number;
  /** In the order the next fetch gives out bytes (point 4); keys by partitionKey(). */
  readonly partitions: Map<string, CachedPartition<Fetch>>;
}

/** What a request turns into (point 1). */
export type FetchSessionContext<Fetch> =
  | { readonly kind: 'error'; readonly errorCode: number }
  | {
      readonly kind: 'full';
      readonly createSession: boolean;
      readonly partitions: ReadonlyArray<SessionPartitionRequest<Fetch>>;
    }
  | {
      readonly kind: 'incremental';
      readonly session: FetchSession<Fetch>;
      /** The epoch the request carried. */
      readonly requestEpoch: number;
      /** Every partition of the session, in its order. */
      readonly partitions: ReadonlyArray<CachedPartition<Fetch>>;
    };

export interface FetchSessionRequest<Fetch> {
  readonly sessionId: number;
  readonly sessionEpoch: number;
  readonly usesTopicIds: boolean;
  readonly partitions: ReadonlyArray<SessionPartitionRequest<Fetch>>;
  readonly forgotten: ReadonlyArray<{ readonly topicKey: string; readonly partition: number }>;
}

export interface FetchSessionCacheOptions {
  readonly slotsMax: number;
  readonly evictionMs: number;
  /** Called once per session evicted to make room (a metric). */
  readonly onEviction?: () => void;
  /** Session ids; random int32s by default, as Kafka's. */
  readonly nextRandomId?: () => number;
}

/** Draws of a random session id before giving up (never reached with random ids). */
const sessionIdDrawsMax = 1_000;

function partitionKey(topicKey: string, partition: number): string {
  return `${topicKey}\u0000${partition}`;
}

/** Kafka's FetchMetadata.nextEpoch. */
export function nextSessionEpoch(epoch: number): number {
  if (epoch < 0) return finalSessionEpoch;
  return epoch === 0x7fffffff ? 1 : epoch + 1;
}

function randomSessionId(): number {
  return Math.floor(Math.random() * 0x7fffffff) + 1;
}

export class FetchSessionCache<Fetch> {
  private readonly sessions = new Map<number, FetchSession<Fetch>>();
  private partitionsCachedCount = 0;

  constructor(private readonly options: FetchSessionCacheOptions) {
    assert(options.slotsMax >= 0, 'slotsMax must not be negative');
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Partitions held by every session (Kafka's NumIncrementalFetchPartitionsCached). */
  get partitionsCached(): number {
    return this.partitionsCachedCount;
  }

  session(id: number): FetchSession<Fetch> | undefined {
    return this.sessions.get(id);
  }

  /** Point 1, and point 2 for an incremental request. */
  newContext(request: FetchSessionRequest<Fetch>, nowMs: number): FetchSessionContext<Fetch> {
    const isFull =
      request.sessionEpoch === initialSessionEpoch || request.sessionEpoch === finalSessionEpoch;
    if (isFull) {
      if (request.sessionId !== invalidSessionId) this.remove(request.sessionId);
      return {
        kind: 'full',
        createSession: request.sessionEpoch === initialSessionEpoch,
        partitions: request.partitions,
      };
    }
    const session = this.sessions.get(request.sessionId);
    if (session === undefined) {
      return { kind: 'error', errorCode: FetchSessionError.FetchSessionIdNotFound };
    }
    if (session.epoch !== request.sessionEpoch) {
      return { kind: 'error', errorCode: FetchSessionError.InvalidFetchSessionEpoch };
    }
    if (session.usesTopicIds !== request.usesTopicIds) {
      return { kind: 'error', errorCode: FetchSessionError.FetchSessionTopicIdError };
    }
    // Point 2.
    for (const wanted of request.partitions) {
      const key = partitionKey(wanted.topicKey, wanted.partition);
      const cached = session.partitions.get(key);
      if (cached !== undefined) {
        cached.fetch = wanted.fetch;
      } else {
        session.partitions.set(key, {
          topicKey: wanted.topicKey,
          partition: wanted.partition,
          fetch: wanted.fetch,
          highWatermark: -1n,
          logStartOffset: -1n,
        });
        this.partitionsCachedCount += 1;
      }
    }
    for (const gone of request.forgotten) {
      if (session.partitions.delete(partitionKey(gone.topicKey, gone.partition))) {
        this.partitionsCachedCount -= 1;
      }
    }
    if (session.partitions.size === 0) {
      this.remove(session.id);
      return { kind: 'full', createSession: false, partitions: request.partitions };
    }
    session.lastUsedMs = nowMs;
    session.epoch = nextSessionEpoch(session.epoch);
    return {
      kind: 'incremental',
      session,
      requestEpoch: request.sessionEpoch,
      partitions: [...session.partitions.values()],
    };
  }

  /**
   * Point 3: after a full fetch that asked for a session, makes one from its partitions and
   * their answers (same order); the session id to answer with, 0 when there is no room.
   */
  maybeCreateSession(
    context: Extract<FetchSessionContext<Fetch>, { kind: 'full' }>,
    answers: readonly SessionPartitionAnswer[],
    usesTopicIds: boolean,
    nowMs: number,
  ): number {
    assert(answers.length === context.partitions.length, 'one answer per partition');
    if (!context.createSession || context.partitions.length === 0) return invalidSessionId;
    if (this.sessions.size >= this.options.slotsMax) {
      if (!this.tryEvict(context.partitions.length, nowMs)) return invalidSessionId;
    }
    const partitions = new Map<string, CachedPartition<Fetch>>();
    context.partitions.forEach((wanted, index) => {
      const answer = answers[index]!;
      partitions.set(partitionKey(wanted.topicKey, wanted.partition), {
        topicKey: wanted.topicKey,
        partition: wanted.partition,
        fetch: wanted.fetch,
        highWatermark: answer.errorCode === 0 ? answer.highWatermark : -1n,
        logStartOffset: answer.logStartOffset,
      });
    });
    const id = this.unusedSessionId();
    this.sessions.set(id, {
      id,
      epoch: nextSessionEpoch(initialSessionEpoch),
      usesTopicIds,
      creationMs: nowMs,
      lastUsedMs: nowMs,
      partitions,
    });
    this.partitionsCachedCount += partitions.size;
    return id;
  }

  /**
   * Point 4: which of an incremental fetch's partitions (answers in the context's order) go in
   * the answer, in order; or the error when the session moved on meanwhile.
   */
  completeIncremental(
    context: Extract<FetchSessionContext<Fetch>, { kind: 'incremental' }>,
    answers: readonly SessionPartitionAnswer[],
  ): { readonly errorCode: number; readonly included: readonly number[] } {
    assert(answers.length === context.partitions.length, 'one answer per partition');
    const { session } = context;
    if (
      this.sessions.get(session.id) !== session ||
      session.epoch !== nextSessionEpoch(context.requestEpoch)
    ) {
      return { errorCode: FetchSessionError.InvalidFetchSessionEpoch, included: [] };
    }
    const included: number[] = [];
    context.partitions.forEach((cached, index) => {
      const key = partitionKey(cached.topicKey, cached.partition);
      // A partition forgotten by a later request is no longer this session's.
      if (session.partitions.get(key) !== cached) return;
      if (mustRespond(cached, answers[index]!)) {
        included.push(index);
        session.partitions.delete(key);
        session.partitions.set(key, cached);
      }
    });
    return { errorCode: 0, included };
  }

  private remove(id: number): void {
    const session = this.sessions.get(id);
    if (session === undefined) return;
    this.sessions.delete(id);
    this.partitionsCachedCount -= session.partitions.size;
  }

  /** Point 5. */
  private tryEvict(newSize: number, nowMs: number): boolean {
    let leastRecentlyUsed: FetchSession<Fetch> | undefined;
    let smallestEvictable: FetchSession<Fetch> | undefined;
    for (const session of this.sessions.values()) {
      if (leastRecentlyUsed === undefined || session.lastUsedMs < leastRecentlyUsed.lastUsedMs) {
        leastRecentlyUsed = session;
      }
      if (nowMs - session.creationMs <= this.options.evictionMs) continue;
      if (
        smallestEvictable === undefined ||
        session.partitions.size < smallestEvictable.partitions.size ||
        (session.partitions.size === smallestEvictable.partitions.size &&
          session.id < smallestEvictable.id)
      ) {
        smallestEvictable = session;
      }
    }
    let victim: FetchSession<Fetch> | undefined;
    if (
      leastRecentlyUsed !== undefined &&
      nowMs - leastRecentlyUsed.lastUsedMs > this.options.evictionMs
    ) {
      victim = leastRecentlyUsed;
    } else if (smallestEvictable !== undefined && newSize > smallestEvictable.partitions.size) {
      victim = smallestEvictable;
    }
    if (victim === undefined) return false;
    this.remove(victim.id);
    this.options.onEviction?.();
    return true;
  }

  /** At most slotsMax of 2^31 ids are taken, so a free one turns up within a few draws. */
  private unusedSessionId(): number {
    const next = this.options.nextRandomId ?? randomSessionId;
    for (let attempt = 0; attempt < sessionIdDrawsMax; attempt += 1) {
      const id = next();
      if (id !== invalidSessionId && !this.sessions.has(id)) return id;
    }
    throw new Error(`no unused fetch session id in ${sessionIdDrawsMax} draws`);
  }
}

/** Point 4: Kafka's CachedPartition.maybeUpdateResponseData, updating what was last sent. */
function mustRespond(cached: CachedPartition<unknown>, answer: SessionPartitionAnswer): boolean {
  let respond = answer.recordsBytes > 0;
  if (cached.highWatermark !== answer.highWatermark) {
    respond = true;
    cached.highWatermark = answer.highWatermark;
  }
  if (cached.logStartOffset !== answer.logStartOffset) {
    respond = true;
    cached.logStartOffset = answer.logStartOffset;
  }
  if (answer.errorCode !== 0) {
    respond = true;
    cached.highWatermark = -1n;
  }
  return respond;
}
