import { faultWindow } from './checker';
import type { FaultKind, HistoryEvent, MilestoneKind } from './history';

/**
 * The outage breakdown of a fault run: every stretch longer than `outageMsMin` without an
 * acknowledged produce, or in which a partition's acknowledged records waited and none of them
 * was delivered (deliveryGapsOver), which fault preceded it, and where its time went.
 *
 * The evidence is the history alone: the workload's acknowledgements and deliveries bound each
 * outage; the nemesis says which fault began before it and when it was healed; and the milestones
 * (read from the services' and the SDK's logs after the run, milestones.ts) say when each step of
 * the recovery finished. An outage is cut at the milestones inside it, in time order, and each
 * piece is charged to the phase its closing milestone finishes:
 *
 * 1. a fault healed (a paused process continued, a cut link came back, a killed one restarted):
 *    faultHeld, the time the cluster waited for the fault to end instead of working around it;
 * 2. a broker fenced or coordinators removed: detection up to the decision, then election for
 *    the writes (the controller logs how long they took); a leader's ISR shrink: detection (of a
 *    lagging follower, by replica.lag.time.max.ms); a leader's ISR expansion: isrRejoin (a
 *    follower back from a fault catching up, which an ISR below min.insync.replicas waits for);
 * 3. a controller taking over, offline partitions elected: election;
 * 4. a storage node taking a leadership, a gateway applying a route change: propagation;
 * 5. an offsets shard loaded: shardLoading for the load itself (the coordinator logs its length),
 *    propagation before it (the coordinator learning it owns the shard);
 * 6. a consumer's membership reconciled (stable again): groupReconciliation;
 * 7. the rest, after the last milestone up to the first acknowledgement or delivery: clientRetry,
 *    the SDK's back-off and retries (how many retries and how much back-off it logged inside the
 *    outage is reported beside the phases).
 *
 * The charge is coarse where milestones of unrelated recoveries interleave, but each millisecond
 * is charged exactly once, and only to something a process logged at that time.
 */
export type Phase =
  | 'faultHeld'
  | 'isrRejoin'
  | 'detection'
  | 'election'
  | 'propagation'
  | 'shardLoading'
  | 'groupReconciliation'
  | 'clientRetry';

export const phases: readonly Phase[] = [
  'faultHeld',
  'isrRejoin',
  'detection',
  'election',
  'propagation',
  'shardLoading',
  'groupReconciliation',
  'clientRetry',
];

export interface Outage {
  readonly kind: 'produce' | 'consume';
  readonly startMs: number;
  readonly durationMs: number;
  /** The fault that began last before the outage (or within `faultLeadMs` after its start). */
  readonly fault: { kind: FaultKind; target: string; startMs: number; healMs?: number } | null;
  readonly phases: Record<Phase, number>;
  /** The SDK's retries logged inside the outage, and the back-off they waited in total. */
  readonly clientRetries: number;
  readonly clientBackoffMs: number;
  /**
   * The errors the SDK retried for, by code: NOT_ENOUGH_REPLICAS says the partition's ISR was
   * below min.insync.replicas (two replicas out at once: the issue's "only replica in sync").
   */
  readonly clientRetryCodes: Record<string, number>;
  /** The milestones the outage was cut at, for the report: `+<ms> <kind> <source>`. */
  readonly milestones: string[];
  /**
   * How much of the outage some of its partitions had no leader because their only in-sync
   * replica was down (offlineStretches): from the fault on that replica to the first gateway
   * seeing a leader again.
   */
  readonly offlineMs: number;
  /**
   * Why the outage is the issue's exception and not a miss, or null: a produce outage whose
   * retries were mostly NOT_ENOUGH_REPLICAS had its partition's ISR below min.insync.replicas
   * (two of three replicas out at once), when acks=all must refuse, as in Kafka; an outage that
   * lasted at most `exceptionRemainderMsMax` beyond the time its partitions were offline with
   * their only in-sync replica down, which no election can shorten without losing records (Kafka
   * without unclean.leader.election.enable waits the same).
   */
  readonly excepted: string | null;
}

/** The issue's target: an outage longer than this beyond its exception is a miss. */
export const exceptionRemainderMsMax = 5_000;

