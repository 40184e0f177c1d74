// Proves the group's safety and liveness under random histories (fast-check): members join (some
// static, some by regex), leave, bounce with -2 and return, heartbeat with or without taking in
// the response (a lost response), go silent until the session or rebalance timeout expires them,
// while topics grow and regex-matching topics appear. After every step: no partition is held by
// two members (assigned or pending revocation), every client owns only what its member holds,
// and replaying the emitted records (through JSON), or the group's snapshot records, rebuilds the
// live group. At the end, once every client heartbeats and acknowledges, the group converges:
// STABLE, every partition of a subscribed topic assigned exactly once, every client owning
// exactly its target.
import type { ConsumerGroupHeartbeatResponse } from '@spool/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConsumerGroup } from './consumer-group';
import { heartbeatRequest, TestTopics } from './testing';
import type { AssignorName } from './group-settings';
import type { GroupRecord, TopicPartitionRecord } from './group-records';

const timeouts = { sessionTimeoutMs: 45_000, heartbeatIntervalMs: 3_000 };
const rebalanceTimeoutMs = 30_000;

const subscriptions: { topics: string[]; regex: string }[] = [
  { topics: ['a'], regex: '' },
  { topics: ['a', 'b'], regex: '' },
  { topics: ['b'], regex: '' },
  { topics: [], regex: 'r-.*' },
];

type Action =
  | { kind: 'join'; subscription: number; instance: number | undefined }
  | { kind: 'heartbeat'; client: number; acknowledge: boolean }
  | { kind: 'leave'; client: number }
  | { kind: 'static-leave'; client: number }
  | { kind: 'return'; client: number }
  | { kind: 'wait'; ms: number }
  | { kind: 'grow'; topic: 'a' | 'b' | 'r-1' | 'r-2'; by: number };

const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('join' as const),
      subscription: fc.integer({ min: 0, max: subscriptions.length - 1 }),
      instance: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('heartbeat' as const),
      client: fc.nat(20),
      acknowledge: fc.boolean(),
    }),
    weight: 8,
  },
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), client: fc.nat(20) }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant('static-leave' as const), client: fc.nat(20) }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('return' as const), client: fc.nat(20) }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.integer({ min: 0, max: 50_000 }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('grow' as const),
      topic: fc.constantFrom('a' as const, 'b' as const, 'r-1' as const, 'r-2' as const),
      by: fc.integer({ min: 1, max: 3 }),
    }),
    weight: 1,
  },
);

/** A consumer as KIP-848 expects: on FENCED or UNKNOWN it drops everything and rejoins. */
interface SimulatedClient {
  memberId: string;
  memberEpoch: number;
  owned: TopicPartitionRecord[];
  subscription: { topics: string[]; regex: string };
  instanceId: string;
  away: boolean;
  gone: boolean;
}

class Simulation {
  readonly topics = new TestTopics({ a: 3, b: 5 });
  readonly group = new ConsumerGroup('g', timeouts);
  readonly records: GroupRecord[] = [];
  readonly clients: SimulatedClient[] = [];
  nowMs = 0;

  constructor(private readonly assignor: AssignorName) {}

