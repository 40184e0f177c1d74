// Proves the consumer's group membership against the fake gateway's in-memory coordinator (a
// real grpc-js server on loopback that keeps KIP-848's rules: revoke before reassigning, fence
// stale epochs, commits checked against the member epoch): joining at epoch 0 and resuming at
// committed offsets; a second member taking half the partitions only after the first acknowledged
// their revocation, promptly, with its processed offsets committed first; fencing and eviction
// dropping the partitions as lost and rejoining; auto commit on its interval, on revocation and
// on close, never past what a handler finished (at-least-once) or ahead of processing with
// commitBeforeProcessing (at-most-once); leave with epoch -1, or -2 for a static member that
// comes back to its partitions; the coordinator moving (NOT_COORDINATOR) and a stale commit;
// three members on twelve partitions through joins and a leave, sampled every 2 ms so that no
// partition is ever consumed by two members at once, with no record missed.
import type { SpoolError } from '@spool/common';
import type { TopicPartition } from '@spool/protocol';
import type { RecordInput } from '@spool/record-batch';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumerOptions } from './config';
import type { Consumer } from './consumer';
import type { ConsumerSubscription } from './consumer-payloads';
import type { ConsumedMessage } from './message';
import { Spool } from './spool';
import { FakeGateway, expectSteady } from './testing';

let gateway: FakeGateway | undefined;
const clients: { disconnect(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.disconnect()));
  await gateway?.stop();
  gateway = undefined;
});

async function start(
  topics: Record<string, number>,
): Promise<{ gateway: FakeGateway; spool: Spool }> {
  gateway = await FakeGateway.start(topics);
  return { gateway, spool: new Spool({ brokers: [gateway.address], logLevel: 'silent' }) };
}

function member(spool: Spool, options: ConsumerOptions = {}): Consumer {
  const consumer = spool.consumer({
    groupId: 'billing',
    retryBackoffMs: 10,
    retryBackoffMaxMs: 50,
    autoOffsetReset: 'earliest',
    ...options,
  });
  clients.push(consumer);
  return consumer;
}

function records(prefix: string, count: number): RecordInput[] {
  return Array.from({ length: count }, (_, index) => ({
    key: null,
    value: Buffer.from(`${prefix}${index}`),
    timestampMs: 1_700_000_000_000n + BigInt(index),
  }));
}

interface Recorder {
  readonly received: ConsumedMessage[];
  readonly events: string[];
  readonly subscription: ConsumerSubscription;
}

function recorder(topic: string): Recorder {
  const events: string[] = [];
  const name = (partitions: TopicPartition[]): string =>
    partitions
      .map(({ topic: t, partition }) => `${t}[${partition}]`)
      .sort()
      .join(',');
  return {
    received: [],
    events,
    subscription: {
      topic,
      onPartitionsAssigned: (partitions) => void events.push(`assigned ${name(partitions)}`),
      onPartitionsRevoked: (partitions) => void events.push(`revoked ${name(partitions)}`),
      onPartitionsLost: (partitions) => void events.push(`lost ${name(partitions)}`),
    },
  };
}

async function runRecording(consumer: Consumer, record: Recorder): Promise<void> {
  await consumer.subscribe(record.subscription);
  await consumer.run({
    eachMessage: async ({ message }) => {
      record.received.push(message);
    },
  });
}

function owned(consumer: Consumer): string[] {
  return consumer
    .assignment()
    .map(({ topic, partition }) => `${topic}[${partition}]`)
    .sort();
}

