// Proves the KIP-848 rules of one consumer group, heartbeat by heartbeat: joining, leaving,
// static membership, epochs and fencing, incremental reconciliation (revoke before reassign),
// regex subscriptions, topic changes, expiry (and fencing one member on demand), bounds, and that replaying the emitted records
// rebuilds the same group.
import type { ConsumerGroupHeartbeatResponse } from '@spool/protocol';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConsumerGroup } from './consumer-group';
import { heartbeatRequest, TestTopics } from './testing';
import type { GroupRecord, TopicPartitionRecord } from './group-records';

const timeouts = { sessionTimeoutMs: 45_000, heartbeatIntervalMs: 5_000 };

/** A client as KIP-848 expects it to behave: it owns exactly what the last assignment said. */
class Client {
  memberId = '';
  memberEpoch = 0;
  owned: TopicPartitionRecord[] = [];
  lastResponse: ConsumerGroupHeartbeatResponse | undefined;
  assignor = '';

  constructor(
    private readonly harness: Harness,
    readonly subscribedTopics: string[] = ['t'],
    readonly instanceId = '',
  ) {}

  heartbeat(nowMs = this.harness.nowMs, acknowledge = true): ConsumerGroupHeartbeatResponse {
    const response = this.harness.heartbeat(
      {
        memberId: this.memberId,
        memberEpoch: this.memberEpoch,
        instanceId: this.instanceId,
        subscribedTopics: this.subscribedTopics,
        ownedPartitions: this.owned,
        assignor: this.assignor,
      },
      nowMs,
    );
    this.memberId = response.memberId;
    this.memberEpoch = response.memberEpoch;
    if (response.assignment !== undefined && acknowledge)
      this.owned = response.assignment.partitions;
    this.lastResponse = response;
    return response;
  }
}

class Harness {
  readonly topics = new TestTopics({ t: 6 });
  readonly records: GroupRecord[] = [];
  nowMs = 1_000;
  private nextId = 0;
  readonly group = new ConsumerGroup('g', timeouts, {
    generateMemberId: () => `m${String(this.nextId++).padStart(3, '0')}`,
  });

  heartbeat(
    fields: Parameters<typeof heartbeatRequest>[0],
    nowMs = this.nowMs,
  ): ConsumerGroupHeartbeatResponse {
    const { response, records } = this.group.heartbeat(
      heartbeatRequest(fields),
      this.topics,
      nowMs,
    );
    this.records.push(...records);
    return response;
  }

  expire(nowMs: number): GroupRecord[] {
    const records = this.group.expire(nowMs);
    this.records.push(...records);
    return records;
  }

  topicsChanged(): GroupRecord[] {
    const records = this.group.onTopicsChanged(this.topics, this.nowMs);
    this.records.push(...records);
    return records;
  }

  client(subscribedTopics: string[] = ['t'], instanceId = ''): Client {
    return new Client(this, subscribedTopics, instanceId);
  }

  /** Heartbeats every client until none changes (bounded). */
  settle(clients: Client[]): void {
    for (let round = 0; round < 10; round++) {
      for (const client of clients) client.heartbeat();
      if (this.group.state === 'STABLE') return;
    }
  }

  replayed(): ConsumerGroup {
    const rebuilt = new ConsumerGroup('g', timeouts);
    for (const record of this.records)
      rebuilt.replay(JSON.parse(JSON.stringify(record)), this.nowMs);
    return rebuilt;
  }
}

function names(partitions: TopicPartitionRecord[] | undefined): string[] {
  return (partitions ?? []).map(({ topic, partition }) => `${topic}-${partition}`);
}

function codeOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

let harness: Harness;
beforeEach(() => {
  harness = new Harness();
});