  run(action: Action): void {
    switch (action.kind) {
      case 'join': {
        const instanceId = action.instance === undefined ? '' : `instance-${action.instance}`;
        if (instanceId !== '' && this.clients.some((c) => c.instanceId === instanceId && !c.gone)) {
          return;
        }
        const client: SimulatedClient = {
          memberId: '',
          memberEpoch: 0,
          owned: [],
          subscription: subscriptions[action.subscription]!,
          instanceId,
          away: false,
          gone: false,
        };
        this.clients.push(client);
        this.heartbeat(client, true);
        return;
      }
      case 'heartbeat': {
        const client = this.live()[action.client % Math.max(1, this.live().length)];
        if (client !== undefined) this.heartbeat(client, action.acknowledge);
        return;
      }
      case 'leave': {
        const client = this.live()[action.client % Math.max(1, this.live().length)];
        if (client === undefined) return;
        this.leave(client, -1);
        client.gone = true;
        return;
      }
      case 'static-leave': {
        const statics = this.live().filter((c) => c.instanceId !== '');
        const client = statics[action.client % Math.max(1, statics.length)];
        if (client === undefined) return;
        this.leave(client, -2);
        client.away = true;
        client.owned = [];
        return;
      }
      case 'return': {
        const away = this.clients.filter((c) => c.away && !c.gone);
        const client = away[action.client % Math.max(1, away.length)];
        if (client !== undefined) this.comeBack(client);
        return;
      }
      case 'wait':
        this.nowMs += action.ms;
        this.records.push(...this.group.expire(this.nowMs));
        return;
      case 'grow':
        this.topics.counts.set(
          action.topic,
          (this.topics.counts.get(action.topic) ?? 0) + action.by,
        );
        this.records.push(...this.group.onTopicsChanged(this.topics, this.nowMs));
        return;
    }
  }

  live(): SimulatedClient[] {
    return this.clients.filter((client) => !client.away && !client.gone);
  }

  /** A restarted static member: a new process, same instance id, nothing owned. */
  comeBack(client: SimulatedClient): void {
    client.away = false;
    client.memberId = '';
    client.memberEpoch = 0;
    client.owned = [];
    this.heartbeat(client, true);
  }

