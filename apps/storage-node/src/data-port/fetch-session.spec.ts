// Proves the leader's side of incremental fetch sessions (KIP-227) on real logs and replicas
// through the fetch handler: a full fetch answers every partition and opens a session; an idle
// incremental fetch reads no partition and waits its maxWaitMs; an append wakes it at once and
// only that partition is answered; a high watermark is answered once; forgotten partitions are
// not answered; a wrong epoch or unknown session is refused; the follower stays caught up for
// the ISR while its open session fetches, and not once it closed; the cache replaces a
// follower's previous session and keeps its bound.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { RequestMetrics } from '@spool/common';
import {
  type DataPortFetchPartition,
  type DataPortFetchRequest,
  fetchSessionEpochInitial,
  fetchSessionIdNone,
} from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { Log } from '@spool/segment-store';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataDirectory } from '../data-directory';
import type { FetchResult } from './data-port-handlers';
import { createFetchHandlers } from './fetch-handler';
import { FetchSessionCache } from './fetch-session';
import { PartitionReplica } from '../replica/partition-replica';
import type { ReplicaManager } from '../replica/replica-manager';
import { StorageMetrics } from '../storage-metrics';

const leaderId = 0;
const followerId = 1;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Leader replicas of `count` partitions of topic t, and a count of their log reads. */
async function leaderReplicas(count: number) {
  const replicas = new Map<string, PartitionReplica>();
  const reads = { count: 0 };
  for (let partition = 0; partition < count; partition++) {
    const directory = mkdtempSync(path.join(tmpdir(), `spool-session-${partition}-`));
    const { log } = await Log.open(directory);
    cleanups.push(() => {
      log.abandon();
      rmSync(directory, { recursive: true, force: true });
    });
    const read = log.read.bind(log);
    log.read = (...args: Parameters<Log['read']>) => {
      reads.count++;
      return read(...args);
    };
    const replica = new PartitionReplica('t', partition, log, leaderId, {
      leaderId,
      leaderEpoch: 1,
      partitionEpoch: 1,
      replicas: [leaderId, followerId],
      isr: [leaderId, followerId],
    });
    replicas.set(replica.name, replica);
  }
  const manager = {
    get: (topic: string, partition: number) => replicas.get(`${topic}-${partition}`),
    require: (topic: string, partition: number) => {
      const found = replicas.get(`${topic}-${partition}`);
      if (found === undefined) throw Object.assign(new Error('unknown'), { code: 'UNKNOWN' });
      return found;
    },
  } as unknown as ReplicaManager;
  return { replicas, manager, reads };
}

function handlersFor(manager: ReplicaManager, sessions = new FetchSessionCache()) {
  const registry = new Registry();
  const metrics = new StorageMetrics(
    registry,
    new RequestMetrics(registry),
    () => undefined,
    {} as DataDirectory,
    false,
  );
  return createFetchHandlers({
    replicas: () => manager,
    metrics,
    sessions,
    onFollowerFetch: (replica, id, fetchOffset) =>
      replica.recordFollowerFetch(id, fetchOffset, Date.now()),
  });
}

function append(replica: PartitionReplica, value: string): void {
  replica.producerState.appendAsLeader(
    encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from(value), timestampMs: 1n }],
    }),
    1,
  );
  replica.wake();
}

function position(partition: number, fetchOffset = 0n): DataPortFetchPartition {
  return {
    topic: 't',
    partition,
    fetchOffset,
    currentLeaderEpoch: 1,
    logStartOffset: 0n,
    partitionMaxBytes: 1 << 20,
  };
}

function request(
  sessionId: number,
  sessionEpoch: number,
  partitions: DataPortFetchPartition[] = [],
  forgotten: number[] = [],
  maxWaitMs = 200,
): DataPortFetchRequest {
  return {
    replicaId: followerId,
    brokerEpoch: 1n,
    maxWaitMs,
    minBytes: 1,
    maxBytes: 1 << 20,
    partitions,
    session: {
      sessionId,
      sessionEpoch,
      forgottenPartitions: forgotten.map((partition) => ({ topic: 't', partition })),
    },
  };
}

function names(result: FetchResult): string[] {
  result.release();
  return result.partitions.map((partition) => `${partition.topic}-${partition.partition}`);
}

const signal = new AbortController().signal;

