// Proves the outage breakdown on hand-made histories: it finds every gap over 1 s in the
// acknowledgements and in the deliveries, names the fault that began before it, cuts it at the
// milestones inside it and charges each piece to the phase its closing milestone ends (detection
// and election split by the controller's electionMs, a shard's load by its loadMs, the tail to
// client retry), and reads those milestones out of real log lines.
import { describe, expect, it } from 'vitest';
import type { HistoryEvent, MilestoneKind } from './history';
import { GatewayLeaders, milestoneOf } from './milestones';
import { formatOutages, gapsOver, outageBreakdown, type Phase } from './outages';

const ok = (timeMs: number, partition = 0, offset = String(timeMs)): HistoryEvent => ({
  type: 'ok',
  timeMs,
  producer: 0,
  values: [`p0-${timeMs}`],
  partition,
  offset,
});
const deliver = (timeMs: number, partition = 0, offset = String(timeMs)): HistoryEvent => ({
  type: 'deliver',
  timeMs,
  consumer: 0,
  partition,
  offset,
  values: [`p0-${timeMs}`],
});
const milestone = (
  timeMs: number,
  kind: MilestoneKind,
  durationMs?: number,
  source = 'x',
): HistoryEvent => ({
  type: 'milestone',
  timeMs,
  kind,
  source,
  ...(durationMs === undefined ? {} : { durationMs }),
});
const nemesis = (
  timeMs: number,
  phase: 'start' | 'heal',
  fault: 'kill' | 'pause' = 'kill',
  target = 'storage-1',
): HistoryEvent => ({ type: 'nemesis', timeMs, phase, fault, target });
const window = (startMs: number, endMs: number): HistoryEvent[] => [
  { type: 'phase', timeMs: startMs, phase: 'workload' },
  { type: 'phase', timeMs: endMs, phase: 'healed' },
];
const none: Record<Phase, number> = {
  faultHeld: 0,
  isrRejoin: 0,
  detection: 0,
  election: 0,
  propagation: 0,
  shardLoading: 0,
  groupReconciliation: 0,
  clientRetry: 0,
};

