// Proves that an ISR expansion counts for the leader's high watermark from the moment the leader
// asks for it, not from the controller's answer: in a fault run the controller committed an
// expansion and lost its answer (its lease ended after the write), the leader advanced the HW
// without the joining replica, that replica was elected from the committed ISR and 4,800
// acknowledged records were truncated. Drives an IsrManager and a PartitionReplica on a real
// log, with an AlterPartition that never answers, refuses, or answers late. Also proves the
// bounds of a request's retries while no controller answers (Kafka's AlterPartitionManager):
// sent again with the epochs it was asked at until answered, dropped once a newer epoch or a
// lost leadership makes it moot, and given up after its attempts, a failure that is not
// retriable or the node's stop, with a pending expansion still counted after giving up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createLogger, SpoolError } from '@spool/common';
import type { AlterPartitionResponse } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { Log } from '@spool/segment-store';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IsrManager, type IsrManagerOptions } from './isr-manager';
import { PartitionReplica } from './partition-replica';

const logger = createLogger({ service: 'isr-manager-test', level: 'silent' });
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function emptyLog(): Promise<Log> {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-isr-'));
  const { log } = await Log.open(directory);
  cleanups.push(() => {
    log.abandon();
    rmSync(directory, { recursive: true, force: true });
  });
  return log;
}

function appendRecords(replica: PartitionReplica, count: number): void {
  for (let index = 0; index < count; index++) {
    replica.log.append(
      encodeRecordBatch({
        baseOffset: 0n,
        records: [{ key: null, value: Buffer.from(`v${index}`), timestampMs: 1n }],
      }),
      { leaderEpoch: 1, assignOffsets: true },
    );
  }
  replica.maybeAdvanceHighWatermark();
}

/** Broker 0 leads t-0 over replicas 0, 1, 2 with ISR [0, 1] at partition epoch 5. */
function leader(log: Log): PartitionReplica {
  return new PartitionReplica('t', 0, log, 0, {
    leaderId: 0,
    leaderEpoch: 1,
    partitionEpoch: 5,
    replicas: [0, 1, 2],
    isr: [0, 1],
  });
}

interface SentRequest {
  newIsr: number[];
  partitionEpoch: number;
  answer: (response: AlterPartitionResponse) => void;
}

function isrManager(sent: SentRequest[], replicaLagTimeMaxMs = 30_000): IsrManager {
  return new IsrManager({
    brokerId: 0,
    replicaLagTimeMaxMs,
    logger,
    onShrink: () => {},
    onExpand: () => {},
    alterPartition: (request) =>
      new Promise((resolve) => {
        const item = request.topics[0]!.partitions[0]!;
        sent.push({ newIsr: item.newIsr, partitionEpoch: item.partitionEpoch, answer: resolve });
      }),
  });
}