/** Outages at most this long are not broken down. */
export const outageMsMin = 1_000;
/**
 * A fault injected this soon after the last acknowledgement still counts as preceding the
 * outage: the send in flight when it struck was acknowledged just before.
 */
const faultLeadMs = 1_000;

export function outageBreakdown(history: readonly HistoryEvent[]): Outage[] {
  const window = faultWindow(history);
  const milestones = history
    .filter((event) => event.type === 'milestone' || event.type === 'nemesis')
    .map(toMark)
    .sort((left, right) => left.timeMs - right.timeMs);
  const faults = faultsOf(history);
  const offline = offlineStretches(milestones, faults);
  const outages: Outage[] = [];
  const acknowledged = history.filter((event) => event.type === 'ok').map((event) => event.timeMs);
  for (const gap of gapsOver(acknowledged, window, outageMsMin)) {
    outages.push(explain('produce', gap, milestones, faults, offline));
  }
  for (const gap of deliveryGapsOver(history, window, outageMsMin)) {
    outages.push(explain('consume', gap, milestones, faults, offline));
  }
  return outages.sort((left, right) => left.startMs - right.startMs);
}

/** Milestones and heals as one kind of mark: when a step ended, and how long it took. */
interface Mark {
  readonly timeMs: number;
  readonly kind: MilestoneKind | 'fault-heal' | 'fault-start';
  readonly source: string;
  readonly durationMs: number;
}

function toMark(event: HistoryEvent): Mark {
  if (event.type === 'nemesis') {
    return {
      timeMs: event.timeMs,
      kind: event.phase === 'heal' ? 'fault-heal' : 'fault-start',
      source: `${event.fault} ${event.target}`,
      durationMs: 0,
    };
  }
  if (event.type !== 'milestone') throw new Error(`not a milestone: ${event.type}`);
  return {
    timeMs: event.timeMs,
    kind: event.kind,
    source: event.source,
    durationMs: event.durationMs ?? 0,
  };
}

interface Fault {
  readonly kind: FaultKind;
  readonly target: string;
  readonly startMs: number;
  healMs?: number;
}

function faultsOf(history: readonly HistoryEvent[]): Fault[] {
  const faults: Fault[] = [];
  for (const event of history) {
    if (event.type !== 'nemesis') continue;
    if (event.phase === 'start') {
      faults.push({ kind: event.fault, target: event.target, startMs: event.timeMs });
      continue;
    }
    const started = [...faults]
      .reverse()
      .find((fault) => fault.target === event.target && fault.healMs === undefined);
    if (started !== undefined) started.healMs = event.timeMs;
  }
  return faults;
}

/** Every stretch of the window longer than `minMs` with no event, as {startMs, endMs}. */
export function gapsOver(
  timesMs: readonly number[],
  window: { startMs: number; endMs: number },
  minMs: number,
): Array<{ startMs: number; endMs: number }> {
  const inside = timesMs
    .filter((timeMs) => timeMs >= window.startMs && timeMs <= window.endMs)
    .sort((left, right) => left - right);
  const gaps: Array<{ startMs: number; endMs: number }> = [];
  let previous = window.startMs;
  for (const timeMs of [...inside, window.endMs]) {
    if (timeMs - previous > minMs) gaps.push({ startMs: previous, endMs: timeMs });
    previous = timeMs;
  }
  return gaps;
}

/**
 * Every stretch of the window longer than `minMs` in which a partition's acknowledged records
 * waited to be delivered and none of that partition was: from the later of its last delivery and
 * the acknowledgement that left a record waiting, to its next delivery (or the window's end);
 * stretches of several partitions that began together are one outage (incidentsOf). A stretch without deliveries
 * because nothing new was acknowledged (the producers held up, say by an ISR below
 * min.insync.replicas) is the produce outage's, not the consumers': a consumer with nothing to
 * read is not down. Records a consumer saw before their producer's acknowledgement arrived wait
 * for nothing; a delivery of records already delivered (a new member re-reading from the last
 * commit) is the consumer at work.
 */