describe('joining', () => {
  it('gives a new member an id, the group epoch and the whole topic', () => {
    const response = harness.client().heartbeat();
    expect(response.memberId).toBe('m000');
    expect(response.memberEpoch).toBe(1);
    expect(response.heartbeatIntervalMs).toBe(5_000);
    expect(names(response.assignment?.partitions)).toEqual([
      't-0',
      't-1',
      't-2',
      't-3',
      't-4',
      't-5',
    ]);
    expect(harness.group.groupEpoch).toBe(1);
    expect(harness.group.state).toBe('STABLE');
  });

  it('omits the assignment when nothing changed and the member owns it', () => {
    const client = harness.client();
    client.heartbeat();
    expect(client.heartbeat().assignment).toBeUndefined();
  });

  it('resends the assignment when the member reports owning something else', () => {
    const client = harness.client();
    client.heartbeat();
    client.owned = [{ topic: 't', partition: 0 }];
    expect(names(client.heartbeat().assignment?.partitions)).toHaveLength(6);
  });

  it('starts EMPTY and goes back to EMPTY when the last member leaves', () => {
    expect(harness.group.state).toBe('EMPTY');
    const client = harness.client();
    client.heartbeat();
    const response = harness.heartbeat({ memberId: client.memberId, memberEpoch: -1 });
    expect(response.memberEpoch).toBe(-1);
    expect(harness.group.state).toBe('EMPTY');
    expect(harness.group.groupEpoch).toBe(2);
    expect(harness.group.isEmpty()).toBe(true);
  });

  it('refuses a member beyond the group size limit', () => {
    const group = new ConsumerGroup('g', timeouts, { limits: { membersMax: 2 } });
    group.heartbeat(heartbeatRequest({ subscribedTopics: ['t'] }), harness.topics, 0);
    group.heartbeat(heartbeatRequest({ subscribedTopics: ['t'] }), harness.topics, 0);
    expect(codeOf(() => group.heartbeat(heartbeatRequest(), harness.topics, 0))).toBe(
      'GROUP_MAX_SIZE_REACHED',
    );
  });

  it('uses the member id the client chose when it sends one', () => {
    expect(harness.heartbeat({ memberId: 'chosen', subscribedTopics: ['t'] }).memberId).toBe(
      'chosen',
    );
  });
});

describe('reconciliation', () => {
  it('revokes before it reassigns: a partition has one owner at every step', () => {
    const first = harness.client();
    first.heartbeat();
    const second = harness.client();
    const joined = second.heartbeat();
    // The second member gets its epoch but nothing yet: its partitions are still the first's.
    expect(joined.memberEpoch).toBe(2);
    expect(joined.assignment?.partitions).toEqual([]);
    expect(harness.group.state).toBe('RECONCILING');
    // The first member is asked to revoke three partitions and keeps its epoch.
    const revoking = first.heartbeat(harness.nowMs, false);
    expect(revoking.memberEpoch).toBe(1);
    expect(names(revoking.assignment?.partitions)).toHaveLength(3);
    // Until it acknowledges, the second member still gets nothing.
    expect(second.heartbeat().assignment).toBeUndefined();
    first.owned = revoking.assignment!.partitions;
    expect(first.heartbeat().memberEpoch).toBe(2);
    const received = second.heartbeat();
    expect(names(received.assignment?.partitions)).toHaveLength(3);
    expect(harness.group.state).toBe('STABLE');
    const all = [...names(first.owned), ...names(second.owned)].sort();
    expect(all).toEqual(['t-0', 't-1', 't-2', 't-3', 't-4', 't-5']);
  });

  it('keeps a revoking member at its epoch while it still reports the revoked partitions', () => {
    const first = harness.client();
    first.heartbeat();
    harness.client().heartbeat();
    first.heartbeat(harness.nowMs, false);
    const again = first.heartbeat(harness.nowMs, false);
    expect(again.memberEpoch).toBe(1);
    expect(names(again.assignment?.partitions)).toHaveLength(3);
  });
});

