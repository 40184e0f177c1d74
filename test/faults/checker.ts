import type { HistoryEvent } from './history';
import { deliveryGapsOver } from './outages';

/**
 * The checker of a fault run, in the spirit of Jepsen's queue checkers: it reads the history
 * alone (what the workload was told, what the group delivered and committed, and what the log and
 * its replicas held at the end) and counts every way the log broke its promises:
 *
 * 1. lost: an acknowledged record that the final read does not hold at the acknowledged
 *    partition and offset.
 * 2. duplicated: copies beyond the first of a record in the final read (0 with idempotence).
 * 3. reordered: a producer's records in one partition out of their sequence order (counting each
 *    record's first copy only, so a duplicate is not also a reorder).
 * 4. diverged: partitions whose replicas differ below the high watermark after the final heal.
 * 5. undelivered: acknowledged records the consumer group never delivered.
 * 6. offsetsBackwards: acknowledged commits lower than an earlier acknowledged commit of the same
 *    partition.
 *
 * And two availability figures over the fault window (from the `workload` phase to the `healed`
 * phase): the longest time without an acknowledged produce, and the longest without a delivery.
 */
export interface CheckResult {
  readonly lost: number;
  readonly duplicated: number;
  readonly reordered: number;
  readonly diverged: number;
  readonly undelivered: number;
  readonly offsetsBackwards: number;
  readonly longestProduceOutageMs: number;
  readonly longestConsumeOutageMs: number;
  /** Records sent, acknowledged, failed, delivered and read back; commits acknowledged. */
  readonly invoked: number;
  readonly acknowledged: number;
  readonly failed: number;
  readonly delivered: number;
  readonly committed: number;
  readonly readRecords: number;
  /** Up to `examplesMax` examples of each violation, for the report. */
  readonly examples: Readonly<Record<ViolationKind, string[]>>;
}

export type ViolationKind =
  'lost' | 'duplicated' | 'reordered' | 'diverged' | 'undelivered' | 'offsetsBackwards';

const examplesMax = 10;
const workloadValue = /^p(\d+)-(\d+)$/;