describe('Consumer in a group', () => {
  it('joins at epoch 0, gets every partition, resumes at committed offsets', async () => {
    const { gateway, spool } = await start({ events: 3 });
    for (let partition = 0; partition < 3; partition++) {
      gateway.appendBatch('events', partition, records(`p${partition}-`, 4));
    }
    gateway.coordinator.setCommittedOffset('billing', 'events', 1, 3n);
    const consumer = member(spool);
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect.poll(() => record.received.length === 9, { message: 'nine records' }).toBe(true);
    const first = gateway.coordinator.heartbeats[0]!.request;
    expect(first).toMatchObject({
      groupId: 'billing',
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['events'],
      ownedPartitions: [],
    });
    expect(record.events).toEqual(['assigned events[0],events[1],events[2]']);
    const fromOne = record.received.filter((message) => message.partition === 1);
    expect(fromOne.map((message) => message.offset)).toEqual([3n]);
    expect(owned(consumer)).toEqual(['events[0]', 'events[1]', 'events[2]']);
    // The member reports what it owns once it took the assignment.
    await expect
      .poll(() => gateway.coordinator.heartbeats.at(-1)!.request.ownedPartitions.length === 3, {
        message: 'owned partitions reported',
      })
      .toBe(true);
    expect(consumer.memberIdentity()?.memberId).toBe('member-1');
    expect(consumer.memberIdentity()?.memberEpoch).toBeGreaterThan(0);
  });

  it('revokes and commits before a new member gets the partitions, acknowledging at once', async () => {
    const { gateway, spool } = await start({ events: 4 });
    // A long interval makes a prompt acknowledgement measurable.
    gateway.coordinator.heartbeatIntervalMs = 2_000;
    for (let partition = 0; partition < 4; partition++) {
      gateway.appendBatch('events', partition, records(`p${partition}-`, 2));
    }
    const first = member(spool, { autoCommitIntervalMs: 60_000 });
    const firstRecord = recorder('events');
    await runRecording(first, firstRecord);
    await expect
      .poll(() => firstRecord.received.length === 8, { message: 'the first member consumed all' })
      .toBe(true);
    const second = member(spool, { autoCommitIntervalMs: 60_000 });
    const secondRecord = recorder('events');
    await runRecording(second, secondRecord);
    await expect
      .poll(() => owned(second).length === 2, {
        timeout: 15_000,
        message: 'the second member owns two partitions',
      })
      .toBe(true);
    expect(owned(first)).toHaveLength(2);
    expect([...owned(first), ...owned(second)].sort()).toEqual([
      'events[0]',
      'events[1]',
      'events[2]',
      'events[3]',
    ]);
    expect(gateway.coordinator.violations).toEqual([]);
    const revokedEvent = firstRecord.events.find((event) => event.startsWith('revoked'));
    expect(revokedEvent).toBeDefined();
    expect(firstRecord.events.at(-1)).toBe(revokedEvent);
    // The revoked partitions' processed offsets were committed by the first member.
    const revoked = owned(second);
    for (const name of revoked) {
      const partition = Number(/\[(\d+)\]/.exec(name)![1]);
      expect(gateway.coordinator.committedOffset('billing', 'events', partition)).toBe(2n);
    }
    // The second member starts at those commits: nothing is delivered twice.
    expect(secondRecord.received).toEqual([]);
    // The acknowledgement followed the revocation well within the 2 s interval.
    const firstId = first.memberIdentity()!.memberId;
    const heartbeats = gateway.coordinator.heartbeats.filter(
      ({ request }) => request.memberId === firstId,
    );
    const ackIndex = heartbeats.findIndex(({ request }) => request.ownedPartitions.length === 2);
    expect(ackIndex).toBeGreaterThan(0);
    expect(heartbeats[ackIndex]!.atMs - heartbeats[ackIndex - 1]!.atMs).toBeLessThan(1_000);
    const commitAt = gateway.coordinator.commits.find(
      ({ request }) => request.memberId === firstId,
    )!.atMs;
    expect(commitAt).toBeLessThanOrEqual(heartbeats[ackIndex]!.atMs);
  });

  it('drops its partitions as lost when fenced, and rejoins at epoch 0 with the same id', async () => {
    const { gateway, spool } = await start({ events: 2 });
    const consumer = member(spool);
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => owned(consumer).length === 2, { message: 'partitions owned' })
      .toBe(true);
    const { memberId } = consumer.memberIdentity()!;
    gateway.coordinator.fenceMember('billing', memberId);
    await expect
      .poll(() => record.events.filter((event) => event.startsWith('assigned')).length === 2, {
        message: 'the second assignment',
      })
      .toBe(true);
    expect(record.events).toEqual([
      'assigned events[0],events[1]',
      'lost events[0],events[1]',
      'assigned events[0],events[1]',
    ]);
    const rejoin = gateway.coordinator.heartbeats.find(
      ({ request }, index) => index > 0 && request.memberEpoch === 0,
    );
    expect(rejoin?.request.memberId).toBe(memberId);
    expect(rejoin?.request.ownedPartitions).toEqual([]);
    gateway.appendBatch('events', 0, records('after-', 1));
    await expect
      .poll(() => record.received.length === 1, { message: 'consumption after rejoining' })
      .toBe(true);
  });

  it('rejoins with a new member id after UNKNOWN_MEMBER_ID (evicted)', async () => {
    const { gateway, spool } = await start({ events: 1 });
    const consumer = member(spool);
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => owned(consumer).length === 1, { message: 'partition owned' })
      .toBe(true);
    gateway.coordinator.expireMember('billing', 'member-1');
    await expect
      .poll(() => consumer.memberIdentity()?.memberId === 'member-2', {
        message: 'a new member id',
      })
      .toBe(true);
    await expect
      .poll(() => owned(consumer).length === 1, { message: 'partition owned again' })
      .toBe(true);
    expect(record.events).toEqual(['assigned events[0]', 'lost events[0]', 'assigned events[0]']);
  });

  it('follows the coordinator moving: NOT_COORDINATOR and LOAD_IN_PROGRESS, then joins', async () => {
    const { gateway, spool } = await start({ events: 1 });
    gateway.appendBatch('events', 0, records('r', 2));
    gateway.coordinator.failHeartbeats(
      { code: 'NOT_COORDINATOR', via: 'status' },
      { code: 'COORDINATOR_LOAD_IN_PROGRESS', via: 'response' },
      { code: 'COORDINATOR_NOT_AVAILABLE', via: 'response' },
    );
    const consumer = member(spool);
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => record.received.length === 2, { message: 'records after the move' })
      .toBe(true);
    expect(gateway.coordinator.heartbeats.length).toBeGreaterThanOrEqual(4);
    expect(
      gateway.coordinator.heartbeats.slice(0, 4).map(({ request }) => request.memberEpoch),
    ).toEqual([0, 0, 0, 0]);
  });

  it('keeps consuming its partitions while the coordinator is unavailable past the session timeout', async () => {
    const { gateway, spool } = await start({ events: 1 });
    const consumer = member(spool, { sessionTimeoutMs: 200 });
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => owned(consumer).length === 1, { message: 'partition owned' })
      .toBe(true);
    const answeredBefore = gateway.coordinator.heartbeats.length;
    // 40 unanswered heartbeats: over a second of a coordinator unavailable, five session timeouts.
    gateway.coordinator.failHeartbeats(
      ...Array.from({ length: 40 }, () => ({
        code: 'COORDINATOR_NOT_AVAILABLE',
        via: 'response' as const,
      })),
    );
    await new Promise((resolve) => setTimeout(resolve, 600));
    gateway.appendBatch('events', 0, records('during-', 2));
    await expect
      .poll(() => record.received.length === 2, {
        message: 'records while the coordinator is out',
        timeout: 5_000,
      })
      .toBe(true);
    expect(owned(consumer)).toEqual(['events[0]']);
    expect(record.events).toEqual(['assigned events[0]']);
    // Back: the member is still known (the fake never expired it) and carries on, nothing lost.
    await expect
      .poll(() => gateway.coordinator.heartbeats.length > answeredBefore + 40, {
        message: 'heartbeats answered again',
        timeout: 15_000,
      })
      .toBe(true);
    expect(record.events).toEqual(['assigned events[0]']);
    expect(owned(consumer)).toEqual(['events[0]']);
  });

  it('loses its partitions when the coordinator, back, answers that the member expired', async () => {
    const { gateway, spool } = await start({ events: 1 });
    const consumer = member(spool, { sessionTimeoutMs: 200 });
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => owned(consumer).length === 1, { message: 'partition owned' })
      .toBe(true);
    gateway.coordinator.failHeartbeats(
      ...Array.from({ length: 20 }, () => ({
        code: 'COORDINATOR_NOT_AVAILABLE',
        via: 'response' as const,
      })),
    );
    gateway.coordinator.expireMember('billing', 'member-1');
    await expect
      .poll(() => record.events.includes('lost events[0]'), { message: 'the partition lost' })
      .toBe(true);
    await expect
      .poll(() => owned(consumer).length === 1, { message: 'partition owned again' })
      .toBe(true);
    expect(record.events).toEqual(['assigned events[0]', 'lost events[0]', 'assigned events[0]']);
  });

  it('fails with UNRELEASED_INSTANCE_ID when another member holds the instance id', async () => {
    const { spool } = await start({ events: 1 });
    const first = member(spool, { groupInstanceId: 'host-a' });
    await runRecording(first, recorder('events'));
    await expect
      .poll(() => owned(first).length === 1, { message: 'first owns the partition' })
      .toBe(true);
    const second = member(spool, { groupInstanceId: 'host-a' });
    const crashed = new Promise<Error>((resolve) => second.on('crash', resolve));
    await runRecording(second, recorder('events'));
    const error = (await crashed) as SpoolError;
    expect(error.code).toBe('UNRELEASED_INSTANCE_ID');
    expect(error.message).toMatch(
      /group billing heartbeat.*instance id 'host-a' is still held by member 'member-1'/,
    );
  });
});