describe('fencing', () => {
  it('fences an epoch that is neither current nor previous-with-subset', () => {
    const client = harness.client();
    client.heartbeat();
    expect(codeOf(() => harness.heartbeat({ memberId: client.memberId, memberEpoch: 7 }))).toBe(
      'FENCED_MEMBER_EPOCH',
    );
  });

  it('accepts the previous epoch with owned partitions inside the assignment (lost response)', () => {
    const client = harness.client();
    client.heartbeat();
    const other = harness.client();
    other.heartbeat();
    client.heartbeat();
    client.heartbeat(); // acknowledged, now at epoch 2; previous epoch 1
    expect(client.memberEpoch).toBe(2);
    const response = harness.heartbeat({
      memberId: client.memberId,
      memberEpoch: 1,
      subscribedTopics: ['t'],
      ownedPartitions: client.owned.slice(0, 1),
    });
    expect(response.memberEpoch).toBe(2);
    expect(response.assignment?.partitions).toEqual(client.owned);
  });

  it('fences the previous epoch when the member owns partitions outside its assignment', () => {
    const client = harness.client();
    client.heartbeat();
    harness.client().heartbeat();
    client.heartbeat();
    client.heartbeat();
    expect(
      codeOf(() =>
        harness.heartbeat({
          memberId: client.memberId,
          memberEpoch: 1,
          subscribedTopics: ['t'],
          ownedPartitions: [0, 1, 2, 3, 4, 5].map((partition) => ({ topic: 't', partition })),
        }),
      ),
    ).toBe('FENCED_MEMBER_EPOCH');
  });

  it('answers UNKNOWN_MEMBER_ID for an unknown member with a non-zero epoch', () => {
    expect(codeOf(() => harness.heartbeat({ memberId: 'ghost', memberEpoch: 3 }))).toBe(
      'UNKNOWN_MEMBER_ID',
    );
    expect(codeOf(() => harness.heartbeat({ memberId: 'ghost', memberEpoch: -1 }))).toBe(
      'UNKNOWN_MEMBER_ID',
    );
  });

  it('lets a fenced member rejoin with epoch 0 and its id, releasing what it held', () => {
    const client = harness.client();
    client.heartbeat();
    const rejoined = harness.heartbeat({
      memberId: client.memberId,
      memberEpoch: 0,
      subscribedTopics: ['t'],
    });
    expect(rejoined.memberId).toBe(client.memberId);
    expect(names(rejoined.assignment?.partitions)).toHaveLength(6);
    expect(harness.group.describeMembers()).toHaveLength(1);
  });

  it('describes each member with its subscription and its target beside its assignment', () => {
    const first = harness.client();
    first.heartbeat();
    const second = harness.client();
    second.heartbeat();
    // The first member still holds all six until it releases three to the second.
    const [described, joined] = harness.group.describeMembers();
    expect(described!.subscribedTopics).toEqual(['t']);
    expect(described!.subscribedRegex).toBe('');
    expect(described!.assignment).toHaveLength(6);
    expect(described!.targetAssignment).toHaveLength(3);
    expect(joined!.targetAssignment).toHaveLength(3);
    expect(harness.group.assignmentEpoch).toBe(harness.group.groupEpoch);
    harness.settle([first, second]);
    for (const member of harness.group.describeMembers()) {
      expect(member.assignment).toEqual(member.targetAssignment);
    }
  });

  it('keeps who a member is (rack, client id and host, type) without a new group epoch', () => {
    const joined = harness.heartbeat({
      subscribedTopics: ['t'],
      clientId: 'billing',
      clientHost: '10.1.2.3',
      rackId: 'rack-a',
    });
    const epoch = harness.group.groupEpoch;
    expect(harness.group.describeMembers()[0]).toMatchObject({
      clientId: 'billing',
      clientHost: '10.1.2.3',
      rackId: 'rack-a',
      memberType: 'consumer',
    });
    harness.heartbeat({
      memberId: joined.memberId,
      memberEpoch: joined.memberEpoch,
      subscribedTopics: ['t'],
      ownedPartitions: joined.assignment!.partitions,
      clientId: 'billing-2',
      clientHost: '10.1.2.3',
      memberType: 'classic',
    });
    expect(harness.group.groupEpoch).toBe(epoch);
    expect(harness.group.describeMembers()[0]).toMatchObject({
      clientId: 'billing-2',
      rackId: '',
      memberType: 'classic',
    });
    expect(harness.replayed().snapshot()).toEqual(harness.group.snapshot());
    expect(codeOf(() => harness.heartbeat({ memberType: 'share' }))).toBe('INVALID_REQUEST');
    expect(codeOf(() => harness.heartbeat({ clientId: 'x'.repeat(256) }))).toBe('INVALID_REQUEST');
  });

  it('does not change the group when a request is rejected', () => {
    const client = harness.client();
    client.heartbeat();
    const before = harness.group.snapshot();
    codeOf(() => harness.heartbeat({ memberId: client.memberId, memberEpoch: 9 }));
    codeOf(() => harness.heartbeat({ subscribedRegex: '(' }));
    expect(harness.group.snapshot()).toEqual(before);
  });
});

