/**
 * What the data port's FETCH and OFFSET_FOR_LEADER_EPOCH mean on this node (Kafka's fetch path
 * and its delayed-fetch purgatory):
 *
 *   1. Each partition must be led here, at the request's leader epoch when it names one.
 *   2. A consumer reads up to the high watermark; a follower (replicaId ≥ 0) up to the log end,
 *      and its fetch offset tells the leader how far it has replicated.
 *   3. Records stay within partitionMaxBytes per partition and maxBytes in all, except that the
 *      first batch of the first partition with data comes whole (KIP-74), so a fetch always moves.
 *   4. With fewer than minBytes, the fetch waits (at most maxWaitMs) and reads again whenever an
 *      involved partition gets records or a new HW, or until the connection closes.
 *   5. A v1 request of a follower goes through its fetch session (fetch-session.ts): only the
 *      partitions it names or that changed are read, and an idle wait costs nothing per
 *      partition. A consumer's v1 request gets no session and is served as v0.
 *   6. A follower that a reassignment adds to a partition, or one out of the ISR that the topic's
 *      leader.replication.throttled.replicas names (throttled-replicas.ts), reads within the
 *      leader's throttle: while the node's bytes sent to such replicas are over the rate, their
 *      partitions answer
 *      no records (their fetch offset still counts), as Kafka's leader leaves throttled
 *      partitions out of a fetch response over quota.
 */
import type { RequestOutcome } from '@spool/common';
import {
  dataPortPartitionsMax,
  type DataPortFetchPartition,
  type DataPortFetchRequest,
  type DataPortFetchSessionResponse,
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  fetchSessionEpochFinal,
  fetchSessionEpochInitial,
  fetchSessionIdNone,
} from '@spool/protocol';
import type { DataPortHandlers, FetchPartitionResult, FetchResult } from './data-port-handlers';
import { FetchSessionCache, type FetchSession, type SessionPartition } from './fetch-session';
import { waitForAnyChange, type PartitionReplica } from '../replica/partition-replica';
import type { ReplicaManager } from '../replica/replica-manager';
import type { ReplicationThrottle } from '../replica/replication-throttle';
import type { StorageMetrics } from '../storage-metrics';

/** A long poll never waits longer than this, whatever it asks (Kafka's fetch.max.wait.ms bound). */
export const fetchMaxWaitMsMax = 30_000;

export interface FetchHandlerOptions {
  readonly replicas: () => ReplicaManager;
  readonly metrics: StorageMetrics;
  /** A follower's fetch reached the leader (replication hooks ISR changes here). */
  readonly onFollowerFetch?: (
    replica: PartitionReplica,
    followerId: number,
    fetchOffset: bigint,
  ) => void;
  /** The fetch sessions of this leader; a new cache if unset. */
  readonly sessions?: FetchSessionCache;
  /**
   * The leader side of the reassignment throttle (Kafka's leader.replication.throttled.rate):
   * point 6. None: unthrottled.
   */
  readonly leaderThrottle?: {
    readonly throttle: ReplicationThrottle;
    /** Whether the throttle holds this follower's replica (throttled-replicas.ts). */
    isThrottledReplica(topic: string, partition: number, replicaId: number): boolean;
    onThrottled?(): void;
  };
}

export interface FetchHandlers extends DataPortHandlers {
  /** The fetch sessions followers hold here (closed when the node stops). */
  readonly sessions: FetchSessionCache;
}

function errorFields(error: unknown): { errorCode: string; errorMessage: string } {
  const coded = error as { code?: unknown; message?: unknown };
  return {
    errorCode: typeof coded.code === 'string' ? coded.code : 'UNKNOWN_SERVER_ERROR',
    errorMessage: typeof coded.message === 'string' ? coded.message : String(error),
  };
}

/** One partition read: its answer, the replica it came from, and the release of its files. */
interface PartitionRead {
  readonly result: FetchPartitionResult;
  readonly replica: PartitionReplica | undefined;
  readonly release: () => void;
}

/** A fetch's byte budget across its partitions (points 3 and KIP-74). */
interface ReadBudget {
  remainingBytes: number;
  firstData: boolean;
}

const noSession: DataPortFetchSessionResponse = {
  errorCode: '',
  errorMessage: '',
  sessionId: fetchSessionIdNone,
};