export function checkHistory(history: readonly HistoryEvent[]): CheckResult {
  const examples: Record<ViolationKind, string[]> = {
    lost: [],
    duplicated: [],
    reordered: [],
    diverged: [],
    undelivered: [],
    offsetsBackwards: [],
  };
  const note = (kind: ViolationKind, text: string): void => {
    if (examples[kind].length < examplesMax) examples[kind].push(text);
  };

  // What the final read holds: partition → offset → value, and where each value sits (its
  // first place, and any further ones, kept apart so a clean run of millions costs one string).
  const logByPartition = new Map<number, Array<{ offset: bigint; value: string }>>();
  const firstPlaceOfValue = new Map<string, string>();
  const morePlacesOfValue = new Map<string, string[]>();
  for (const event of history) {
    if (event.type !== 'read') continue;
    const records = logByPartition.get(event.partition) ?? [];
    const firstOffset = BigInt(event.offset);
    event.values.forEach((value, index) => {
      const offset = firstOffset + BigInt(index);
      records.push({ offset, value });
      const place = `${event.partition}/${offset}`;
      if (!firstPlaceOfValue.has(value)) firstPlaceOfValue.set(value, place);
      else morePlacesOfValue.set(value, [...(morePlacesOfValue.get(value) ?? []), place]);
    });
    logByPartition.set(event.partition, records);
  }
  for (const records of logByPartition.values()) {
    records.sort((left, right) => (left.offset < right.offset ? -1 : 1));
  }
  const placesOf = (value: string): string[] => {
    const first = firstPlaceOfValue.get(value);
    return first === undefined ? [] : [first, ...(morePlacesOfValue.get(value) ?? [])];
  };

  // 1. lost
  let lost = 0;
  let acknowledged = 0;
  for (const event of history) {
    if (event.type !== 'ok') continue;
    const firstOffset = BigInt(event.offset);
    event.values.forEach((value, index) => {
      acknowledged++;
      const place = `${event.partition}/${firstOffset + BigInt(index)}`;
      if (firstPlaceOfValue.get(value) === place) return;
      const places = placesOf(value);
      if (places.includes(place)) return;
      lost++;
      note(
        'lost',
        `${value} acknowledged at ${place}, ` +
          (places.length === 0 ? 'absent from the log' : `found at ${places.join(', ')}`),
      );
    });
  }

  // 2. duplicated
  let duplicated = 0;
  for (const [value, more] of morePlacesOfValue) {
    if (!workloadValue.test(value)) continue;
    duplicated += more.length;
    note('duplicated', `${value} at ${placesOf(value).join(', ')}`);
  }

  // 3. reordered
  let reordered = 0;
  for (const [partition, records] of logByPartition) {
    const lastSequenceOfProducer = new Map<number, { sequence: number; value: string }>();
    const seen = new Set<string>();
    for (const record of records) {
      const match = workloadValue.exec(record.value);
      if (match === null || seen.has(record.value)) continue;
      seen.add(record.value);
      const producer = Number(match[1]);
      const sequence = Number(match[2]);
      const last = lastSequenceOfProducer.get(producer);
      if (last !== undefined && sequence < last.sequence) {
        reordered++;
        note(
          'reordered',
          `partition ${partition}: ${record.value} at ${record.offset} after ${last.value}`,
        );
      }
      if (last === undefined || sequence > last.sequence) {
        lastSequenceOfProducer.set(producer, { sequence, value: record.value });
      }
    }
  }

  // 4. diverged
  let diverged = 0;
  for (const event of history) {
    if (event.type !== 'replicas' || event.differing.length === 0) continue;
    diverged++;
    note(
      'diverged',
      `partition ${event.partition} below ${event.highWatermark}: replicas ` +
        `${event.differing.join(', ')} differ${event.detail === undefined ? '' : ` (${event.detail})`}`,
    );
  }

  // 5. undelivered
  const deliveredValues = new Set<string>();
  for (const event of history) {
    if (event.type === 'deliver') for (const value of event.values) deliveredValues.add(value);
  }
  let undelivered = 0;
  for (const event of history) {
    if (event.type !== 'ok') continue;
    for (const value of event.values) {
      if (deliveredValues.has(value)) continue;
      undelivered++;
      note('undelivered', value);
    }
  }

  // 6. offsetsBackwards
  let offsetsBackwards = 0;
  const committedOf = new Map<number, bigint>();
  for (const event of history) {
    if (event.type !== 'commit') continue;
    const offset = BigInt(event.offset);
    const previous = committedOf.get(event.partition);
    if (previous !== undefined && offset < previous) {
      offsetsBackwards++;
      note(
        'offsetsBackwards',
        `partition ${event.partition}: consumer ${event.consumer} committed ${offset} after ${previous}`,
      );
    }
    if (previous === undefined || offset > previous) committedOf.set(event.partition, offset);
  }

  const window = faultWindow(history);
  const count = (type: HistoryEvent['type']): number =>
    history.filter((event) => event.type === type).length;
  const records = (type: 'invoke' | 'fail' | 'deliver' | 'read'): number =>
    history.reduce((sum, event) => sum + (event.type === type ? event.values.length : 0), 0);
  return {
    lost,
    duplicated,
    reordered,
    diverged,
    undelivered,
    offsetsBackwards,
    longestProduceOutageMs: longestGapMs(
      history.filter((event) => event.type === 'ok').map((event) => event.timeMs),
      window,
    ),
    // A partition's acknowledged records waiting with no delivery from it (outages.ts).
    longestConsumeOutageMs: Math.max(
      0,
      ...deliveryGapsOver(history, window, 0).map((gap) => gap.endMs - gap.startMs),
    ),
    invoked: records('invoke'),
    acknowledged,
    failed: records('fail'),
    delivered: records('deliver'),
    committed: count('commit'),
    readRecords: records('read'),
    examples,
  };
}

/** From the `workload` phase to the `healed` phase; the whole history if either is missing. */
export function faultWindow(history: readonly HistoryEvent[]): { startMs: number; endMs: number } {
  const phaseTime = (phase: string): number | undefined =>
    history.find((event) => event.type === 'phase' && event.phase === phase)?.timeMs;
  const times = history.map((event) => event.timeMs);
  return {
    startMs: phaseTime('workload') ?? Math.min(...times),
    endMs: phaseTime('healed') ?? Math.max(...times),
  };
}

/**
 * The longest stretch of the window with no event: between two events, or from the window's
 * start to the first event, or from the last event to the window's end.
 */
export function longestGapMs(
  timesMs: readonly number[],
  window: { startMs: number; endMs: number },
): number {
  const inside = timesMs
    .filter((timeMs) => timeMs >= window.startMs && timeMs <= window.endMs)
    .sort((left, right) => left - right);
  let previous = window.startMs;
  let longest = 0;
  for (const timeMs of inside) {
    longest = Math.max(longest, timeMs - previous);
    previous = timeMs;
  }
  return Math.max(longest, window.endMs - previous);
}