describe('static membership', () => {
  it('keeps the assignment of a member that left with -2 for its instance id', () => {
    const first = harness.client(['t'], 'instance-a');
    first.heartbeat();
    const second = harness.client(['t'], 'instance-b');
    second.heartbeat();
    harness.settle([first, second]);
    const epochBefore = harness.group.groupEpoch;
    const held = first.owned;
    expect(harness.heartbeat({ memberId: first.memberId, memberEpoch: -2 }).memberEpoch).toBe(-2);
    expect(harness.group.groupEpoch).toBe(epochBefore);
    // The restarted process joins with a new member id and the same instance id.
    const restarted = harness.client(['t'], 'instance-a');
    const response = restarted.heartbeat();
    expect(response.memberId).not.toBe(first.memberId);
    expect(response.assignment?.partitions).toEqual(held);
    expect(harness.group.groupEpoch).toBe(epochBefore);
    expect(harness.group.describeMembers().map((member) => member.memberId)).not.toContain(
      first.memberId,
    );
    expect(harness.group.state).toBe('STABLE');
  });

  it('refuses an instance id held by a live member', () => {
    harness.client(['t'], 'instance-a').heartbeat();
    expect(codeOf(() => harness.client(['t'], 'instance-a').heartbeat())).toBe(
      'UNRELEASED_INSTANCE_ID',
    );
  });

  it('removes a static member that does not return within its session timeout', () => {
    const first = harness.client(['t'], 'instance-a');
    first.heartbeat();
    const second = harness.client();
    second.heartbeat();
    harness.settle([first, second]);
    harness.heartbeat({ memberId: first.memberId, memberEpoch: -2 }, 2_000);
    second.heartbeat(30_000);
    expect(harness.expire(2_000 + 44_999)).toEqual([]);
    harness.expire(2_000 + 45_000);
    expect(harness.group.describeMembers().map((member) => member.memberId)).toEqual([
      second.memberId,
    ]);
    second.heartbeat(50_000);
    second.heartbeat(50_000);
    expect(second.owned).toHaveLength(6);
  });
});

describe('expiry', () => {
  it('removes a member whose session ran out and frees its partitions', () => {
    const first = harness.client();
    first.heartbeat(1_000);
    const second = harness.client();
    second.heartbeat(1_000);
    harness.settle([first, second]);
    second.heartbeat(40_000);
    expect(harness.expire(45_999)).toEqual([]);
    const records = harness.expire(46_000);
    expect(records.map((record) => record.type)).toEqual([
      'member-removed',
      'group-epoch',
      'target-assignment',
    ]);
    second.heartbeat(46_000);
    expect(second.owned).toHaveLength(6);
  });

  it('fences one member on demand as expiry would, its next heartbeat UNKNOWN_MEMBER_ID', () => {
    const first = harness.client();
    first.heartbeat();
    const second = harness.client();
    second.heartbeat();
    harness.settle([first, second]);
    const epochBefore = harness.group.groupEpoch;
    const records = harness.group.fenceMember(first.memberId, harness.nowMs);
    harness.records.push(...records);
    expect(records.map((record) => record.type)).toEqual([
      'member-removed',
      'group-epoch',
      'target-assignment',
    ]);
    expect(harness.group.groupEpoch).toBe(epochBefore + 1);
    expect(() => harness.group.fenceMember(first.memberId, harness.nowMs)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_MEMBER_ID' }),
    );
    expect(() => first.heartbeat()).toThrow(expect.objectContaining({ code: 'UNKNOWN_MEMBER_ID' }));
    second.heartbeat();
    second.heartbeat();
    expect(second.owned).toHaveLength(6);
    expect(harness.replayed().snapshot()).toEqual(harness.group.snapshot());
  });

  it('fences a member that holds revoked partitions beyond its rebalance timeout', () => {
    const first = harness.client();
    harness.heartbeat({ subscribedTopics: ['t'], rebalanceTimeoutMs: 10_000 }, 1_000);
    void first;
    const revoker = harness.group.describeMembers()[0]!;
    const other = harness.client();
    other.heartbeat(2_000);
    harness.heartbeat(
      {
        memberId: revoker.memberId,
        memberEpoch: revoker.memberEpoch,
        subscribedTopics: ['t'],
        ownedPartitions: revoker.assignment,
      },
      3_000,
    );
    // Still holding the revoked partitions at 12_999: not yet.
    harness.heartbeat(
      {
        memberId: revoker.memberId,
        memberEpoch: revoker.memberEpoch,
        subscribedTopics: ['t'],
        ownedPartitions: revoker.assignment,
      },
      12_000,
    );
    other.heartbeat(12_000);
    expect(harness.expire(12_999)).toEqual([]);
    harness.expire(13_000);
    expect(harness.group.describeMembers().map((member) => member.memberId)).toEqual([
      other.memberId,
    ]);
    other.heartbeat(13_000);
    other.heartbeat(13_000);
    expect(other.owned).toHaveLength(6);
  });
});