describe('outageBreakdown', () => {
  it('splits a leader kill into detection, election, propagation and client retry', () => {
    const outages = outageBreakdown([
      ...window(0, 20_000),
      ...[0, 500, 1_000].map((timeMs) => ok(timeMs)),
      ...[0, 500, 1_000, 7_000, 7_500, 20_000].map((timeMs) => deliver(timeMs)),
      nemesis(1_020, 'start'),
      // The controller decided at 5,000 and took 200 ms to write the elections and the fence.
      milestone(5_200, 'broker-fenced', 200),
      milestone(5_300, 'replica-leader'),
      milestone(5_400, 'gateway-metadata'),
      milestone(5_500, 'produce-retry', 400),
      milestone(6_000, 'produce-retry', 800),
      nemesis(8_000, 'heal'),
      ...[6_400, 7_000, 7_500, 20_000].map((timeMs) => ok(timeMs)),
    ]);
    const produce = outages.filter((outage) => outage.kind === 'produce');
    expect(produce).toEqual([
      {
        kind: 'produce',
        startMs: 1_000,
        durationMs: 5_400,
        fault: { kind: 'kill', target: 'storage-1', startMs: 1_020, healMs: 8_000 },
        phases: { ...none, detection: 4_000, election: 200, propagation: 200, clientRetry: 1_000 },
        clientRetries: 2,
        clientBackoffMs: 1_200,
        clientRetryCodes: { x: 2 },
        milestones: ['+4200 broker-fenced x', '+4300 replica-leader x', '+4400 gateway-metadata x'],
        offlineMs: 0,
        excepted: null,
      },
      expect.objectContaining({ startMs: 7_500, durationMs: 12_500 }),
    ]);
  });

  it('puts a step logged after a later mark (the fence after its elections) where it began', () => {
    const [outage] = outageBreakdown([
      ...window(0, 10_000),
      ...[0, 1_000, 10_000].map((timeMs) => ok(timeMs)),
      ...[0, 10_000].map((timeMs) => deliver(timeMs)),
      nemesis(1_010, 'start'),
      // The new leader took over at 5,300, before the controller logged the fence it decided at
      // 5,000 (its writes took 400 ms).
      milestone(5_300, 'replica-leader'),
      milestone(5_400, 'broker-fenced', 400),
      milestone(6_000, 'gateway-metadata'),
    ]).filter((candidate) => candidate.kind === 'produce');
    expect(outage!.phases).toEqual({
      ...none,
      detection: 4_000,
      propagation: 300 + 600,
      election: 100,
      clientRetry: 4_000,
    });
  });

  it('charges the wait for a follower to rejoin an ISR below min.insync.replicas to isrRejoin', () => {
    const [outage] = outageBreakdown([
      ...window(0, 10_000),
      ...[0, 1_000, 10_000].map((timeMs) => ok(timeMs)),
      ...[0, 1_000, 10_000].map((timeMs) => deliver(timeMs)),
      nemesis(900, 'start', 'pause', 'storage-1'),
      milestone(2_000, 'produce-retry', 100, 'NOT_ENOUGH_REPLICAS'),
      milestone(3_000, 'produce-retry', 200, 'NOT_ENOUGH_REPLICAS'),
      nemesis(4_000, 'heal', 'pause', 'storage-1'),
      milestone(6_500, 'isr-expanded'),
    ]);
    expect(outage).toMatchObject({
      kind: 'produce',
      phases: { ...none, faultHeld: 3_000, isrRejoin: 2_500, clientRetry: 3_500 },
      clientRetryCodes: { NOT_ENOUGH_REPLICAS: 2 },
      excepted: 'ISR below min.insync.replicas',
    });
  });

  it('excepts an outage of a partition whose only in-sync replica was down, and no more', () => {
    // storage-1 led faults-0 alone in its ISR: killed at 1,000, the partition offline (leader -1)
    // from the fence at 5,000 until a gateway saw it lead again at 15,000.
    const offline = (recoveredMs: number, lastOkMs: number): HistoryEvent[] => [
      ...window(0, 30_000),
      ...[0, 900, lastOkMs].map((timeMs) => ok(timeMs)),
      ...[0, 900, lastOkMs].map((timeMs) => deliver(timeMs)),
      milestone(200, 'gateway-metadata', undefined, 'gateway-0 faults-0:1@7 faults-1:2@3'),
      nemesis(1_000, 'start', 'kill', 'storage-1'),
      milestone(5_000, 'gateway-metadata', undefined, 'gateway-0 faults-0:-1@8'),
      milestone(5_010, 'gateway-metadata', undefined, 'gateway-1 faults-0:-1@8'),
      nemesis(12_000, 'heal', 'kill', 'storage-1'),
      milestone(recoveredMs, 'gateway-metadata', undefined, 'gateway-1 faults-0:1@9'),
    ];
    // Back 4 s after the leader returned: the 14.1 s outage is 4.1 s beyond the offline time.
    const [excepted] = outageBreakdown(offline(15_000, 19_000));
    expect(excepted).toMatchObject({ kind: 'produce', durationMs: 18_100, offlineMs: 14_000 });
    expect(excepted!.excepted).toBe(
      'only in-sync replica down: faults-0 (storage-1) without a leader for 14.0 s of it',
    );
    // Back 6 s after: a miss, though it says how much of it was offline.
    const [missed] = outageBreakdown(offline(15_000, 21_000));
    expect(missed).toMatchObject({ durationMs: 20_100, offlineMs: 14_000, excepted: null });
    expect(formatOutages([missed!])).toContain(
      'partitions offline (only in-sync replica down) 14.0 s of it',
    );
  });

  it('counts offline __consumer_offsets against consumers only', () => {
    const outages = outageBreakdown([
      ...window(0, 10_000),
      ...[0, 1_000, 2_000, 8_000, 9_000, 10_000].map((timeMs) => ok(timeMs)),
      // Acknowledged from 1,000, not delivered until 8,000.
      ...[0, 8_000, 9_000, 10_000].map((timeMs) => deliver(timeMs)),
      milestone(100, 'gateway-metadata', undefined, 'gateway-0 __consumer_offsets-2:0@4'),
      nemesis(1_000, 'start', 'pause', 'storage-0'),
      milestone(3_000, 'gateway-metadata', undefined, 'gateway-0 __consumer_offsets-2:-1@5'),
      milestone(6_000, 'gateway-metadata', undefined, 'gateway-0 __consumer_offsets-2:0@6'),
    ]);
    // The consumers' 7 s outage from 1,000 is excepted; the producers' from 2,000 is not.
    expect(outages.map((outage) => [outage.kind, outage.offlineMs, outage.excepted])).toEqual([
      [
        'consume',
        5_000,
        'only in-sync replica down: __consumer_offsets-2 (storage-0) without a leader for 5.0 s of it',
      ],
      ['produce', 0, null],
    ]);
  });

  it('charges the wait for a pause to end to faultHeld, and counts only its own retries', () => {
    const outages = outageBreakdown([
      ...window(0, 5_000),
      ...[0, 1_000, 5_000].map((timeMs) => ok(timeMs)),
      // Acknowledged at 1,000, delivered at 5,000: the consumers' outage begins at 1,000.
      ...[0, 5_000].map((timeMs) => deliver(timeMs)),
      nemesis(900, 'start', 'pause', 'storage-0'),
      milestone(2_000, 'consume-retry', 300),
      nemesis(3_500, 'heal', 'pause', 'storage-0'),
    ]);
    expect(outages.map((outage) => [outage.kind, outage.phases, outage.clientRetries])).toEqual([
      ['produce', { ...none, faultHeld: 2_500, clientRetry: 1_500 }, 0],
      ['consume', { ...none, faultHeld: 2_500, clientRetry: 1_500 }, 1],
    ]);
    expect(outages[0]!.fault).toMatchObject({ kind: 'pause', target: 'storage-0' });
  });

  it('splits a coordinator move into detection, election, propagation, loading, reconciling', () => {
    const [outage] = outageBreakdown([
      ...window(0, 10_000),
      ...[0, 10_000].map((timeMs) => ok(timeMs)),
      // Records up to offset 5,000 acknowledged at 1,000 wait until the delivery at 9,000.
      ok(1_000, 0, '5000'),
      ...[0, 1_000, 9_000, 10_000].map((timeMs) => deliver(timeMs)),
      nemesis(800, 'start', 'kill', 'coordinator-0'),
      milestone(5_100, 'coordinators-removed', 100),
      // Loaded at 6,500 after 1,000 ms of loading: the coordinator learned of it at 5,500.
      milestone(6_500, 'shard-loaded', 1_000),
      milestone(8_000, 'member-stable'),
    ]).filter((candidate) => candidate.kind === 'consume');
    expect(outage!.phases).toEqual({
      ...none,
      detection: 4_000,
      election: 100,
      propagation: 400,
      shardLoading: 1_000,
      groupReconciliation: 1_500,
      clientRetry: 1_000,
    });
  });

  it('names the fault that began up to 1 s into the outage or was still held, else none', () => {
    const outages = outageBreakdown([
      ...window(0, 10_000),
      // Struck 100 ms after the last acknowledgement: the send in flight was its victim.
      nemesis(100, 'start'),
      nemesis(200, 'heal'),
      ...[0, 3_000, 6_000, 10_000].map((timeMs) => ok(timeMs)),
      ...[0, 10_000].map((timeMs) => deliver(timeMs)),
      nemesis(4_500, 'start', 'pause'),
    ]);
    const produce = outages.filter((outage) => outage.kind === 'produce');
    expect(produce.map((outage) => outage.fault?.kind ?? null)).toEqual(['kill', null, 'pause']);
    // The first waited 200 ms for the heal.
    expect(produce.map((outage) => outage.phases.clientRetry)).toEqual([2_800, 3_000, 4_000]);
  });

  it('counts a stretch without deliveries as a consume outage only while records wait', () => {
    const consume = (events: HistoryEvent[]) =>
      outageBreakdown([...window(0, 10_000), ...events])
        .filter((outage) => outage.kind === 'consume')
        .map((outage) => [outage.startMs, outage.durationMs]);
    // Nothing acknowledged from 1,000 to 8,000 (the producers held up): nothing to deliver.
    expect(
      consume([
        ...[0, 1_000, 8_000, 10_000].map((timeMs) => ok(timeMs)),
        ...[0, 1_000, 8_000, 10_000].map((timeMs) => deliver(timeMs)),
      ]),
    ).toEqual([]);
    // Acknowledged at 3,000, delivered at 8,000: a 5,000 ms outage from 3,000.
    expect(
      consume([
        ...[0, 1_000, 3_000, 8_000, 10_000].map((timeMs) => ok(timeMs)),
        ...[0, 1_000, 8_000, 10_000].map((timeMs) => deliver(timeMs)),
      ]),
    ).toEqual([[3_000, 5_000]]);
    // A record delivered before its acknowledgement arrived waits for nothing.
    expect(
      consume([
        ...[0, 5_000, 10_000].map((timeMs) => ok(timeMs)),
        ...[0, 4_990, 10_000].map((timeMs) =>
          deliver(timeMs, 0, String(timeMs === 4_990 ? 5_000 : timeMs)),
        ),
      ]),
    ).toEqual([]);
    // Each partition waits on its own: another partition's deliveries do not end the stretch;
    // stretches that began together are one outage, one that began later is its own.
    expect(
      consume([
        ...[0, 2_000, 10_000].map((timeMs) => ok(timeMs)),
        ...[0, 10_000].map((timeMs) => deliver(timeMs)),
        deliver(4_000, 1, '0'),
        ok(5_000, 1, '1'),
        deliver(7_500, 1, '1'),
      ]),
    ).toEqual([
      [2_000, 8_000],
      [5_000, 2_500],
    ]);
    expect(
      consume([
        ...[0, 2_000, 6_000].map((timeMs) => ok(timeMs)),
        ...[0, 6_000].map((timeMs) => deliver(timeMs)),
        ok(2_500, 1, '0'),
        deliver(8_000, 1, '0'),
      ]),
    ).toEqual([[2_000, 6_000]]);
    expect(
      consume([
        ...[0, 2_000, 4_000].map((timeMs) => ok(timeMs)),
        ...[0, 4_000].map((timeMs) => deliver(timeMs)),
        ok(6_000, 1, '0'),
        deliver(9_000, 1, '0'),
      ]),
    ).toEqual([
      [2_000, 2_000],
      [6_000, 3_000],
    ]);
  });

  it('prints the count over 5 s, the seconds by phase and the longest outages', () => {
    const text = formatOutages(
      outageBreakdown([
        ...window(0, 10_000),
        ...[0, 1_000, 8_000, 10_000].map((timeMs) => ok(timeMs)),
        ...[0, 10_000].map((timeMs) => deliver(timeMs)),
        nemesis(1_100, 'start', 'pause'),
        nemesis(4_000, 'heal', 'pause'),
      ]),
    );
    expect(text).toContain('produce outages over 1 s: 2, over 5 s: 1; seconds by phase: ');
    expect(text).toContain('faultHeld 3.0, clientRetry 6.0');
    expect(text).toContain('after pause: 1 outages, 7.0 s in all, longest 7000 ms');
    expect(text).toContain('consume outages over 1 s: 1, over 5 s: 1');
  });
});