export function createFetchHandlers(options: FetchHandlerOptions): FetchHandlers {
  const sessions = options.sessions ?? new FetchSessionCache();

  const notThrottled = { applies: false, overQuota: false };
  /** Point 6: whether the throttle applies to this follower's partition, and holds it back. */
  const leaderThrottled = (
    wanted: DataPortFetchPartition,
    replicaId: number,
  ): { applies: boolean; overQuota: boolean } => {
    const leader = options.leaderThrottle;
    if (leader === undefined || !leader.throttle.enabled)
      return { applies: false, overQuota: false };
    if (!leader.isThrottledReplica(wanted.topic, wanted.partition, replicaId)) {
      return { applies: false, overQuota: false };
    }
    const overQuota = leader.throttle.delayMs() > 0;
    if (overQuota) leader.onThrottled?.();
    return { applies: true, overQuota };
  };

  /** Points 1–3 and 6 for one partition. */
  const readPartition = (
    wanted: DataPortFetchPartition,
    replicaId: number,
    budget: ReadBudget,
    api: string,
    session?: FetchSession,
  ): PartitionRead => {
    const base = {
      topic: wanted.topic,
      partition: wanted.partition,
      errorCode: '',
      errorMessage: '',
      highWatermark: -1n,
      logStartOffset: -1n,
      logEndOffset: -1n,
      slices: [],
      sizeBytes: 0,
    };
    let replica: PartitionReplica | undefined;
    try {
      replica = options.replicas().require(wanted.topic, wanted.partition);
      replica.ensureLeader();
      replica.checkLeaderEpoch(wanted.currentLeaderEpoch);
      const follower = replicaId >= 0;
      if (follower) {
        options.onFollowerFetch?.(replica, replicaId, wanted.fetchOffset);
        // After the fetch is recorded: the session speaks for the partition from this read on.
        if (session !== undefined) replica.attachFetchSession(replicaId, session.clock);
      }
      const throttled = follower ? leaderThrottled(wanted, replicaId) : notThrottled;
      const maxBytes = throttled.overQuota
        ? 0
        : Math.min(Math.max(0, wanted.partitionMaxBytes), budget.remainingBytes);
      const read = replica.log.read(wanted.fetchOffset, maxBytes, {
        maxOffsetExclusive: follower ? replica.log.logEndOffset : replica.highWatermark,
        minOneBatch: budget.firstData && !throttled.overQuota,
      });
      if (throttled.applies) options.leaderThrottle?.throttle.record(read.sizeBytes);
      if (read.sizeBytes > 0) budget.firstData = false;
      budget.remainingBytes = Math.max(0, budget.remainingBytes - read.sizeBytes);
      return {
        result: {
          ...base,
          highWatermark: replica.highWatermark,
          logStartOffset: replica.log.logStartOffset,
          logEndOffset: replica.log.logEndOffset,
          slices: read.slices,
          sizeBytes: read.sizeBytes,
        },
        replica,
        release: () => read.release(),
      };
    } catch (error) {
      const fields = errorFields(error);
      options.metrics.requests.errors.inc({ api, code: fields.errorCode });
      replica ??= options.replicas().get(wanted.topic, wanted.partition);
      return {
        result: {
          ...base,
          ...fields,
          highWatermark: replica?.highWatermark ?? -1n,
          logStartOffset: replica?.log.logStartOffset ?? -1n,
          logEndOffset: replica?.log.logEndOffset ?? -1n,
        },
        replica,
        release: () => undefined,
      };
    }
  };

  const resultOf = (
    reads: readonly PartitionRead[],
    session?: DataPortFetchSessionResponse,
  ): FetchResult => {
    let released = false;
    return {
      partitions: reads.map((read) => read.result),
      ...(session === undefined ? {} : { session }),
      release: () => {
        if (released) return;
        released = true;
        for (const read of reads) read.release();
      },
    };
  };

  /** Points 1–4 without a session: every named partition, every round. */
  const fetchSessionless = async (
    request: DataPortFetchRequest,
    signal: AbortSignal,
    api: string,
    session?: DataPortFetchSessionResponse,
  ): Promise<FetchResult> => {
    const deadline = Date.now() + Math.min(Math.max(0, request.maxWaitMs), fetchMaxWaitMsMax);
    for (;;) {
      const budget: ReadBudget = { remainingBytes: Math.max(0, request.maxBytes), firstData: true };
      const reads = request.partitions.map((wanted) =>
        readPartition(wanted, request.replicaId, budget, api),
      );
      const result = resultOf(reads, session);
      const involved = new Set<PartitionReplica>();
      for (const read of reads) if (read.replica !== undefined) involved.add(read.replica);
      const total = reads.reduce((sum, read) => sum + read.result.sizeBytes, 0);
      const failed = reads.some((read) => read.result.errorCode !== '');
      const remainingMs = deadline - Date.now();
      const enough = total >= Math.max(0, request.minBytes);
      if (enough || failed || remainingMs <= 0 || signal.aborted || involved.size === 0) {
        return result;
      }
      // Nothing yet: let go of the files and wait for any involved partition to change.
      // The read above and this registration run in one turn, so no change falls between.
      result.release();
      await waitForAnyChange(involved, remainingMs, signal);
    }
  };

  /** Point 5: a follower's fetch through its session, by fetch-session.ts's points. */
  const fetchInSession = async (
    request: DataPortFetchRequest,
    session: FetchSession,
    full: boolean,
    signal: AbortSignal,
    api: string,
  ): Promise<FetchResult> => {
    const deadline = Date.now() + Math.min(Math.max(0, request.maxWaitMs), fetchMaxWaitMsMax);
    const named = session.update(
      request.partitions,
      request.session?.forgottenPartitions ?? [],
      (held) =>
        options
          .replicas()
          .get(held.topic, held.partition)
          ?.detachFetchSession(session.replicaId, session.clock),
    );
    const candidates = new Set<SessionPartition>(full ? session.partitions.values() : named);
    for (const held of named) candidates.add(held);
    for (;;) {
      for (const held of session.takeDirty()) candidates.add(held);
      const budget: ReadBudget = { remainingBytes: Math.max(0, request.maxBytes), firstData: true };
      const answered: PartitionRead[] = [];
      const unanswered: SessionPartition[] = [];
      let total = 0;
      let failed = false;
      for (const held of candidates) {
        if (answered.length >= dataPortPartitionsMax) {
          unanswered.push(held);
          continue;
        }
        const read = readPartition(held, request.replicaId, budget, api, session);
        if (read.replica !== undefined && read.result.errorCode === '') {
          session.listen(held, read.replica);
        }
        const changed =
          full ||
          read.result.sizeBytes > 0 ||
          read.result.errorCode !== '' ||
          read.result.highWatermark !== held.sentHighWatermark ||
          read.result.logStartOffset !== held.sentLogStartOffset;
        if (!changed) {
          read.release();
          continue;
        }
        answered.push(read);
        total += read.result.sizeBytes;
        failed ||= read.result.errorCode !== '';
      }
      const remainingMs = deadline - Date.now();
      const enough = total >= Math.max(0, request.minBytes);
      if (enough || failed || remainingMs <= 0 || signal.aborted) {
        settleAnswered(session, candidates, answered, unanswered);
        return resultOf(answered, { errorCode: '', errorMessage: '', sessionId: session.id });
      }
      for (const read of answered) read.release();
      await session.waitForChange(remainingMs, signal);
    }
  };

  /** Points 3 and 4: what the session sent, and what must go in its next response. */
  const settleAnswered = (
    session: FetchSession,
    candidates: ReadonlySet<SessionPartition>,
    answered: readonly PartitionRead[],
    unanswered: readonly SessionPartition[],
  ): void => {
    const sentRecords = new Set<string>();
    for (const read of answered) {
      const name = `${read.result.topic}-${read.result.partition}`;
      if (read.result.sizeBytes > 0) sentRecords.add(name);
      const held = session.partitions.get(name);
      if (held === undefined) continue;
      held.sentHighWatermark = read.result.highWatermark;
      held.sentLogStartOffset = read.result.logStartOffset;
    }
    for (const held of unanswered) session.markDirty(held);
    // Only partitions read now can have records waiting unsent: any other was clean, and an
    // append since would have made it dirty.
    for (const held of candidates) {
      const replica = held.listenedReplica;
      if (replica === undefined || sentRecords.has(held.name)) continue;
      if (held.fetchOffset < replica.log.logEndOffset) session.markDirty(held);
    }
  };

  /** Point 5: finds or makes the request's session; an answer instead when there is none. */
  const sessionFor = (
    request: DataPortFetchRequest,
  ): { session: FetchSession; full: boolean } | { answer: DataPortFetchSessionResponse } => {
    const { sessionId, sessionEpoch } = request.session!;
    const nowMs = Date.now();
    if (sessionEpoch === fetchSessionEpochInitial) {
      if (sessionId !== fetchSessionIdNone) sessions.remove(sessionId);
      const session = sessions.create(request.replicaId, nowMs);
      session.beginFetch(sessionEpoch, nowMs);
      return { session, full: true };
    }
    const session = sessions.get(sessionId);
    if (session === undefined) {
      return {
        answer: {
          errorCode: 'FETCH_SESSION_ID_NOT_FOUND',
          errorMessage: `no fetch session ${sessionId} on this leader; start a new one`,
          sessionId: fetchSessionIdNone,
        },
      };
    }
    if (session.replicaId !== request.replicaId || sessionEpoch !== session.nextEpoch) {
      return {
        answer: {
          errorCode: 'INVALID_FETCH_SESSION_EPOCH',
          errorMessage:
            `fetch session ${sessionId} of broker ${session.replicaId} expects epoch ` +
            `${session.nextEpoch}, got ${sessionEpoch} from broker ${request.replicaId}`,
          sessionId: fetchSessionIdNone,
        },
      };
    }
    session.beginFetch(sessionEpoch, nowMs);
    return { session, full: false };
  };

  const fetchWithSessionFields = (
    request: DataPortFetchRequest,
    signal: AbortSignal,
    api: string,
  ): Promise<FetchResult> => {
    const { sessionId, sessionEpoch } = request.session!;
    // A consumer gets no session; a follower that asks for none, or closes one, neither.
    if (request.replicaId < 0 || sessionEpoch === fetchSessionEpochFinal) {
      if (request.replicaId >= 0 && sessionId !== fetchSessionIdNone) sessions.remove(sessionId);
      return fetchSessionless(request, signal, api, noSession);
    }
    const found = sessionFor(request);
    if ('answer' in found) return Promise.resolve(resultOf([], found.answer));
    return fetchInSession(request, found.session, found.full, signal, api);
  };

  return {
    sessions,

    fetch: async (request, signal) => {
      // Kafka's request names: replica fetches and consumer fetches are watched apart.
      const api = request.replicaId >= 0 ? 'FetchFollower' : 'FetchConsumer';
      const end = options.metrics.requests.begin(api, { timed: true });
      // Partition errors are counted as they are read, so a served fetch adds none here.
      let outcome: RequestOutcome = { response: undefined };
      try {
        return await (request.session === undefined
          ? fetchSessionless(request, signal, api)
          : fetchWithSessionFields(request, signal, api));
      } catch (error) {
        outcome = { error };
        throw error;
      } finally {
        end(outcome);
      }
    },

    offsetForLeaderEpoch: async (
      request: DataPortOffsetForLeaderEpochRequest,
    ): Promise<DataPortOffsetForLeaderEpochResponse> => {
      const api = 'OffsetForLeaderEpoch';
      const end = options.metrics.requests.begin(api, { timed: true });
      const response = {
        partitions: request.partitions.map((wanted) => {
          try {
            const replica = options.replicas().require(wanted.topic, wanted.partition);
            replica.ensureLeader();
            replica.checkLeaderEpoch(wanted.currentLeaderEpoch);
            const answer = replica.log.endOffsetForLeaderEpoch(wanted.leaderEpoch);
            return {
              topic: wanted.topic,
              partition: wanted.partition,
              errorCode: '',
              errorMessage: '',
              leaderEpoch: answer.epoch,
              endOffset: answer.endOffset,
            };
          } catch (error) {
            const fields = errorFields(error);
            options.metrics.requests.errors.inc({ api, code: fields.errorCode });
            return {
              topic: wanted.topic,
              partition: wanted.partition,
              ...fields,
              leaderEpoch: -1,
              endOffset: -1n,
            };
          }
        }),
      };
      end({ response: undefined });
      return response;
    },
  };
}