describe('subscriptions and topics', () => {
  it('assigns a topic only among the members subscribed to it', () => {
    harness.topics.counts.set('u', 4);
    const onlyT = harness.client(['t']);
    const both = harness.client(['t', 'u']);
    onlyT.heartbeat();
    both.heartbeat();
    harness.settle([onlyT, both]);
    expect(names(onlyT.owned).every((name) => name.startsWith('t-'))).toBe(true);
    expect(names(both.owned).filter((name) => name.startsWith('u-'))).toHaveLength(4);
    expect(onlyT.owned.length + both.owned.length).toBe(10);
  });

  it('bumps the epoch and assigns new partitions when a topic grows', () => {
    const client = harness.client();
    client.heartbeat();
    harness.topics.counts.set('t', 9);
    expect(harness.topicsChanged().map((record) => record.type)).toEqual([
      'group-epoch',
      'target-assignment',
    ]);
    expect(client.heartbeat().memberEpoch).toBe(2);
    expect(client.owned).toHaveLength(9);
  });

  it('ignores changes to topics nobody subscribes to', () => {
    harness.client().heartbeat();
    harness.topics.counts.set('other', 3);
    expect(harness.topicsChanged()).toEqual([]);
  });

  it('picks up topics created later that match a regex, skipping internal topics', () => {
    harness.topics.counts.set('__consumer_offsets', 50);
    const response = harness.heartbeat({ subscribedRegex: 'orders-.*' });
    expect(response.assignment?.partitions).toEqual([]);
    harness.topics.counts.set('orders-eu', 2);
    harness.topics.counts.set('orders', 2);
    harness.topicsChanged();
    const next = harness.heartbeat({
      memberId: response.memberId,
      memberEpoch: response.memberEpoch,
      subscribedRegex: 'orders-.*',
    });
    expect(names(next.assignment?.partitions)).toEqual(['orders-eu-0', 'orders-eu-1']);
    expect(codeOf(() => harness.heartbeat({ subscribedRegex: '__.*|x' }))).toBeUndefined();
    expect(
      harness.group
        .describeMembers()
        .every((member) => member.assignment.every(({ topic }) => !topic.startsWith('__'))),
    ).toBe(true);
  });

  it('is subscribed to a topic a member names or whose name its regex matches', () => {
    expect(harness.group.isSubscribedToTopic('t')).toBe(false);
    const named = harness.client(['t']);
    named.heartbeat();
    harness.heartbeat({ subscribedRegex: 'orders-.*' });
    expect(harness.group.isSubscribedToTopic('t')).toBe(true);
    // A regex covers a name whether or not that topic exists yet.
    expect(harness.group.isSubscribedToTopic('orders-eu')).toBe(true);
    expect(harness.group.isSubscribedToTopic('orders')).toBe(false);
    expect(harness.group.isSubscribedToTopic('__orders-x')).toBe(false);
  });

  it('revokes the partitions of a deleted topic', () => {
    harness.topics.counts.set('u', 2);
    const client = harness.client(['t', 'u']);
    client.heartbeat();
    harness.topics.counts.delete('u');
    harness.topicsChanged();
    const response = client.heartbeat();
    expect(names(response.assignment?.partitions)).toHaveLength(6);
  });

  it('rejects an invalid regex, naming subscribedRegex', () => {
    for (const [pattern, code] of [
      ['(', 'INVALID_REGULAR_EXPRESSION'],
      ['a(?=b)', 'INVALID_REGULAR_EXPRESSION'],
      ['(a)\\1', 'INVALID_REGULAR_EXPRESSION'],
      ['x'.repeat(1001), 'INVALID_REQUEST'],
    ]) {
      let refused: { code?: string; message?: string } = {};
      try {
        harness.heartbeat({ subscribedRegex: pattern });
      } catch (error) {
        refused = error as { code?: string; message?: string };
      }
      expect(refused.code, pattern).toBe(code);
      expect(refused.message).toContain('subscribedRegex');
    }
  });

  it('rejects bad fields, naming them', () => {
    const cases: [Parameters<typeof heartbeatRequest>[0], string][] = [
      [{ memberEpoch: -3 }, 'memberEpoch'],
      [{ groupId: 'other' }, 'groupId'],
      [{ subscribedTopics: ['a'], subscribedRegex: 'b' }, 'subscribedTopics'],
      [{ subscribedTopics: [''] }, 'subscribedTopics'],
      [{ ownedPartitions: [{ topic: 't', partition: -1 }] }, 'ownedPartitions'],
      [{ rebalanceTimeoutMs: -5 }, 'rebalanceTimeoutMs'],
      [{ assignor: 'sticky' }, 'assignor'],
    ];
    for (const [fields, field] of cases) {
      expect(() => harness.heartbeat(fields)).toThrow(field);
    }
    const group = new ConsumerGroup('g', timeouts, { limits: { subscribedTopicsMax: 1 } });
    expect(() =>
      group.heartbeat(heartbeatRequest({ subscribedTopics: ['a', 'b'] }), harness.topics, 0),
    ).toThrow('subscribedTopics');
  });
});

