// Proves the fetch session cache (KIP-227) transition by transition, synchronously, against
// Kafka's FetchSession rules: how (session id, epoch) make a request full, incremental or an
// error; partitions added, updated and forgotten; incremental answers that leave out unchanged
// partitions and rotate the ones sent to the end; epochs that refuse replays; and eviction by
// staleness and by size with slots full.
import { describe, expect, it } from 'vitest';
import {
  FetchSessionCache,
  FetchSessionError,
  type FetchSessionContext,
  type SessionPartitionAnswer,
  nextSessionEpoch,
} from './fetch-session-cache';

type Context = FetchSessionContext<number>;
const evictionMs = 1_000;

function cacheOf(slotsMax = 10, ids = [11, 12, 13, 14, 15]) {
  let evictions = 0;
  const queue = [...ids];
  const cache = new FetchSessionCache<number>({
    slotsMax,
    evictionMs,
    onEviction: () => (evictions += 1),
    nextRandomId: () => queue.shift() ?? 99,
  });
  return { cache, evictions: () => evictions };
}

function part(partition: number, fetch = 0, topicKey = 't') {
  return { topicKey, partition, fetch };
}

function answer(highWatermark: bigint, recordsBytes = 0, errorCode = 0): SessionPartitionAnswer {
  return { errorCode, highWatermark, logStartOffset: 0n, recordsBytes };
}

/** A full fetch of these partitions asking for a session, answered with these answers. */
function openSession(
  cache: FetchSessionCache<number>,
  partitions: number[],
  nowMs = 0,
  answers = partitions.map(() => answer(10n)),
): number {
  const context = cache.newContext(
    {
      sessionId: 0,
      sessionEpoch: 0,
      usesTopicIds: false,
      partitions: partitions.map((p) => part(p)),
      forgotten: [],
    },
    nowMs,
  );
  expect(context.kind).toBe('full');
  return cache.maybeCreateSession(
    context as Extract<Context, { kind: 'full' }>,
    answers,
    false,
    nowMs,
  );
}

function incremental(
  cache: FetchSessionCache<number>,
  sessionId: number,
  sessionEpoch: number,
  partitions: Array<ReturnType<typeof part>> = [],
  forgotten: Array<{ topicKey: string; partition: number }> = [],
  usesTopicIds = false,
): Context {
  return cache.newContext({ sessionId, sessionEpoch, usesTopicIds, partitions, forgotten }, 0);
}

