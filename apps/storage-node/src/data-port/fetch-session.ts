/**
 * Fetch sessions, leader side (Kafka's FetchSession and FetchSessionCache, KIP-227). A follower
 * fetches every partition it follows from this leader through one session, so an idle round
 * costs nothing per partition:
 *
 *   1. The session holds each partition's fetch position (fetchOffset, leader epoch, log start,
 *      max bytes) as last sent. A request names only partitions that are new or whose position
 *      changed, and those to forget; the others are fetched again at their held position.
 *   2. The leader reads a partition only when the request names it or it changed since the
 *      session last read it: each read partition registers one wake-up on its replica (the
 *      next append, high watermark move or role change), which marks it dirty and wakes the
 *      session's waiting fetch. An idle fetch reads nothing and waits for a wake-up or its
 *      maxWaitMs: no timer or callback per partition per round.
 *   3. A response names only partitions with records, an error, or a high watermark or log
 *      start offset it has not sent yet (a full fetch, epoch 0, names them all), at most
 *      dataPortPartitionsMax; the rest stay dirty for the next response.
 *   4. A partition read without records while records wait (maxBytes ran out) stays dirty.
 *   5. Each request carries the epoch after the previous one's; anything else answers
 *      INVALID_FETCH_SESSION_EPOCH, an unknown id FETCH_SESSION_ID_NOT_FOUND, and the follower
 *      starts over with a full fetch (it does the same after any failed request, since it cannot
 *      know what the leader applied).
 *
 * Liveness for the ISR: a partition the session holds is fetched by every request of the session
 * without being read, so the leader cannot learn "caught up now" from a read. The session's clock
 * says when it last fetched (now, while a fetch waits here); a follower at the leader's log end
 * whose partition is held by an open session was caught up then (partition-replica.ts,
 * followerLastCaughtUpTimeMs).
 *
 * Bounds: sessions are for followers only (a consumer's fetch gets no session), one per follower
 * broker (a new one replaces its predecessor: a follower has one fetcher per leader), at most
 * fetchSessionSlotsMax in all (the least recently used goes first), each holding at most
 * fetchSessionPartitionsMax partitions.
 *
 * Interleaving: everything here is synchronous except the wait; a wake-up between a read and the
 * wait is not lost, because the read and the wake-up's registration happen in one turn and the
 * wait checks the dirty set before it sleeps.
 */
import type { DataPortFetchPartition } from '@spool/protocol';
import type { FetchSessionClock, PartitionReplica } from '../replica/partition-replica';

/** Sessions a leader keeps (Kafka's max.incremental.fetch.session.cache.slots default). */
export const fetchSessionSlotsMax = 1_000;
/**
 * Partitions one session holds: every partition a follower follows from this leader, over
 * several requests when more than one request may name (dataPortPartitionsMax). About 200 bytes
 * each, so a full session is some 40 MB; a follower of more is not held past it (its extra
 * partitions are still answered when named, but not woken by appends).
 */
export const fetchSessionPartitionsMax = 200_000;

/** One partition a session holds, with what it last told the follower about it. */
export interface SessionPartition {
  readonly topic: string;
  readonly partition: number;
  readonly name: string;
  fetchOffset: bigint;
  currentLeaderEpoch: number;
  logStartOffset: bigint;
  partitionMaxBytes: number;
  /** What the session last answered for the partition; undefined until it answered. */
  sentHighWatermark: bigint | undefined;
  sentLogStartOffset: bigint | undefined;
  /** The replica a wake-up is registered on, and its cancel; undefined while none is. */
  listenedReplica: PartitionReplica | undefined;
  cancelListen: (() => void) | undefined;
}

class SessionClock implements FetchSessionClock {
  open = true;
  lastFetchTimeMs = 0;
  previousFetchTimeMs = 0;
  waitingFetches = 0;

  fetchTimeMs(nowMs: number): number {
    return this.waitingFetches > 0 ? nowMs : this.lastFetchTimeMs;
  }
}