/** A per-partition refusal of t-0 with `code`. */
function refusal(code: string): AlterPartitionResponse {
  return {
    topics: [
      {
        topic: 't',
        partitions: [{ partition: 0, error: { code, message: 'refused', retriable: false } }],
      },
    ],
  } as unknown as AlterPartitionResponse;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Both followers fetch at the log end (10), then broker 2 is asked into the ISR. */
async function expansionInFlight(): Promise<{ replica: PartitionReplica; sent: SentRequest[] }> {
  const replica = leader(await emptyLog());
  const sent: SentRequest[] = [];
  const manager = isrManager(sent);
  appendRecords(replica, 10);
  const nowMs = Date.now();
  replica.recordFollowerFetch(1, 10n, nowMs);
  replica.recordFollowerFetch(2, 10n, nowMs);
  expect(replica.highWatermark).toBe(10n);
  manager.maybeUpdate(replica, nowMs);
  await nextTurn();
  expect(sent.map((request) => request.newIsr)).toEqual([[0, 1, 2]]);
  return { replica, sent };
}

describe('IsrManager', () => {
  it('holds the HW at a joining replica while its expansion has no answer', async () => {
    const { replica } = await expansionInFlight();
    // Broker 2 stops fetching (paused); broker 1 keeps up with 20 more records.
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    expect(replica.highWatermark).toBe(10n);
    // The controller's ISR with broker 2 arrives on the metadata stream: nothing changes.
    replica.applyAssignment(
      { leaderId: 0, leaderEpoch: 1, partitionEpoch: 6, replicas: [0, 1, 2], isr: [0, 1, 2] },
      Date.now(),
    );
    expect(replica.highWatermark).toBe(10n);
    replica.recordFollowerFetch(2, 30n, Date.now());
    expect(replica.highWatermark).toBe(30n);
  });

  it('lets the HW move on once the controller refuses the expansion at its epoch', async () => {
    const { replica, sent } = await expansionInFlight();
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    expect(replica.highWatermark).toBe(10n);
    sent[0]!.answer(refusal('INELIGIBLE_REPLICA'));
    await nextTurn();
    expect(replica.highWatermark).toBe(30n);
  });

  it('holds the HW when a retry is refused for a stale partition epoch', async () => {
    // The first attempt committed [0, 1, 2] at epoch 6 and its answer was lost (the controller
    // was deposed); the retry on the next controller is refused as stale. That refusal may be
    // the expansion itself, so broker 2 still counts until the metadata stream brings epoch 6.
    const { replica, sent } = await expansionInFlight();
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    sent[0]!.answer(refusal('INVALID_UPDATE_VERSION'));
    await nextTurn();
    expect(replica.isrExpansionPending).toBe(true);
    expect(replica.highWatermark).toBe(10n);
    replica.applyAssignment(
      { leaderId: 0, leaderEpoch: 1, partitionEpoch: 6, replicas: [0, 1, 2], isr: [0, 1, 2] },
      Date.now(),
    );
    expect(replica.highWatermark).toBe(10n);
  });

  it('lets the HW move on once a newer partition epoch leaves the replica out', async () => {
    const { replica } = await expansionInFlight();
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    expect(replica.highWatermark).toBe(10n);
    replica.applyAssignment(
      { leaderId: 0, leaderEpoch: 1, partitionEpoch: 6, replicas: [0, 1, 2], isr: [0, 1] },
      Date.now(),
    );
    expect(replica.highWatermark).toBe(30n);
  });

  it('asks to confirm the ISR as it is when the joining replica fell behind unanswered', async () => {
    const { replica, sent } = await expansionInFlight();
    // The call fails without an answer (a deadline): the pending expansion stays.
    sent[0]!.answer({
      error: { code: 'UNAVAILABLE', message: 'no controller' },
      topics: [],
    } as unknown as AlterPartitionResponse);
    await nextTurn();
    // Broker 2 then lags past replica.lag.time.max.ms (50 ms for this manager) while broker 1
    // keeps up.
    await new Promise((resolve) => setTimeout(resolve, 100));
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    expect(replica.highWatermark).toBe(10n);
    const manager = isrManager(sent, 50);
    manager.maybeUpdate(replica);
    await nextTurn();
    expect(sent.map((request) => request.newIsr)).toEqual([
      [0, 1, 2],
      [0, 1],
    ]);
    expect(sent[1]!.partitionEpoch).toBe(5);
  });
});

describe('IsrManager retries', () => {
  const inFlightOf = (manager: IsrManager): number => manager.partitionsInFlight;
  const unavailable = () => new SpoolError('UNAVAILABLE', 'no controller answered');
  type AlterPartition = IsrManagerOptions['alterPartition'];
  type AlterPartitionRequest = Parameters<AlterPartition>[0];

  function retryingManager(alterPartition: AlterPartition, attemptsMax = 1_000): IsrManager {
    return new IsrManager({
      brokerId: 0,
      replicaLagTimeMaxMs: 30_000,
      logger,
      onShrink: () => {},
      onExpand: () => {},
      alterPartition,
      retry: { attemptsMax, durationMsMax: 60_000, backoffMs: () => 1 },
    });
  }

  /** Both followers at the log end (10): broker 2 is asked into the ISR by `manager`. */
  async function askExpansion(
    alterPartition: AlterPartition,
    attemptsMax?: number,
  ): Promise<{ replica: PartitionReplica; manager: IsrManager }> {
    const replica = leader(await emptyLog());
    const manager = retryingManager(alterPartition, attemptsMax);
    appendRecords(replica, 10);
    const nowMs = Date.now();
    replica.recordFollowerFetch(1, 10n, nowMs);
    replica.recordFollowerFetch(2, 10n, nowMs);
    manager.maybeUpdate(replica, nowMs);
    return { replica, manager };
  }

  const committed = (request: AlterPartitionRequest): AlterPartitionResponse =>
    ({
      topics: [
        {
          topic: 't',
          partitions: [
            {
              partition: 0,
              error: undefined,
              partitionMetadata: {
                partition: 0,
                leaderId: 0,
                leaderEpoch: 1,
                partitionEpoch: request.topics[0]!.partitions[0]!.partitionEpoch + 1,
                replicas: [0, 1, 2],
                isr: request.topics[0]!.partitions[0]!.newIsr,
              },
            },
          ],
        },
      ],
    }) as unknown as AlterPartitionResponse;

  it('asks again with the same change until a controller answers', async () => {
    const requests: AlterPartitionRequest[] = [];
    const { replica } = await askExpansion(async (request) => {
      requests.push(request);
      if (requests.length < 4) throw unavailable();
      return committed(request);
    });
    await vi.waitFor(() => expect(replica.assignment.partitionEpoch).toBe(6), { timeout: 5_000 });
    expect(requests).toHaveLength(4);
    for (const request of requests) {
      expect(request.topics[0]!.partitions[0]).toEqual({
        partition: 0,
        leaderEpoch: 1,
        partitionEpoch: 5,
        newIsr: [0, 1, 2],
      });
    }
    expect(replica.assignment.isr).toEqual([0, 1, 2]);
    expect(replica.isrExpansionPending).toBe(false);
  });

  it('stops asking once a newer partition epoch makes the change moot', async () => {
    let attempts = 0;
    const { replica, manager } = await askExpansion(async () => {
      attempts += 1;
      throw unavailable();
    });
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(2), { timeout: 5_000 });
    // The expansion committed by an earlier attempt arrives on the metadata stream.
    replica.applyAssignment(
      { leaderId: 0, leaderEpoch: 1, partitionEpoch: 6, replicas: [0, 1, 2], isr: [0, 1, 2] },
      Date.now(),
    );
    const settledAt = attempts;
    // The request ends: the partition is out of flight, so a check may queue it again.
    await vi.waitFor(
      () => {
        expect(attempts).toBeLessThanOrEqual(settledAt + 1);
        expect(inFlightOf(manager)).toBe(0);
      },
      { timeout: 5_000 },
    );
    const endedAt = attempts;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(attempts).toBe(endedAt);
    expect(replica.isrExpansionPending).toBe(false);
  });

  it('stops asking once this node no longer leads the partition', async () => {
    let attempts = 0;
    const { replica, manager } = await askExpansion(async () => {
      attempts += 1;
      throw unavailable();
    });
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(1), { timeout: 5_000 });
    replica.applyAssignment(
      { leaderId: 1, leaderEpoch: 2, partitionEpoch: 6, replicas: [0, 1, 2], isr: [1, 2] },
      Date.now(),
    );
    await vi.waitFor(() => expect(inFlightOf(manager)).toBe(0), { timeout: 5_000 });
    const endedAt = attempts;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(attempts).toBe(endedAt);
  });

  it('gives up after its attempts, still counting the pending expansion, and asks again at the next check', async () => {
    const requests: AlterPartitionRequest[] = [];
    const { replica, manager } = await askExpansion(async (request) => {
      requests.push(request);
      throw unavailable();
    }, 3);
    await vi.waitFor(
      () => {
        expect(requests).toHaveLength(3);
        expect(inFlightOf(manager)).toBe(0);
      },
      { timeout: 5_000 },
    );
    // The joining replica still counts for the HW: broker 1 alone does not move it.
    appendRecords(replica, 20);
    replica.recordFollowerFetch(1, 30n, Date.now());
    expect(replica.isrExpansionPending).toBe(true);
    expect(replica.highWatermark).toBe(10n);
    manager.maybeUpdate(replica);
    await vi.waitFor(() => expect(requests).toHaveLength(6), { timeout: 5_000 });
  });

  it('gives up at once on a failure that is not retriable, and after stop()', async () => {
    let attempts = 0;
    const { manager } = await askExpansion(async () => {
      attempts += 1;
      throw new SpoolError('INVALID_REQUEST', 'malformed');
    });
    await vi.waitFor(
      () => {
        expect(attempts).toBe(1);
        expect(inFlightOf(manager)).toBe(0);
      },
      { timeout: 5_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(attempts).toBe(1);

    let stoppedAttempts = 0;
    const stopping = await askExpansion(async () => {
      stoppedAttempts += 1;
      throw unavailable();
    });
    await vi.waitFor(() => expect(stoppedAttempts).toBeGreaterThanOrEqual(1), { timeout: 5_000 });
    stopping.manager.stop();
    await vi.waitFor(() => expect(inFlightOf(stopping.manager)).toBe(0), { timeout: 5_000 });
    const endedAt = stoppedAttempts;
    stopping.manager.maybeUpdate(stopping.replica);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stoppedAttempts).toBe(endedAt);
  });
});