export function deliveryGapsOver(
  history: readonly HistoryEvent[],
  window: { startMs: number; endMs: number },
  minMs: number,
): Array<{ startMs: number; endMs: number }> {
  const acknowledgedEnd = new Map<number, bigint>();
  const deliveredEnd = new Map<number, bigint>();
  const waitingSinceMs = new Map<number, number>();
  const waiting = (partition: number): boolean =>
    (acknowledgedEnd.get(partition) ?? 0n) > (deliveredEnd.get(partition) ?? 0n);
  const stretches: Array<{ startMs: number; endMs: number }> = [];
  const close = (partition: number, endMs: number): void => {
    const sinceMs = waitingSinceMs.get(partition);
    if (sinceMs === undefined || endMs < window.startMs) return;
    const startMs = Math.max(sinceMs, window.startMs);
    if (endMs - startMs > minMs) stretches.push({ startMs, endMs });
  };
  const sends = history
    .filter((event) => event.type === 'ok' || event.type === 'deliver')
    .filter((event) => event.timeMs <= window.endMs)
    .sort((left, right) => left.timeMs - right.timeMs);
  for (const event of sends) {
    const { partition } = event;
    const end = BigInt(event.offset) + BigInt(event.values.length);
    if (event.type === 'ok') {
      if (end > (acknowledgedEnd.get(partition) ?? 0n)) acknowledgedEnd.set(partition, end);
      if (!waitingSinceMs.has(partition) && waiting(partition)) {
        waitingSinceMs.set(partition, event.timeMs);
      }
      continue;
    }
    close(partition, event.timeMs);
    if (end > (deliveredEnd.get(partition) ?? 0n)) deliveredEnd.set(partition, end);
    if (waiting(partition)) waitingSinceMs.set(partition, event.timeMs);
    else waitingSinceMs.delete(partition);
  }
  for (const partition of waitingSinceMs.keys()) close(partition, window.endMs);
  return incidentsOf(stretches, minMs);
}

/**
 * Stretches of several partitions that began together (within `minMs` of the first) and overlap
 * are one outage, as long as the longest of them; a stretch that began later is its own outage,
 * even if it overlaps, so that stalls one after another are not chained into one long outage.
 */
function incidentsOf(
  stretches: ReadonlyArray<{ startMs: number; endMs: number }>,
  minMs: number,
): Array<{ startMs: number; endMs: number }> {
  const incidents: Array<{ startMs: number; endMs: number }> = [];
  for (const stretch of [...stretches].sort((left, right) => left.startMs - right.startMs)) {
    const last = incidents.at(-1);
    if (
      last !== undefined &&
      stretch.startMs <= last.endMs &&
      stretch.startMs - last.startMs <= minMs
    ) {
      last.endMs = Math.max(last.endMs, stretch.endMs);
    } else {
      incidents.push({ ...stretch });
    }
  }
  return incidents;
}

function explain(
  kind: Outage['kind'],
  gap: { startMs: number; endMs: number },
  marks: readonly Mark[],
  faults: readonly Fault[],
  offline: readonly OfflineStretch[],
): Outage {
  let clientRetries = 0;
  let clientBackoffMs = 0;
  const clientRetryCodes: Record<string, number> = {};
  const cuts: string[] = [];
  const boundaries: Array<{ timeMs: number; phase: Phase }> = [];
  for (const mark of marks) {
    if (mark.timeMs <= gap.startMs) continue;
    if (mark.timeMs >= gap.endMs) break;
    if (mark.kind === 'produce-retry' || mark.kind === 'consume-retry') {
      if ((mark.kind === 'produce-retry') === (kind === 'produce')) {
        clientRetries++;
        clientBackoffMs += mark.durationMs;
        clientRetryCodes[mark.source] = (clientRetryCodes[mark.source] ?? 0) + 1;
      }
      continue;
    }
    if (mark.kind === 'fault-start') continue;
    cuts.push(`+${mark.timeMs - gap.startMs} ${mark.kind} ${mark.source}`);
    boundaries.push(...boundariesOf(mark));
  }
  // A step logged with its length (an election's writes, a shard's load) began before it was
  // logged, maybe before another step's mark: the boundaries go in the order they happened.
  boundaries.sort((left, right) => left.timeMs - right.timeMs);
  const charged = Object.fromEntries(phases.map((phase) => [phase, 0])) as Record<Phase, number>;
  let cursor = gap.startMs;
  for (const { timeMs, phase } of [
    ...boundaries,
    { timeMs: gap.endMs, phase: 'clientRetry' as const },
  ]) {
    const until = Math.min(Math.max(timeMs, cursor), gap.endMs);
    charged[phase] += until - cursor;
    cursor = until;
  }
  return {
    kind,
    startMs: gap.startMs,
    durationMs: gap.endMs - gap.startMs,
    fault: precedingFault(gap.startMs, faults),
    phases: charged,
    clientRetries,
    clientBackoffMs,
    clientRetryCodes,
    milestones: cuts,
    offlineMs: offlineWithin(gap, offline, kind),
    excepted: exceptionOf(kind, gap, { clientRetries, clientRetryCodes }, offline),
  };
}