describe('gapsOver', () => {
  it('finds gaps over the bound, from the window start and to its end included', () => {
    expect(gapsOver([1_500, 2_000, 2_900, 5_000], { startMs: 0, endMs: 6_500 }, 1_000)).toEqual([
      { startMs: 0, endMs: 1_500 },
      { startMs: 2_900, endMs: 5_000 },
      { startMs: 5_000, endMs: 6_500 },
    ]);
    expect(gapsOver([], { startMs: 0, endMs: 900 }, 1_000)).toEqual([]);
  });
});

describe('milestoneOf', () => {
  const at = '2026-01-01T00:00:05.000Z';
  const timeMs = Date.parse(at);

  it('reads the controller, storage node, coordinator and SDK lines it knows', () => {
    expect(
      milestoneOf(
        { time: at, msg: 'broker fenced: its session expired', brokerId: 2, electionMs: 35 },
        'controller-0',
      ),
    ).toEqual({
      type: 'milestone',
      timeMs,
      kind: 'broker-fenced',
      source: 'controller-0 broker 2',
      durationMs: 35,
    });
    expect(
      milestoneOf({ time: at, msg: 'offsets shard loaded', shard: 3, loadMs: 120 }, 'c')
        ?.durationMs,
    ).toBe(120);
    expect(milestoneOf({ time: at, msg: 'ISR changed', shrunk: 1, expanded: 0 }, 's')?.kind).toBe(
      'isr-shrunk',
    );
    expect(milestoneOf({ time: at, msg: 'ISR changed', shrunk: 0, expanded: 2 }, 's')?.kind).toBe(
      'isr-expanded',
    );
    expect(milestoneOf({ time: at, msg: 'ISR changed', sample: ['faults-0 isr=0,1'] }, 'c')).toBe(
      undefined,
    );
    expect(
      milestoneOf({ time: timeMs, msg: 'membership state change', to: 'stable' }, 'client')?.kind,
    ).toBe('member-stable');
    expect(
      milestoneOf(
        { time: timeMs, msg: 'retrying a produce batch', code: 'X', backoffMs: 90 },
        'client',
      ),
    ).toMatchObject({ kind: 'produce-retry', durationMs: 90 });
    expect(
      milestoneOf(
        { time: at, msg: 'controller lease renewed by etcd: this controller is active again' },
        'controller-1',
      ),
    ).toMatchObject({ kind: 'controller-active', source: 'controller-1 resumed' });
    expect(milestoneOf({ time: at, msg: 'something else' }, 's')).toBe(undefined);
    expect(milestoneOf({ msg: 'leaders elected' }, 's')).toBe(undefined);
  });

  it("takes a gateway's metadata line only when it moved a leader, a broker or a shard", () => {
    const gateway = new GatewayLeaders();
    const line = (leaders: string[], shards: number[] = [], brokers = 0) =>
      milestoneOf(
        { time: at, msg: 'metadata applied', leaders, shards, brokers },
        'gateway',
        gateway,
      )?.source;
    expect(line(['faults-0:1@4'])).toBe('gateway faults-0:1@4');
    // Only the ISR changed: the same leader epoch.
    expect(line(['faults-0:1@4'])).toBe(undefined);
    expect(line(['faults-0:2@5', 'faults-1:0@2'])).toBe('gateway faults-0:2@5 faults-1:0@2');
    expect(line([], [3])).toBe('gateway shards 3');
    expect(line([], [], 1)).toBe('gateway brokers');
  });
});