describe('offset commit and fetch validation', () => {
  it('accepts the current member epoch only', () => {
    const client = harness.client();
    client.heartbeat();
    expect(() => harness.group.validateOffsetCommit(client.memberId, 1)).not.toThrow();
    expect(codeOf(() => harness.group.validateOffsetCommit(client.memberId, 0))).toBe(
      'STALE_MEMBER_EPOCH',
    );
    expect(codeOf(() => harness.group.validateOffsetCommit('ghost', 1))).toBe('UNKNOWN_MEMBER_ID');
    expect(codeOf(() => harness.group.validateOffsetCommit('', -1))).toBe('UNKNOWN_MEMBER_ID');
  });

  it('accepts a simple commit (no member) only while the group has no members', () => {
    expect(() => harness.group.validateOffsetCommit('', -1)).not.toThrow();
  });

  it('fetches for a member at its current epoch only, even in an empty group', () => {
    expect(codeOf(() => harness.group.validateOffsetFetch('ghost', 1))).toBe('UNKNOWN_MEMBER_ID');
    const client = harness.client();
    client.heartbeat();
    expect(() => harness.group.validateOffsetFetch(client.memberId, 1)).not.toThrow();
    expect(codeOf(() => harness.group.validateOffsetFetch(client.memberId, 2))).toBe(
      'STALE_MEMBER_EPOCH',
    );
    expect(codeOf(() => harness.group.validateOffsetFetch('', -1))).toBe('UNKNOWN_MEMBER_ID');
  });
});