function exceptionOf(
  kind: Outage['kind'],
  gap: { startMs: number; endMs: number },
  retries: Pick<Outage, 'clientRetries' | 'clientRetryCodes'>,
  offline: readonly OfflineStretch[],
): string | null {
  if (kind === 'produce' && isBelowMinIsr(retries)) return 'ISR below min.insync.replicas';
  const offlineMs = offlineWithin(gap, offline, kind);
  if (offlineMs === 0 || gap.endMs - gap.startMs - offlineMs > exceptionRemainderMsMax) {
    return null;
  }
  const partitions = [
    ...new Set(
      offline
        .filter((stretch) => concerns(stretch, kind) && overlapMs(stretch, gap) > 0)
        .map((stretch) => `${stretch.partition} (storage-${stretch.lastLeader ?? '?'})`),
    ),
  ];
  return (
    `only in-sync replica down: ${partitions.slice(0, 4).join(', ')}` +
    `${partitions.length > 4 ? ` and ${partitions.length - 4} more` : ''} ` +
    `without a leader for ${(offlineMs / 1000).toFixed(1)} s of it`
  );
}

/**
 * A partition without a leader because its only in-sync replica was down: the controller elects
 * no other replica (that one alone has every acknowledged record), so the partition waits for it
 * to come back. From the fault on that replica (the leader before, as the gateways last saw it)
 * to the first gateway seeing a leader again; the gateways' `metadata applied` lines name leader
 * -1 while it lasts.
 */
export interface OfflineStretch {
  readonly partition: string;
  /** The broker id that led the partition before it went offline, if a gateway saw it. */
  readonly lastLeader: number | undefined;
  readonly startMs: number;
  readonly endMs: number;
}

/** A fault on the replica up to this long before a gateway saw its partition offline counts. */
const offlineFaultLeadMs = 60_000;

export function offlineStretches(
  marks: readonly Mark[],
  faults: readonly Fault[],
): OfflineStretch[] {
  const stretches: OfflineStretch[] = [];
  const epochOf = new Map<string, number>();
  const leaderOf = new Map<string, number>();
  const offlineSince = new Map<string, { startMs: number; lastLeader: number | undefined }>();
  for (const mark of marks) {
    if (mark.kind !== 'gateway-metadata') continue;
    for (const { partition, leader, leaderEpoch } of leadersOf(mark.source)) {
      // Every gateway logs the same change: the first to see each epoch tells.
      if (leaderEpoch <= (epochOf.get(partition) ?? -1)) continue;
      epochOf.set(partition, leaderEpoch);
      if (leader >= 0) {
        const since = offlineSince.get(partition);
        if (since !== undefined) {
          stretches.push({ partition, ...since, endMs: mark.timeMs });
          offlineSince.delete(partition);
        }
        leaderOf.set(partition, leader);
        continue;
      }
      if (offlineSince.has(partition)) continue;
      const lastLeader = leaderOf.get(partition);
      const fault =
        lastLeader === undefined
          ? undefined
          : faults
              .filter(
                (candidate) =>
                  candidate.target === `storage-${lastLeader}` &&
                  candidate.startMs <= mark.timeMs &&
                  candidate.startMs >= mark.timeMs - offlineFaultLeadMs,
              )
              .at(-1);
      offlineSince.set(partition, { startMs: fault?.startMs ?? mark.timeMs, lastLeader });
    }
  }
  const lastMs = marks.at(-1)?.timeMs ?? 0;
  for (const [partition, since] of offlineSince) {
    stretches.push({ partition, ...since, endMs: Math.max(lastMs, since.startMs) });
  }
  return stretches;
}

