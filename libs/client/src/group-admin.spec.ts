// Proves the admin client's group calls against the fake gateway's in-memory coordinator:
// groups are listed with their state, described with members, assignments and per-partition
// committed offset, high watermark and lag; delete and offset reset are refused while the group
// has members (NON_EMPTY_GROUP) and work once it is empty; every reset strategy lands where
// Kafka's would; bad arguments fail before anything is sent, naming the field.
import { afterEach, describe, expect, it } from 'vitest';
import type { Admin } from './admin';
import type { Consumer } from './consumer';
import { Spool } from './spool';
import { FakeGateway, rejection } from './testing';

let gateway: FakeGateway | undefined;
const clients: { disconnect(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.disconnect()));
  await gateway?.stop();
  gateway = undefined;
});

async function setUp(): Promise<{ gateway: FakeGateway; spool: Spool; admin: Admin }> {
  gateway = await FakeGateway.start({ events: 2 });
  for (let index = 0; index < 4; index++) {
    gateway.appendBatch('events', 0, [
      { key: null, value: Buffer.from(`v${index}`), timestampMs: 1_000n * BigInt(index + 1) },
    ]);
  }
  gateway.appendBatch('events', 1, [{ key: null, value: Buffer.from('x'), timestampMs: 5_000n }]);
  const spool = new Spool({ brokers: [gateway.address], logLevel: 'silent' });
  const admin = spool.admin({ retries: 0 });
  clients.push(admin);
  return { gateway, spool, admin };
}

async function joinedMember(spool: Spool): Promise<Consumer> {
  const consumer = spool.consumer({ groupId: 'billing', retryBackoffMs: 10 });
  clients.push(consumer);
  await consumer.subscribe({ topic: 'events' });
  await consumer.run({ eachMessage: async () => {} });
  await expect
    .poll(() => consumer.assignment().length >= 2, { message: 'the member got its partitions' })
    .toBe(true);
  return consumer;
}

describe('Admin groups', () => {
  it('lists and describes a group with members, assignments and lag per partition', async () => {
    const { gateway, spool, admin } = await setUp();
    gateway.coordinator.setCommittedOffset('billing', 'events', 0, 1n);
    const consumer = await joinedMember(spool);
    expect(await admin.listGroups()).toEqual({ groups: [{ groupId: 'billing', state: 'STABLE' }] });
    await consumer.stop();
    gateway.coordinator.setCommittedOffset('billing', 'events', 0, 1n);
    gateway.coordinator.setCommittedOffset('billing', 'events', 1, 1n);
    const description = await admin.describeGroup('billing');
    expect(description).toMatchObject({ groupId: 'billing', state: 'EMPTY', members: [] });
    expect(description.partitions).toEqual([
      { topic: 'events', partition: 0, committedOffset: 1n, highWatermark: 4n, lag: 3n },
      { topic: 'events', partition: 1, committedOffset: 1n, highWatermark: 1n, lag: 0n },
    ]);
    const again = await joinedMember(spool);
    const active = await admin.describeGroup('billing');
    expect(active.members).toEqual([
      {
        memberId: again.memberIdentity()!.memberId,
        instanceId: '',
        memberEpoch: again.memberIdentity()!.memberEpoch,
        assignment: [
          { topic: 'events', partition: 0 },
          { topic: 'events', partition: 1 },
        ],
      },
    ]);
    const missing = await rejection(admin.describeGroup('nobody'));
    expect(missing.code).toBe('GROUP_ID_NOT_FOUND');
    expect(missing.message).toMatch(/^describe group nobody: /);
  });

  it('deletes a group only once it is empty', async () => {
    const { spool, admin } = await setUp();
    const consumer = await joinedMember(spool);
    const refused = await rejection(admin.deleteGroup('billing'));
    expect(refused.code).toBe('NON_EMPTY_GROUP');
    expect(refused.message).toMatch(/^delete group billing: /);
    await consumer.stop();
    await admin.deleteGroup('billing');
    expect(await admin.listGroups()).toEqual({ groups: [] });
    expect((await rejection(admin.deleteGroup('billing'))).code).toBe('GROUP_ID_NOT_FOUND');
  });

  it('resets offsets by every strategy while empty, and refuses while members are in', async () => {
    const { gateway, spool, admin } = await setUp();
    gateway.coordinator.setCommittedOffset('billing', 'events', 0, 2n);
    gateway.coordinator.setCommittedOffset('billing', 'events', 1, 0n);
    const partition0 = [{ topic: 'events', partition: 0 }];
    const offsetOf = async (reset: Parameters<Admin['resetOffsets']>[1]): Promise<bigint[]> =>
      (await admin.resetOffsets('billing', reset)).map((offset) => offset.offset);
    expect(await offsetOf({ strategy: 'earliest' })).toEqual([0n, 0n]);
    expect(await offsetOf({ strategy: 'latest' })).toEqual([4n, 1n]);
    expect(await offsetOf({ strategy: 'offset', offset: 2n, partitions: partition0 })).toEqual([
      2n,
    ]);
    expect(
      await offsetOf({ strategy: 'timestamp', timestampMs: 2_500, partitions: partition0 }),
    ).toEqual([2n]);
    expect(await admin.fetchOffsets({ groupId: 'billing', topics: ['events'] })).toEqual([
      {
        topic: 'events',
        partitions: [
          { partition: 0, offset: 2n, metadata: '' },
          { partition: 1, offset: 1n, metadata: '' },
        ],
      },
    ]);
    const consumer = await joinedMember(spool);
    const refused = await rejection(admin.resetOffsets('billing', { strategy: 'earliest' }));
    expect(refused.code).toBe('NON_EMPTY_GROUP');
    expect(refused.message).toMatch(/^reset offsets of group billing: /);
    await consumer.stop();
  });

  it('names the bad field of a reset before sending anything', async () => {
    const { admin } = await setUp();
    const cases: [Parameters<Admin['resetOffsets']>[1], RegExp][] = [
      [{ strategy: 'oldest' as 'earliest' }, /strategy must be one of earliest, latest/],
      [{ strategy: 'timestamp' }, /strategy timestamp needs timestampMs/],
      [{ strategy: 'offset', offset: -1n }, /strategy offset needs offset, a bigint of 0n/],
      [
        { strategy: 'earliest', partitions: [{ topic: '', partition: 0 }] },
        /a partition needs a topic/,
      ],
    ];
    for (const [reset, message] of cases) {
      const error = await rejection(admin.resetOffsets('billing', reset));
      expect(error.code).toBe('INVALID_REQUEST');
      expect(error.message).toMatch(message);
    }
    expect((await rejection(admin.describeGroup(''))).message).toMatch(/a group id must be/);
  });
});