describe('Three members on twelve partitions', () => {
  it('converge as members join and leave, owning each partition once, missing no record', async () => {
    const { gateway, spool } = await start({ events: 12 });
    const produced = new Set<string>();
    let sequence = 0;
    const produceRound = (): void => {
      for (let partition = 0; partition < 12; partition++) {
        const value = `m${sequence++}`;
        gateway.appendBatch('events', partition, [
          { key: null, value: Buffer.from(value), timestampMs: 1n },
        ]);
        produced.add(value);
      }
    };
    const received = new Set<string>();
    const join = async (): Promise<Consumer> => {
      const consumer = member(spool, { autoCommitIntervalMs: 20 });
      await consumer.subscribe({ topic: 'events' });
      await consumer.run({
        eachMessage: async ({ message }) => void received.add(message.value!.toString()),
      });
      return consumer;
    };
    const members: Consumer[] = [];
    // Checked continuously from the members' side: no partition is consumed by two at once.
    const overlaps: string[] = [];
    const sampler = setInterval(() => {
      const all = members.flatMap(owned);
      if (new Set(all).size !== all.length) overlaps.push(all.join(' '));
    }, 2);
    members.push(await join());
    produceRound();
    members.push(await join());
    produceRound();
    members.push(await join());
    const ownership = (): string[] => members.flatMap(owned).sort();
    const everyPartition = Array.from(
      { length: 12 },
      (_, partition) => `events[${partition}]`,
    ).sort();
    await expect
      .poll(() => members.every((consumer) => owned(consumer).length === 4), {
        timeout: 15_000,
        message: 'four partitions each',
      })
      .toBe(true);
    expect(ownership()).toEqual(everyPartition);
    produceRound();
    // Sampled until it has left: it must give its partitions up before others get them.
    await members[0]!.close();
    expect(owned(members.shift()!)).toEqual([]);
    produceRound();
    await expect
      .poll(() => members.every((consumer) => owned(consumer).length === 6), {
        timeout: 15_000,
        message: 'six partitions each after a member left',
      })
      .toBe(true);
    expect(ownership()).toEqual(everyPartition);
    produceRound();
    await expect
      .poll(() => received.size === produced.size, {
        timeout: 15_000,
        message: 'every record received',
      })
      .toBe(true);
    clearInterval(sampler);
    expect(overlaps).toEqual([]);
    expect(gateway.coordinator.violations).toEqual([]);
  });
});