export class FetchSession {
  readonly partitions = new Map<string, SessionPartition>();
  /** The epoch the next request must carry (point 5). */
  nextEpoch = 1;
  lastUsedMs: number;
  private readonly dirty = new Set<SessionPartition>();
  private readonly clockValue = new SessionClock();
  private wakeWaiter: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly replicaId: number,
    nowMs: number,
  ) {
    this.lastUsedMs = nowMs;
  }

  get clock(): FetchSessionClock {
    return this.clockValue;
  }

  get isOpen(): boolean {
    return this.clockValue.open;
  }

  /** A request of this session arrived: its epoch was right. */
  beginFetch(epoch: number, nowMs: number): void {
    this.nextEpoch = epoch >= 0x7fffffff ? 1 : epoch + 1;
    this.lastUsedMs = nowMs;
    this.clockValue.previousFetchTimeMs = this.clockValue.lastFetchTimeMs;
    this.clockValue.lastFetchTimeMs = nowMs;
  }

  /**
   * Point 1: takes the request's partitions into the session and drops the forgotten ones.
   * Returns the partitions the request named, which this fetch must read. Partitions past
   * fetchSessionPartitionsMax are not taken; they are returned too, so each is answered.
   */
  update(
    requested: readonly DataPortFetchPartition[],
    forgotten: readonly { topic: string; partition: number }[],
    onForget: (held: SessionPartition) => void,
  ): SessionPartition[] {
    for (const { topic, partition } of forgotten) {
      const held = this.partitions.get(`${topic}-${partition}`);
      if (held === undefined) continue;
      this.forget(held);
      onForget(held);
    }
    const named: SessionPartition[] = [];
    for (const wanted of requested) {
      const name = `${wanted.topic}-${wanted.partition}`;
      let held = this.partitions.get(name);
      if (held === undefined) {
        held = {
          topic: wanted.topic,
          partition: wanted.partition,
          name,
          fetchOffset: wanted.fetchOffset,
          currentLeaderEpoch: wanted.currentLeaderEpoch,
          logStartOffset: wanted.logStartOffset,
          partitionMaxBytes: wanted.partitionMaxBytes,
          sentHighWatermark: undefined,
          sentLogStartOffset: undefined,
          listenedReplica: undefined,
          cancelListen: undefined,
        };
        if (this.partitions.size < fetchSessionPartitionsMax) this.partitions.set(name, held);
      } else {
        held.fetchOffset = wanted.fetchOffset;
        held.currentLeaderEpoch = wanted.currentLeaderEpoch;
        held.logStartOffset = wanted.logStartOffset;
        held.partitionMaxBytes = wanted.partitionMaxBytes;
      }
      named.push(held);
    }
    return named;
  }

  /** Point 2: the partitions that changed since they were read, emptied. */
  takeDirty(): SessionPartition[] {
    const taken = [...this.dirty];
    this.dirty.clear();
    return taken;
  }

  /** Points 3 and 4: the partition must be read again by the next fetch. */
  markDirty(held: SessionPartition): void {
    if (!this.partitions.has(held.name)) return;
    this.dirty.add(held);
    const wake = this.wakeWaiter;
    this.wakeWaiter = undefined;
    wake?.();
  }

  /**
   * Point 2: registers one wake-up on the replica the partition was just read from, unless one
   * is registered there already. A partition the session no longer holds registers none.
   */
  listen(held: SessionPartition, replica: PartitionReplica): void {
    if (!this.partitions.has(held.name)) return;
    if (held.listenedReplica === replica && held.cancelListen !== undefined) return;
    held.cancelListen?.();
    held.listenedReplica = replica;
    held.cancelListen = replica.onNextChange(() => {
      held.cancelListen = undefined;
      held.listenedReplica = undefined;
      this.markDirty(held);
    });
  }

  /**
   * Waits until a held partition is dirty, `timeoutMs` passed or `signal` aborted. While it
   * waits the follower counts as fetching now (the clock).
   */
  async waitForChange(timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.dirty.size > 0 || timeoutMs <= 0 || signal.aborted) return;
    this.clockValue.waitingFetches++;
    try {
      await new Promise<void>((resolve) => {
        const finish = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', finish);
          if (this.wakeWaiter === finish) this.wakeWaiter = undefined;
          resolve();
        };
        const timer = setTimeout(finish, timeoutMs);
        signal.addEventListener('abort', finish, { once: true });
        // One fetch of a session waits at a time; a newer one takes the wake-up over.
        const previous = this.wakeWaiter;
        this.wakeWaiter = finish;
        previous?.();
      });
    } finally {
      this.clockValue.waitingFetches--;
      this.clockValue.lastFetchTimeMs = Math.max(this.clockValue.lastFetchTimeMs, Date.now());
    }
  }

  /** Ends the session: no wake-ups stay registered, and its clock stops counting. */
  close(): void {
    this.clockValue.open = false;
    for (const held of this.partitions.values()) held.cancelListen?.();
    this.partitions.clear();
    this.dirty.clear();
    const wake = this.wakeWaiter;
    this.wakeWaiter = undefined;
    wake?.();
  }

  private forget(held: SessionPartition): void {
    held.cancelListen?.();
    held.cancelListen = undefined;
    held.listenedReplica = undefined;
    this.partitions.delete(held.name);
    this.dirty.delete(held);
  }
}

/** The sessions of one leader, by id (Kafka's FetchSessionCache), bounded as the header says. */
export class FetchSessionCache {
  private readonly sessions = new Map<number, FetchSession>();
  private nextId: number;

  constructor(
    private readonly slotsMax = fetchSessionSlotsMax,
    firstId = 1 + Math.floor(Math.random() * 0x3fffffff),
  ) {
    this.nextId = firstId;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** A new session for a follower, replacing the follower's previous one. */
  create(replicaId: number, nowMs: number): FetchSession {
    for (const session of [...this.sessions.values()]) {
      if (session.replicaId === replicaId) this.remove(session.id);
    }
    while (this.sessions.size >= this.slotsMax) {
      const leastRecentlyUsed = this.sessions.keys().next().value as number;
      this.remove(leastRecentlyUsed);
    }
    const session = new FetchSession(this.takeId(), replicaId, nowMs);
    this.sessions.set(session.id, session);
    return session;
  }

  /** The session, now the most recently used; undefined when unknown. */
  get(id: number): FetchSession | undefined {
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  remove(id: number): void {
    const session = this.sessions.get(id);
    if (session === undefined) return;
    this.sessions.delete(id);
    session.close();
  }

  /** Closes every session (the node stops). */
  clear(): void {
    for (const id of [...this.sessions.keys()]) this.remove(id);
  }

  private takeId(): number {
    for (;;) {
      const id = this.nextId;
      this.nextId = id >= 0x7fffffff ? 1 : id + 1;
      if (!this.sessions.has(id)) return id;
    }
  }
}