/** `topic-N:leader@epoch` entries in a gateway-metadata mark's source (milestones.ts). */
function leadersOf(
  source: string,
): Array<{ partition: string; leader: number; leaderEpoch: number }> {
  const leaders: Array<{ partition: string; leader: number; leaderEpoch: number }> = [];
  for (const word of source.split(' ')) {
    const match = /^(.+):(-?\d+)@(\d+)$/.exec(word);
    if (match === null) continue;
    leaders.push({ partition: match[1]!, leader: Number(match[2]), leaderEpoch: Number(match[3]) });
  }
  return leaders;
}

/**
 * Producers wait only for the workload's partitions; consumers also for `__consumer_offsets`
 * (their group's coordinator cannot write without it).
 */
function concerns(stretch: OfflineStretch, kind: Outage['kind']): boolean {
  return kind === 'consume' || !stretch.partition.startsWith('__consumer_offsets-');
}

function overlapMs(
  left: { startMs: number; endMs: number },
  right: { startMs: number; endMs: number },
): number {
  return Math.max(0, Math.min(left.endMs, right.endMs) - Math.max(left.startMs, right.startMs));
}

/** The time within the gap that any partition the outage's kind waits for was offline. */
function offlineWithin(
  gap: { startMs: number; endMs: number },
  offline: readonly OfflineStretch[],
  kind: Outage['kind'],
): number {
  const inside = offline
    .filter((stretch) => concerns(stretch, kind))
    .map((stretch) => ({
      startMs: Math.max(stretch.startMs, gap.startMs),
      endMs: Math.min(stretch.endMs, gap.endMs),
    }))
    .filter((stretch) => stretch.endMs > stretch.startMs)
    .sort((left, right) => left.startMs - right.startMs);
  let totalMs = 0;
  let coveredUntilMs = gap.startMs;
  for (const stretch of inside) {
    const fromMs = Math.max(stretch.startMs, coveredUntilMs);
    if (stretch.endMs > fromMs) totalMs += stretch.endMs - fromMs;
    coveredUntilMs = Math.max(coveredUntilMs, stretch.endMs);
  }
  return totalMs;
}

/** Points 1 to 6: where the phases that a mark closes end. */
function boundariesOf(mark: Mark): Array<{ timeMs: number; phase: Phase }> {
  const at = (phase: Phase, timeMs = mark.timeMs) => ({ timeMs, phase });
  const began = mark.timeMs - mark.durationMs;
  switch (mark.kind) {
    case 'fault-heal':
      return [at('faultHeld')];
    case 'broker-fenced':
    case 'coordinators-removed':
      return [at('detection', began), at('election')];
    case 'isr-shrunk':
      return [at('detection')];
    case 'isr-expanded':
      return [at('isrRejoin')];
    case 'controller-active':
    case 'leaders-elected':
      return [at('election')];
    case 'replica-leader':
    case 'gateway-metadata':
      return [at('propagation')];
    case 'shard-loaded':
      return [at('propagation', began), at('shardLoading')];
    case 'member-stable':
      return [at('groupReconciliation')];
    default:
      return [];
  }
}

/** The fault that began last before `startMs` (+ faultLeadMs) and was not healed long before. */
function precedingFault(startMs: number, faults: readonly Fault[]): Outage['fault'] {
  const candidates = faults.filter(
    (fault) =>
      fault.startMs <= startMs + faultLeadMs &&
      (fault.healMs === undefined || fault.healMs >= startMs - faultLeadMs),
  );
  const fault = candidates.at(-1);
  if (fault === undefined) return null;
  return {
    kind: fault.kind,
    target: fault.target,
    startMs: fault.startMs,
    ...(fault.healMs === undefined ? {} : { healMs: fault.healMs }),
  };
}

/**
 * The breakdown for the summary: outages over 1 s and 5 s of each kind, the longest of each with
 * its phases, and where the seconds of all outages went, by phase and by fault kind.
 */