describe('Group subscriptions', () => {
  it('sends one regular expression, which the coordinator matches against whole names', async () => {
    const { gateway, spool } = await start({ 'audit-a': 1, 'audit-b': 1, other: 1 });
    const consumer = member(spool);
    const record = recorder('unused');
    await consumer.subscribe({ ...record.subscription, topic: /audit-.*/ });
    await consumer.run({ eachMessage: async () => {} });
    await expect
      .poll(() => owned(consumer).length === 2, { message: 'both audit topics' })
      .toBe(true);
    expect(owned(consumer)).toEqual(['audit-a[0]', 'audit-b[0]']);
    expect(gateway.coordinator.heartbeats[0]!.request).toMatchObject({
      subscribedTopics: [],
      subscribedRegex: 'audit-.*',
    });
  });

  it('lets onPartitionsAssigned seek before any message of the partition is delivered', async () => {
    const { gateway, spool } = await start({ events: 1 });
    gateway.appendBatch('events', 0, records('r', 5));
    const consumer = member(spool);
    expect(() => consumer.seek({ topic: 'events', partition: 0, offset: 3n })).toThrow(
      /group billing has not assigned it to this member; seek in onPartitionsAssigned/,
    );
    const received: bigint[] = [];
    await consumer.subscribe({
      topic: 'events',
      onPartitionsAssigned: async () => {
        // A slow callback: fetching the partition waits for it.
        await new Promise((resolve) => setTimeout(resolve, 50));
        consumer.seek({ topic: 'events', partition: 0, offset: 3n });
      },
    });
    await consumer.run({ eachMessage: async ({ message }) => void received.push(message.offset) });
    await expect.poll(() => received.length === 2, { message: 'two records' }).toBe(true);
    await expectSteady(() => received.length, 50, 'the records delivered');
    expect(received).toEqual([3n, 4n]);
  });

  it('refuses names mixed with expressions, and expressions with flags', async () => {
    const { spool } = await start({ events: 1 });
    const consumer = member(spool);
    await expect(consumer.subscribe({ topics: ['events', /audit-.*/] })).rejects.toThrow(
      /takes topic names or regular expressions, not both/,
    );
    await expect(consumer.subscribe({ topic: /audit/i })).rejects.toThrow(
      /regular expression cannot have flags, got \/audit\/i/,
    );
  });
});

