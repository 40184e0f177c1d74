// Proves the leader router's rule for items sent once (an idempotent Kafka producer's batches,
// point 6 of leader-router.ts) on a real metadata link whose metadata the test applies: a batch
// whose leader could not be reached, whose route went stale, or whose partition has no leader is
// answered NOT_LEADER_OR_FOLLOWER, retriable, once newer metadata arrives (or after the bounded
// wait), and is never sent again by the gateway, so a later batch of the same producer that
// routes straight to the new leader is not overtaken there by an earlier one; an item not sent
// once is still re-routed to the new leader. Timers are faked, so the waits are exact.
import { SpoolError, createLogger, wireErrorOf } from '@spool/common';
import type { ProtoError } from '@spool/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sendToLeaders, type LeaderCall } from './leader-router';
import { createMetadataLink, type MetadataLink } from './metadata-link';
import { testBroker, testSnapshot, testTopic } from './testing/cluster-metadata';

interface Batch {
  readonly topic: string;
  readonly partition: number;
  readonly baseSequence: number;
  readonly sentOnce: boolean;
}

interface Answer {
  readonly topic: string;
  readonly partition: number;
  readonly error?: ProtoError;
}

const logger = createLogger({ service: 'test', level: 'silent' });
const topic = 'orders';
/** The router's wait for newer metadata between rounds (metadataWaitMsMax). */
const metadataWaitMs = 1_000;

let link: MetadataLink;
let metadataVersion: bigint;
/** Every batch that reached a leader, in arrival order. */
let arrivals: Array<{ leaderId: number; baseSequence: number }>;

/** Partition 0 of `orders` is led by `leaderId` (-1: no leader) from the next version on. */
function leadBy(leaderId: number): void {
  metadataVersion += 1n;
  link.metadata.apply(
    testSnapshot(
      metadataVersion,
      [testBroker(1, 9001, 9101), testBroker(2, 9002, 9102)],
      [testTopic(topic, [leaderId])],
    ),
  );
}

function batch(baseSequence: number, sentOnce = true): Batch {
  return { topic, partition: 0, baseSequence, sentOnce };
}

/** A call whose leaders answer as `leaders` says; each batch that reaches one is recorded. */
function callTo(
  leaders: Record<number, (batches: Batch[]) => Promise<Answer[]>>,
): LeaderCall<Batch, Answer> {
  return {
    send: (leaderId, batches) => {
      for (const sent of batches) arrivals.push({ leaderId, baseSequence: sent.baseSequence });
      return leaders[leaderId]!(batches);
    },
    errorOf: (answer) => answer.error,
    failed: (item, error) => ({ topic: item.topic, partition: item.partition, error }),
    sentOnce: (item) => item.sentOnce,
  };
}

function written(batches: Batch[]): Promise<Answer[]> {
  return Promise.resolve(batches.map((sent) => ({ topic: sent.topic, partition: sent.partition })));
}

function deadline(): number {
  return Date.now() + 30_000;
}

beforeEach(() => {
  vi.useFakeTimers();
  link = createMetadataLink(['127.0.0.1:1'], logger);
  link.stop();
  metadataVersion = 0n;
  arrivals = [];
  leadBy(1);
});

afterEach(() => {
  vi.useRealTimers();
});

describe('sendToLeaders with batches sent once', () => {
  it('does not send an earlier batch to the new leader after a later one got there', async () => {
    let later: Promise<Answer[]> | undefined;
    const call = callTo({
      // The old leader dies with the first batch in flight; the controller has elected broker 2
      // by the time the stream breaks, and the producer's next request arrives meanwhile.
      1: () => {
        leadBy(2);
        later = sendToLeaders(link, [batch(3)], deadline(), call);
        return Promise.reject(new SpoolError('UNAVAILABLE', 'the append stream broke'));
      },
      2: written,
    });

    const [earlier] = await sendToLeaders(link, [batch(0)], deadline(), call);
    await later;
    expect(earlier!.error).toMatchObject({ code: 'NOT_LEADER_OR_FOLLOWER', retriable: true });
    expect(earlier!.error!.message).toContain('the append stream broke');
    // Without the rule, the gateway's own retry would have sent sequence 0 to broker 2 after
    // sequence 3: the leader refuses 3 as out of order, then writes 0, and the client, seeing
    // 0 acknowledged before 3's refusal, takes the refusal for lost records.
    expect(arrivals).toEqual([
      { leaderId: 1, baseSequence: 0 },
      { leaderId: 2, baseSequence: 3 },
    ]);
  });

  it('answers a stale route once newer metadata arrives, and a batch without a leader unsent', async () => {
    leadBy(-1);
    const answered = sendToLeaders(link, [batch(0)], deadline(), callTo({ 2: written }));
    await vi.advanceTimersByTimeAsync(metadataWaitMs / 4);
    leadBy(2);
    // No timer has to fire: the newer metadata ends the wait.
    const [answer] = await answered;
    expect(answer!.error).toMatchObject({ code: 'NOT_LEADER_OR_FOLLOWER', retriable: true });
    expect(answer!.error!.message).toContain('LEADER_NOT_AVAILABLE');
    expect(arrivals).toEqual([]);
  });

  it('answers after the bounded wait when the metadata does not move', async () => {
    const refused = (batches: Batch[]): Promise<Answer[]> =>
      Promise.resolve(
        batches.map((sent) => ({
          topic: sent.topic,
          partition: sent.partition,
          error: wireErrorOf(new SpoolError('NOT_LEADER_OR_FOLLOWER', 'broker 1 is a follower')),
        })),
      );
    let settled = false;
    const answered = sendToLeaders(link, [batch(0)], deadline(), callTo({ 1: refused })).then(
      (answers) => {
        settled = true;
        return answers;
      },
    );
    await vi.advanceTimersByTimeAsync(metadataWaitMs - 1);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const [answer] = await answered;
    expect(answer!.error).toMatchObject({ code: 'NOT_LEADER_OR_FOLLOWER', retriable: true });
    expect(arrivals).toEqual([{ leaderId: 1, baseSequence: 0 }]);
  });

  it('still re-routes an item that is not sent once to the new leader', async () => {
    const call = callTo({
      1: () => {
        leadBy(2);
        return Promise.reject(new SpoolError('UNAVAILABLE', 'the append stream broke'));
      },
      2: written,
    });
    const [answer] = await sendToLeaders(link, [batch(0, false)], deadline(), call);
    expect(answer!.error).toBeUndefined();
    expect(arrivals).toEqual([
      { leaderId: 1, baseSequence: 0 },
      { leaderId: 2, baseSequence: 0 },
    ]);
  });
});