export function formatOutages(outages: readonly Outage[]): string {
  const lines: string[] = [];
  for (const kind of ['produce', 'consume'] as const) {
    const ofKind = outages.filter((outage) => outage.kind === kind);
    const overFive = ofKind.filter((outage) => outage.durationMs > 5_000).length;
    const totals = Object.fromEntries(phases.map((phase) => [phase, 0])) as Record<Phase, number>;
    for (const outage of ofKind) {
      for (const phase of phases) totals[phase] += outage.phases[phase];
    }
    lines.push(
      `${kind} outages over 1 s: ${ofKind.length}, over 5 s: ${overFive}; ` +
        `seconds by phase: ${formatPhases(totals)}`,
    );
    const byFault = new Map<string, { count: number; totalMs: number; longestMs: number }>();
    for (const outage of ofKind) {
      const name = outage.fault === null ? 'none' : outage.fault.kind;
      const entry = byFault.get(name) ?? { count: 0, totalMs: 0, longestMs: 0 };
      entry.count++;
      entry.totalMs += outage.durationMs;
      entry.longestMs = Math.max(entry.longestMs, outage.durationMs);
      byFault.set(name, entry);
    }
    for (const [name, entry] of [...byFault].sort(
      (left, right) => right[1].totalMs - left[1].totalMs,
    )) {
      lines.push(
        `  after ${name}: ${entry.count} outages, ${(entry.totalMs / 1000).toFixed(1)} s in all, ` +
          `longest ${entry.longestMs} ms`,
      );
    }
    const excepted = ofKind.filter((outage) => outage.excepted !== null);
    if (excepted.length > 0) {
      const belowMinIsr = excepted.filter(isBelowMinIsr).length;
      lines.push(
        `  of them excepted: ${excepted.length} (ISR below min.insync.replicas, NOT_ENOUGH_REPLICAS ` +
          `retried: ${belowMinIsr}; only in-sync replica down: ${excepted.length - belowMinIsr}), ` +
          `longest ${Math.max(...excepted.map((outage) => outage.durationMs))} ms; ` +
          `over 5 s without them: ${ofKind.filter((outage) => outage.excepted === null && outage.durationMs > 5_000).length}`,
      );
    }
    const longest = [...ofKind].sort((left, right) => right.durationMs - left.durationMs);
    for (const outage of longest.slice(0, 3)) lines.push(`  ${describeOutage(outage)}`);
  }
  return lines.join('\n');
}

export function describeOutage(outage: Outage): string {
  const fault =
    outage.fault === null
      ? 'no fault'
      : `${outage.fault.kind} ${outage.fault.target} ` +
        `(${outage.fault.startMs - outage.startMs >= 0 ? '+' : ''}${outage.fault.startMs - outage.startMs} ms` +
        `${outage.fault.healMs === undefined ? '' : `, healed +${outage.fault.healMs - outage.startMs} ms`})`;
  return (
    `${outage.durationMs} ms ${outage.kind} outage at ${new Date(outage.startMs).toISOString()} ` +
    `${outage.excepted === null ? '' : `(excepted: ${outage.excepted}) `}` +
    `after ${fault}: ${formatPhases(outage.phases)}; ` +
    `${outage.offlineMs > 0 && outage.excepted === null ? `partitions offline (only in-sync replica down) ${(outage.offlineMs / 1000).toFixed(1)} s of it; ` : ''}` +
    `${outage.clientRetries} client retries ` +
    `(${outage.clientBackoffMs} ms back-off${formatCodes(outage.clientRetryCodes)}); cut at ${outage.milestones.slice(0, 12).join(', ')}`
  );
}

function formatPhases(byPhase: Record<Phase, number>): string {
  return phases
    .filter((phase) => byPhase[phase] > 0)
    .map((phase) => `${phase} ${(byPhase[phase] / 1000).toFixed(1)}`)
    .join(', ');
}

function formatCodes(codes: Record<string, number>): string {
  const entries = Object.entries(codes).sort((left, right) => right[1] - left[1]);
  return entries.length === 0
    ? ''
    : `: ${entries.map(([code, count]) => `${code} ${count}`).join(', ')}`;
}

/** An outage whose client retries were mostly NOT_ENOUGH_REPLICAS: two replicas out at once. */
export function isBelowMinIsr(outage: Pick<Outage, 'clientRetries' | 'clientRetryCodes'>): boolean {
  const notEnough =
    (outage.clientRetryCodes['NOT_ENOUGH_REPLICAS'] ?? 0) +
    (outage.clientRetryCodes['NOT_ENOUGH_REPLICAS_AFTER_APPEND'] ?? 0);
  return notEnough > 0 && notEnough * 2 >= outage.clientRetries;
}