describe('Commits of a group member', () => {
  it('auto commits on its interval, with the member id and epoch', async () => {
    const { gateway, spool } = await start({ events: 1 });
    gateway.appendBatch('events', 0, records('r', 5));
    const consumer = member(spool, { autoCommitIntervalMs: 50 });
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect
      .poll(() => gateway.coordinator.committedOffset('billing', 'events', 0) === 5n, {
        message: 'offset 5 committed',
      })
      .toBe(true);
    const commit = gateway.coordinator.commits.at(-1)!.request;
    expect(commit.memberId).toBe(consumer.memberIdentity()!.memberId);
    expect(commit.memberEpoch).toBe(consumer.memberIdentity()!.memberEpoch);
    expect(commit.offsets).toEqual([
      { topic: 'events', partition: 0, offset: 5n, metadata: '', leaderEpoch: -1 },
    ]);
  });

  it('never commits past the message a handler is still processing (at-least-once)', async () => {
    const { gateway, spool } = await start({ events: 1 });
    gateway.appendBatch('events', 0, records('r', 6));
    const consumer = member(spool, { autoCommitIntervalMs: 20 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let processed = 0;
    await consumer.subscribe({ topic: 'events' });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.offset === 3n) await released;
        processed += 1;
      },
    });
    await expect
      .poll(() => gateway.coordinator.committedOffset('billing', 'events', 0) === 3n, {
        message: 'offsets below the busy message committed',
      })
      .toBe(true);
    // Two heartbeat rounds (every 50 ms) after that commit: the auto-commit timer (every 20 ms)
    // has had its chances to commit past the busy message meanwhile, and took none.
    const committedAtMs = gateway.coordinator.commits.at(-1)!.atMs;
    await expect
      .poll(
        () => gateway.coordinator.heartbeats.filter(({ atMs }) => atMs > committedAtMs).length,
        { message: 'two heartbeat rounds after the commit' },
      )
      .toBeGreaterThanOrEqual(2);
    expect(gateway.coordinator.committedOffset('billing', 'events', 0)).toBe(3n);
    release();
    await expect
      .poll(() => gateway.coordinator.committedOffset('billing', 'events', 0) === 6n, {
        message: 'everything committed after processing',
      })
      .toBe(true);
    expect(processed).toBe(6);
  });

  it('redelivers after a crash at-least-once, skips with commitBeforeProcessing (at-most-once)', async () => {
    const outcomes: Record<string, bigint[]> = {};
    for (const commitBeforeProcessing of [false, true]) {
      const { gateway, spool } = await start({ events: 1 });
      gateway.appendBatch('events', 0, records('r', 3));
      const crashing = member(spool, { autoCommitIntervalMs: 60_000, commitBeforeProcessing });
      const committedWhenHandled: (bigint | undefined)[] = [];
      const crashed = new Promise<Error>((resolve) => crashing.on('crash', resolve));
      await crashing.subscribe({ topic: 'events' });
      await crashing.run({
        eachMessage: async ({ message }) => {
          committedWhenHandled.push(gateway.coordinator.committedOffset('billing', 'events', 0));
          if (message.offset === 1n) throw new Error('handler failed');
        },
      });
      expect((await crashed).message).toBe('handler failed');
      await crashing.disconnect();
      const next = member(spool, { autoCommitIntervalMs: 60_000 });
      const record = recorder('events');
      await runRecording(next, record);
      // Whatever the new member delivers, it has delivered once its position is the log end.
      await expect.poll(() => next.position('events', 0)).toBe(3n);
      outcomes[String(commitBeforeProcessing)] = record.received.map((message) => message.offset);
      // At-most-once: the whole chunk was committed before its first message was handled.
      expect(committedWhenHandled[0]).toBe(commitBeforeProcessing ? 3n : undefined);
      await Promise.all(clients.splice(0).map((client) => client.disconnect()));
      await gateway.stop();
    }
    expect(outcomes).toEqual({ false: [1n, 2n], true: [] });
  });

  it('commits and leaves with epoch -1 on close, after the revoked callback', async () => {
    const { gateway, spool } = await start({ events: 2 });
    gateway.appendBatch('events', 0, records('a', 3));
    gateway.appendBatch('events', 1, records('b', 2));
    const consumer = member(spool, { autoCommitIntervalMs: 60_000 });
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect.poll(() => record.received.length === 5, { message: 'five records' }).toBe(true);
    const { memberId } = consumer.memberIdentity()!;
    await consumer.close();
    expect(gateway.coordinator.committedOffset('billing', 'events', 0)).toBe(3n);
    expect(gateway.coordinator.committedOffset('billing', 'events', 1)).toBe(2n);
    const last = gateway.coordinator.heartbeats.at(-1)!;
    expect(last.request).toMatchObject({ memberId, memberEpoch: -1 });
    expect(last.atMs).toBeGreaterThanOrEqual(gateway.coordinator.commits.at(-1)!.atMs);
    expect(record.events.at(-1)).toBe('revoked events[0],events[1]');
    expect(gateway.coordinator.groupOf('billing')!.isEmpty()).toBe(true);
  });

  it('leaves as a static member with -2, and its restart inherits the partitions', async () => {
    const { gateway, spool } = await start({ events: 2 });
    const consumer = member(spool, { groupInstanceId: 'host-a' });
    await runRecording(consumer, recorder('events'));
    await expect
      .poll(() => owned(consumer).length === 2, { message: 'partitions owned' })
      .toBe(true);
    const { memberId, memberEpoch: epochBefore } = consumer.memberIdentity()!;
    await consumer.disconnect();
    expect(gateway.coordinator.heartbeats.at(-1)!.request).toMatchObject({
      memberId,
      memberEpoch: -2,
      instanceId: 'host-a',
    });
    const groupEpoch = gateway.coordinator.groupOf('billing')!.groupEpoch;
    const restarted = member(spool, { groupInstanceId: 'host-a' });
    await runRecording(restarted, recorder('events'));
    await expect
      .poll(() => owned(restarted).length === 2, { message: 'partitions owned again' })
      .toBe(true);
    // A new member id inherits the epoch and partitions: no rebalance happened.
    expect(restarted.memberIdentity()!.memberId).not.toBe(memberId);
    expect(restarted.memberIdentity()!.memberEpoch).toBe(epochBefore);
    expect(gateway.coordinator.groupOf('billing')!.groupEpoch).toBe(groupEpoch);
  });

  it('reports a stale member epoch on a manual commit clearly', async () => {
    const { gateway, spool } = await start({ events: 1 });
    // Long enough that the member does not heartbeat again by itself during the test.
    gateway.coordinator.heartbeatIntervalMs = 60_000;
    gateway.appendBatch('events', 0, records('r', 2));
    const consumer = member(spool, { enableAutoCommit: false });
    const record = recorder('events');
    await runRecording(consumer, record);
    await expect.poll(() => record.received.length === 2, { message: 'two records' }).toBe(true);
    await consumer.commit();
    expect(gateway.coordinator.committedOffset('billing', 'events', 0)).toBe(2n);
    // The group moves the member to a new epoch in a heartbeat whose answer the member never
    // sees (lost on the way): another member joins, then a heartbeat as this member, owning its
    // partition, is answered with the new epoch. Its commits at the old epoch are stale.
    const { memberId, memberEpoch } = consumer.memberIdentity()!;
    const joinRequest = gateway.coordinator.heartbeats[0]!.request;
    gateway.coordinator.heartbeat({ ...joinRequest, memberId: '', memberEpoch: 0, instanceId: '' });
    const moved = gateway.coordinator.heartbeat({
      ...joinRequest,
      memberId,
      memberEpoch,
      ownedPartitions: [{ topic: 'events', partition: 0 }],
    });
    expect(moved.error).toBeUndefined();
    expect(moved.memberEpoch).toBeGreaterThan(memberEpoch);
    const error = await consumer
      .commitOffsets([{ topic: 'events', partition: 0, offset: 1n }])
      .then(
        () => undefined,
        (caught: unknown) => caught as SpoolError,
      );
    expect(error?.code).toBe('STALE_MEMBER_EPOCH');
    expect(error?.message).toMatch(
      /commit of 1 offsets for group billing \(member member-1 at epoch \d+\) failed: .*rebalanced/,
    );
    expect(gateway.coordinator.committedOffset('billing', 'events', 0)).toBe(2n);
  });

  it('lets the iterator count the message in hand as processed when the loop breaks', async () => {
    const { gateway, spool } = await start({ events: 1 });
    gateway.appendBatch('events', 0, records('r', 5));
    const consumer = member(spool, { autoCommitIntervalMs: 60_000 });
    await consumer.subscribe({ topic: 'events' });
    const seen: bigint[] = [];
    for await (const message of consumer) {
      seen.push(message.offset);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([0n, 1n]);
    expect(gateway.coordinator.committedOffset('billing', 'events', 0)).toBe(2n);
    expect(gateway.coordinator.heartbeats.at(-1)!.request.memberEpoch).toBe(-1);
  });
});