describe('FetchSessionCache', () => {
  it('makes (0, -1) a sessionless full fetch and (0, 0) one that gets a session', () => {
    const { cache } = cacheOf();
    const sessionless = cache.newContext(
      { sessionId: 0, sessionEpoch: -1, usesTopicIds: false, partitions: [part(0)], forgotten: [] },
      0,
    );
    expect(sessionless).toMatchObject({ kind: 'full', createSession: false });
    expect(
      cache.maybeCreateSession(
        sessionless as Extract<Context, { kind: 'full' }>,
        [answer(1n)],
        false,
        0,
      ),
    ).toBe(0);
    expect(cache.sessionCount).toBe(0);

    const id = openSession(cache, [0, 1]);
    expect(id).toBe(11);
    expect(cache.sessionCount).toBe(1);
    expect(cache.partitionsCached).toBe(2);
    expect(cache.session(id)?.epoch).toBe(1);
  });

  it('creates no session for a full fetch of no partitions', () => {
    const { cache } = cacheOf();
    expect(openSession(cache, [])).toBe(0);
    expect(cache.sessionCount).toBe(0);
  });

  it('closes a session on a full fetch that names it, and opens a new one at epoch 0', () => {
    const { cache } = cacheOf();
    const first = openSession(cache, [0]);
    const closing = cache.newContext(
      { sessionId: first, sessionEpoch: -1, usesTopicIds: false, partitions: [], forgotten: [] },
      0,
    );
    expect(closing).toMatchObject({ kind: 'full', createSession: false });
    expect(cache.sessionCount).toBe(0);
    expect(cache.partitionsCached).toBe(0);

    const second = openSession(cache, [0]);
    const reopening = cache.newContext(
      {
        sessionId: second,
        sessionEpoch: 0,
        usesTopicIds: false,
        partitions: [part(3)],
        forgotten: [],
      },
      0,
    );
    expect(reopening).toMatchObject({ kind: 'full', createSession: true });
    expect(cache.session(second)).toBeUndefined();
  });

  it('refuses an unknown session, a wrong epoch and a switch between names and ids', () => {
    const { cache } = cacheOf();
    const id = openSession(cache, [0]);
    expect(incremental(cache, 77, 1)).toEqual({
      kind: 'error',
      errorCode: FetchSessionError.FetchSessionIdNotFound,
    });
    expect(incremental(cache, id, 2)).toEqual({
      kind: 'error',
      errorCode: FetchSessionError.InvalidFetchSessionEpoch,
    });
    expect(incremental(cache, id, 1, [], [], true)).toEqual({
      kind: 'error',
      errorCode: FetchSessionError.FetchSessionTopicIdError,
    });
    // None of the refusals moved the session on.
    expect(cache.session(id)?.epoch).toBe(1);
  });

  it('adds, updates and forgets partitions, and fetches the whole session in its order', () => {
    const { cache } = cacheOf();
    const id = openSession(cache, [0, 1, 2]);
    const context = incremental(
      cache,
      id,
      1,
      [part(1, 500), part(7, 70)],
      [{ topicKey: 't', partition: 0 }],
    );
    expect(context.kind).toBe('incremental');
    const { partitions } = context as Extract<Context, { kind: 'incremental' }>;
    expect(partitions.map((p) => [p.partition, p.fetch])).toEqual([
      [1, 500],
      [2, 0],
      [7, 70],
    ]);
    expect(cache.partitionsCached).toBe(3);
    expect(cache.session(id)?.epoch).toBe(2);
    // The same epoch again is a replay.
    expect(incremental(cache, id, 1)).toMatchObject({
      errorCode: FetchSessionError.InvalidFetchSessionEpoch,
    });
  });

  it('removes a session that its forgotten partitions empty, answering sessionless', () => {
    const { cache } = cacheOf();
    const id = openSession(cache, [0]);
    const context = incremental(cache, id, 1, [], [{ topicKey: 't', partition: 0 }]);
    expect(context).toMatchObject({ kind: 'full', createSession: false, partitions: [] });
    expect(cache.sessionCount).toBe(0);
    expect(cache.partitionsCached).toBe(0);
  });

  it('answers only partitions with records, a moved offset or an error, and rotates them', () => {
    const { cache } = cacheOf();
    const id = openSession(cache, [0, 1, 2, 3]);
    const context = incremental(cache, id, 1) as Extract<Context, { kind: 'incremental' }>;
    const { errorCode, included } = cache.completeIncremental(context, [
      answer(10n), // unchanged: left out
      answer(10n, 100), // records
      answer(12n), // the high watermark moved
      { ...answer(10n), logStartOffset: 5n }, // the log start offset moved
    ]);
    expect(errorCode).toBe(0);
    expect(included).toEqual([1, 2, 3]);
    // Those sent go to the end, in the order sent.
    expect([...cache.session(id)!.partitions.values()].map((p) => p.partition)).toEqual([
      0, 1, 2, 3,
    ]);

    const next = incremental(cache, id, 2) as Extract<Context, { kind: 'incremental' }>;
    const second = cache.completeIncremental(next, [
      answer(10n, 0, 6), // an error is always sent, and forgets the high watermark
      answer(10n),
      answer(12n),
      { ...answer(10n), logStartOffset: 5n },
    ]);
    expect(second.included).toEqual([0]);
    expect([...cache.session(id)!.partitions.values()].map((p) => p.partition)).toEqual([
      1, 2, 3, 0,
    ]);
    // The error gone, the partition is sent again though its high watermark is the same.
    const third = incremental(cache, id, 3) as Extract<Context, { kind: 'incremental' }>;
    expect(
      cache.completeIncremental(third, [
        answer(10n),
        answer(12n),
        { ...answer(10n), logStartOffset: 5n },
        answer(10n),
      ]).included,
    ).toEqual([3]);
  });

  it('refuses the answer of a fetch whose session moved on meanwhile', () => {
    const { cache } = cacheOf();
    const id = openSession(cache, [0]);
    const slow = incremental(cache, id, 1) as Extract<Context, { kind: 'incremental' }>;
    incremental(cache, id, 2);
    expect(cache.completeIncremental(slow, [answer(11n)])).toEqual({
      errorCode: FetchSessionError.InvalidFetchSessionEpoch,
      included: [],
    });
    const closed = incremental(cache, id, 3) as Extract<Context, { kind: 'incremental' }>;
    cache.newContext(
      { sessionId: id, sessionEpoch: -1, usesTopicIds: false, partitions: [], forgotten: [] },
      0,
    );
    expect(cache.completeIncremental(closed, [answer(11n)]).errorCode).toBe(
      FetchSessionError.InvalidFetchSessionEpoch,
    );
  });

  it('wraps the epoch after the largest int32 to 1', () => {
    expect(nextSessionEpoch(1)).toBe(2);
    expect(nextSessionEpoch(0x7fffffff)).toBe(1);
    expect(nextSessionEpoch(-1)).toBe(-1);
  });

  it('with slots full, evicts a session idle past evictionMs, else a smaller old one', () => {
    const { cache, evictions } = cacheOf(2);
    const small = openSession(cache, [0], 0);
    const large = openSession(cache, [0, 1, 2], 0);
    // Both in use and young: no room, the fetch goes on sessionless.
    expect(openSession(cache, [0, 1, 2, 3], 10)).toBe(0);
    expect(evictions()).toBe(0);

    // Both older than evictionMs but used recently: only a larger session evicts the smallest.
    cache.session(small)!.lastUsedMs = evictionMs + 500;
    cache.session(large)!.lastUsedMs = evictionMs + 500;
    expect(openSession(cache, [5], evictionMs + 600)).toBe(0);
    const larger = openSession(cache, [0, 1], evictionMs + 600);
    expect(larger).toBe(13);
    expect(cache.session(small)).toBeUndefined();
    expect(evictions()).toBe(1);

    // Idle past evictionMs: the least recently used goes, whatever its size.
    cache.session(larger)!.lastUsedMs = 3 * evictionMs;
    expect(openSession(cache, [9], 3 * evictionMs)).toBe(14);
    expect(cache.session(large)).toBeUndefined();
    expect(cache.sessionCount).toBe(2);
    expect(cache.partitionsCached).toBe(3);
    expect(evictions()).toBe(2);
  });

  it('creates none with no slots', () => {
    const { cache } = cacheOf(0);
    expect(openSession(cache, [0])).toBe(0);
  });
});