describe('fetch sessions (leader side)', () => {
  it('opens with a full fetch, then reads nothing while idle and wakes at an append', async () => {
    const { replicas, manager, reads } = await leaderReplicas(50);
    const handlers = handlersFor(manager);
    const all = [...replicas.values()].map((replica) => position(replica.partition));
    const first = await handlers.fetch(request(fetchSessionIdNone, 0, all, [], 0), signal);
    expect(first.session?.errorCode).toBe('');
    const sessionId = first.session!.sessionId;
    expect(sessionId).not.toBe(fetchSessionIdNone);
    expect(names(first)).toHaveLength(50);

    reads.count = 0;
    const idleStartedMs = Date.now();
    const idle = await handlers.fetch(request(sessionId, 1), signal);
    expect(Date.now() - idleStartedMs).toBeGreaterThanOrEqual(150);
    expect(idle.session).toEqual({ errorCode: '', errorMessage: '', sessionId });
    expect(names(idle)).toEqual([]);
    expect(reads.count).toBe(0);

    const parked = handlers.fetch(request(sessionId, 2, [], [], 5_000), signal);
    const appendedMs = Date.now();
    setTimeout(() => append(replicas.get('t-7')!, 'seven'), 20);
    const woken = await parked;
    expect(Date.now() - appendedMs).toBeLessThan(2_000);
    expect(woken.partitions.map((partition) => partition.sizeBytes > 0)).toEqual([true]);
    expect(names(woken)).toEqual(['t-7']);
    expect(reads.count).toBe(1);
  });

  it('answers a new high watermark once and never a forgotten partition', async () => {
    const { replicas, manager } = await leaderReplicas(3);
    const handlers = handlersFor(manager);
    const first = await handlers.fetch(
      request(fetchSessionIdNone, 0, [position(0), position(1), position(2)], [], 0),
      signal,
    );
    const sessionId = first.session!.sessionId;
    first.release();
    append(replicas.get('t-0')!, 'zero');
    append(replicas.get('t-2')!, 'two');
    // The follower forgets t-2, and names t-0 with its new position: the HW moves to 1.
    const caughtUp = await handlers.fetch(request(sessionId, 1, [position(0, 1n)], [2], 0), signal);
    expect(caughtUp.partitions.map((p) => [p.partition, p.highWatermark])).toEqual([[0, 1n]]);
    caughtUp.release();
    const quiet = await handlers.fetch(request(sessionId, 2, [], [], 100), signal);
    expect(names(quiet)).toEqual([]);
  });

  it('refuses a wrong epoch and an unknown session, so the follower starts over', async () => {
    const { manager } = await leaderReplicas(1);
    const handlers = handlersFor(manager);
    const first = await handlers.fetch(
      request(fetchSessionIdNone, 0, [position(0)], [], 0),
      signal,
    );
    const sessionId = first.session!.sessionId;
    first.release();
    const wrongEpoch = await handlers.fetch(request(sessionId, 5), signal);
    expect(wrongEpoch.session?.errorCode).toBe('INVALID_FETCH_SESSION_EPOCH');
    expect(wrongEpoch.partitions).toEqual([]);
    const unknown = await handlers.fetch(request(sessionId + 1, 1), signal);
    expect(unknown.session?.errorCode).toBe('FETCH_SESSION_ID_NOT_FOUND');
    expect(unknown.session?.sessionId).toBe(fetchSessionIdNone);
    // A consumer's v1 request gets no session and a sessionless answer.
    const consumer = await handlers.fetch(
      {
        ...request(fetchSessionIdNone, fetchSessionEpochInitial, [position(0)], [], 0),
        replicaId: -1,
      },
      signal,
    );
    expect(consumer.session?.sessionId).toBe(fetchSessionIdNone);
    expect(names(consumer)).toEqual(['t-0']);
  });

  it('keeps an idle follower caught up while its session fetches, not after it closed', async () => {
    const { replicas, manager } = await leaderReplicas(1);
    const sessions = new FetchSessionCache();
    const handlers = handlersFor(manager, sessions);
    const replica = replicas.get('t-0')!;
    const first = await handlers.fetch(
      request(fetchSessionIdNone, 0, [position(0)], [], 0),
      signal,
    );
    const sessionId = first.session!.sessionId;
    first.release();
    const readMs = replica.followers.get(followerId)!.lastCaughtUpTimeMs;
    await new Promise((resolve) => setTimeout(resolve, 30));
    const idle = await handlers.fetch(request(sessionId, 1, [], [], 50), signal);
    idle.release();
    const laterMs = Date.now() + 10_000;
    // Not read by the idle fetch, yet caught up as of it; stored time unchanged.
    expect(replica.followers.get(followerId)!.lastCaughtUpTimeMs).toBe(readMs);
    expect(replica.followerLastCaughtUpTimeMs(followerId, laterMs)).toBeGreaterThan(readMs + 30);
    sessions.remove(sessionId);
    expect(replica.followerLastCaughtUpTimeMs(followerId, laterMs)).toBe(readMs);
  });
});

describe('FetchSessionCache', () => {
  it("replaces a follower's previous session and evicts the least recently used past its bound", () => {
    const cache = new FetchSessionCache(2, 10);
    const a = cache.create(1, 0);
    const b = cache.create(2, 0);
    expect(cache.get(a.id)).toBe(a);
    const c = cache.create(3, 0);
    expect(cache.get(b.id)).toBeUndefined();
    expect(b.isOpen).toBe(false);
    const a2 = cache.create(1, 0);
    expect(cache.get(a.id)).toBeUndefined();
    expect(a.isOpen).toBe(false);
    expect(cache.size).toBe(2);
    expect(new Set([a.id, b.id, c.id, a2.id]).size).toBe(4);
  });
});