describe('replay', () => {
  it('rebuilds the same group from the emitted records', () => {
    const first = harness.client(['t'], 'instance-a');
    const second = harness.client();
    first.heartbeat();
    second.heartbeat();
    first.heartbeat(harness.nowMs, false);
    harness.topics.counts.set('t', 10);
    harness.topicsChanged();
    second.heartbeat();
    expect(harness.replayed().snapshot()).toEqual(harness.group.snapshot());
    harness.settle([first, second]);
    expect(harness.replayed().snapshot()).toEqual(harness.group.snapshot());
  });

  it('does not bump the epoch after a takeover when the topics did not change', () => {
    const client = harness.client();
    client.heartbeat();
    const rebuilt = harness.replayed();
    const { records } = rebuilt.heartbeat(
      heartbeatRequest({
        memberId: client.memberId,
        memberEpoch: client.memberEpoch,
        subscribedTopics: ['t'],
        ownedPartitions: client.owned,
      }),
      harness.topics,
      harness.nowMs,
    );
    expect(records).toEqual([]);
    expect(rebuilt.groupEpoch).toBe(1);
  });

  it('deletes an empty group and refuses to delete a group with members', () => {
    const client = harness.client();
    client.heartbeat();
    expect(codeOf(() => harness.group.delete(harness.nowMs))).toBe('NON_EMPTY_GROUP');
    harness.heartbeat({ memberId: client.memberId, memberEpoch: -1 });
    harness.records.push(...harness.group.delete(harness.nowMs));
    expect(harness.group.state).toBe('DEAD');
    expect(harness.replayed().state).toBe('DEAD');
  });

  it('rebuilds the same group from its snapshot records', () => {
    const first = harness.client(['t'], 'instance-a');
    const second = harness.client();
    first.heartbeat();
    second.heartbeat();
    first.heartbeat(harness.nowMs, false);
    const rebuilt = new ConsumerGroup('g', timeouts);
    for (const record of harness.group.snapshotRecords()) rebuilt.replay(record, harness.nowMs);
    expect(rebuilt.snapshot()).toEqual(harness.group.snapshot());
    expect(new ConsumerGroup('g', timeouts).snapshotRecords()).toEqual([]);
  });

  it('stays ASSIGNING after a takeover until it sees topic metadata again', () => {
    const first = harness.client();
    const second = harness.client();
    first.heartbeat();
    second.heartbeat();
    harness.settle([first, second]);
    const rebuilt = harness.replayed();
    // A leave needs no topic metadata, but recomputing the target does.
    rebuilt.heartbeat(
      heartbeatRequest({ memberId: first.memberId, memberEpoch: -1 }),
      harness.topics,
      harness.nowMs,
    );
    expect(rebuilt.state).toBe('ASSIGNING');
    expect(
      rebuilt.onTopicsChanged(harness.topics, harness.nowMs).map((record) => record.type),
    ).toEqual(['target-assignment']);
    expect(rebuilt.state).toBe('RECONCILING');
  });
});

describe('epochs and assignors', () => {
  it('bumps the group epoch when a member changes its subscription', () => {
    harness.topics.counts.set('u', 2);
    const client = harness.client();
    client.heartbeat();
    const response = harness.heartbeat({
      memberId: client.memberId,
      memberEpoch: client.memberEpoch,
      subscribedTopics: ['t', 'u'],
      ownedPartitions: client.owned,
    });
    expect(harness.group.groupEpoch).toBe(2);
    expect(response.memberEpoch).toBe(2);
    expect(names(response.assignment?.partitions)).toHaveLength(8);
  });

  it('does not bump the group epoch for a plain heartbeat', () => {
    const client = harness.client();
    client.heartbeat();
    client.heartbeat();
    client.heartbeat();
    expect(harness.group.groupEpoch).toBe(1);
  });

  it('assigns with the range assignor when the first member asks for it', () => {
    harness.topics.counts.set('t', 3);
    const clients = ['b', 'a'].map((memberId) => {
      const client = harness.client();
      client.memberId = memberId;
      client.assignor = 'range';
      client.heartbeat();
      return client;
    });
    expect(harness.group.assignorName).toBe('range');
    harness.settle(clients);
    // Range in member-id order: 'a' takes partitions 0 and 1, 'b' takes 2.
    const byMember = Object.fromEntries(
      harness.group.describeMembers().map((member) => [member.memberId, names(member.assignment)]),
    );
    expect(byMember).toEqual({ a: ['t-0', 't-1'], b: ['t-2'] });
    expect(harness.group.state).toBe('STABLE');
  });

  it('keeps the assignor a later member names while others are in the group', () => {
    harness.client().heartbeat();
    harness.heartbeat({ subscribedTopics: ['t'], assignor: 'range' });
    expect(harness.group.assignorName).toBe('uniform');
  });
});