  heartbeat(client: SimulatedClient, acknowledge: boolean): void {
    let response: ConsumerGroupHeartbeatResponse;
    try {
      const result = this.group.heartbeat(
        heartbeatRequest({
          memberId: client.memberId,
          memberEpoch: client.memberEpoch,
          instanceId: client.instanceId,
          subscribedTopics: client.subscription.topics,
          subscribedRegex: client.subscription.regex,
          ownedPartitions: client.owned,
          rebalanceTimeoutMs,
          assignor: this.assignor,
        }),
        this.topics,
        this.nowMs,
      );
      this.records.push(...result.records);
      response = result.response;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'FENCED_MEMBER_EPOCH' || code === 'UNKNOWN_MEMBER_ID') {
        // Give up every partition and rejoin: with the same id when fenced (KIP-848).
        client.owned = [];
        client.memberEpoch = 0;
        if (code === 'UNKNOWN_MEMBER_ID') client.memberId = '';
        return;
      }
      if (code === 'UNRELEASED_INSTANCE_ID') return;
      throw error;
    }
    // A lost response: the client learns nothing from it.
    if (!acknowledge) return;
    client.memberId = response.memberId;
    client.memberEpoch = response.memberEpoch;
    if (response.assignment !== undefined) client.owned = response.assignment.partitions;
  }

  leave(client: SimulatedClient, epoch: -1 | -2): void {
    try {
      this.records.push(
        ...this.group.heartbeat(
          heartbeatRequest({
            memberId: client.memberId,
            memberEpoch: epoch,
            instanceId: client.instanceId,
          }),
          this.topics,
          this.nowMs,
        ).records,
      );
    } catch (error) {
      if ((error as { code?: string }).code !== 'UNKNOWN_MEMBER_ID') throw error;
    }
  }

  checkSafety(): void {
    const snapshot = this.group.snapshot();
    const holder = new Map<string, string>();
    for (const member of snapshot.members) {
      for (const { topic, partition } of [...member.assigned, ...member.pendingRevocation]) {
        const key = `${topic}-${partition}`;
        expect(holder.get(key), `${key} held by two members`).toBeUndefined();
        holder.set(key, member.memberId);
      }
    }
    // A client whose member still exists owns only what that member holds, so no two such
    // clients own the same partition. (A removed member's client is a zombie: a real consumer
    // stops on its own session timeout; its next heartbeat is refused.)
    for (const client of this.live()) {
      if (client.memberId === '') continue;
      for (const { topic, partition } of client.owned) {
        const key = `${topic}-${partition}`;
        if (snapshot.members.some((member) => member.memberId === client.memberId)) {
          expect(holder.get(key), `${key} owned by ${client.memberId}`).toBe(client.memberId);
        }
      }
    }
    const replayed = new ConsumerGroup('g', timeouts);
    for (const record of this.records) {
      replayed.replay(JSON.parse(JSON.stringify(record)) as GroupRecord, this.nowMs);
    }
    expect(replayed.snapshot()).toEqual(snapshot);
    const fromCheckpoint = new ConsumerGroup('g', timeouts);
    for (const record of this.group.snapshotRecords()) fromCheckpoint.replay(record, this.nowMs);
    expect(fromCheckpoint.snapshot()).toEqual(snapshot);
  }

  /**
   * Every client heartbeats every 10 s and acknowledges. Members whose join response was lost
   * (orphans no client knows) expire after the session timeout, so at least that long passes.
   */
  converge(): void {
    for (const client of this.clients.filter((c) => c.away && !c.gone)) this.comeBack(client);
    const roundMs = 10_000;
    const roundsMin = Math.ceil(timeouts.sessionTimeoutMs / roundMs) + 1;
    for (let round = 0; round < roundsMin + 12; round++) {
      if (round >= roundsMin && this.group.state !== 'RECONCILING') break;
      this.nowMs += roundMs;
      for (const client of this.live()) this.heartbeat(client, true);
      // Rejoin at once anyone fenced or forgotten in that round.
      for (const client of this.live()) {
        if (client.memberEpoch === 0) this.heartbeat(client, true);
      }
      this.records.push(...this.group.expire(this.nowMs));
    }
    for (const client of this.live()) this.heartbeat(client, true);
  }

  checkConverged(): void {
    expect(this.group.state).toBe(this.live().length === 0 ? 'EMPTY' : 'STABLE');
    const snapshot = this.group.snapshot();
    expect(snapshot.members.map((member) => member.memberId).sort()).toEqual(
      this.live()
        .map((client) => client.memberId)
        .sort(),
    );
    const assigned = new Map<string, string>();
    for (const member of snapshot.members) {
      for (const { topic, partition } of member.assigned) {
        assigned.set(`${topic}-${partition}`, member.memberId);
      }
      const target = snapshot.targetAssignment.find((t) => t.memberId === member.memberId);
      expect(member.assigned).toEqual(target?.partitions ?? []);
      expect(member.memberEpoch).toBe(snapshot.groupEpoch);
    }
    const subscribed = new Set<string>();
    for (const client of this.live()) {
      for (const topic of client.subscription.topics) subscribed.add(topic);
      if (client.subscription.regex !== '') {
        for (const topic of this.topics.counts.keys())
          if (/^r-.*$/.test(topic)) subscribed.add(topic);
      }
      const member = snapshot.members.find((m) => m.memberId === client.memberId);
      expect(member, `client ${client.memberId} is a member`).toBeDefined();
      expect(client.owned).toEqual(member!.assigned);
    }
    for (const topic of subscribed) {
      const count = this.topics.counts.get(topic) ?? 0;
      for (let partition = 0; partition < count; partition++) {
        expect(assigned.has(`${topic}-${partition}`), `${topic}-${partition} assigned`).toBe(true);
      }
    }
  }
}

describe('consumer group under random histories', () => {
  for (const assignor of ['uniform', 'range'] as const) {
    it(`is safe after every step, replays exactly, and converges (${assignor})`, () => {
      fc.assert(
        fc.property(fc.array(actionArbitrary, { minLength: 1, maxLength: 60 }), (actions) => {
          const simulation = new Simulation(assignor);
          for (const action of actions) {
            simulation.run(action);
            simulation.checkSafety();
          }
          simulation.converge();
          simulation.checkSafety();
          simulation.checkConverged();
        }),
        { numRuns: 150 },
      );
    });
  }
});
