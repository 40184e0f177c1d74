// Proves the fault checker counts each kind of violation, and only that kind, on hand-made
// histories: a clean history counts nothing; each broken history breaks exactly the promise it
// was built to break, with an example naming the record, partition and offset.
import { describe, expect, it } from 'vitest';
import { checkHistory, longestGapMs } from './checker';
import type { HistoryEvent, HistoryEventInput } from './history';

/** A history from events at 1 s steps unless an event gives its own time. */
function history(...events: Array<HistoryEventInput & { timeMs?: number }>): HistoryEvent[] {
  return events.map((event, index) => ({ timeMs: index * 1_000, ...event }) as HistoryEvent);
}

const ok = (value: string, partition: number, offset: number): HistoryEventInput => ({
  type: 'ok',
  producer: Number(/^p(\d+)/.exec(value)![1]),
  values: [value],
  partition,
  offset: String(offset),
});
const read = (value: string, partition: number, offset: number): HistoryEventInput => ({
  type: 'read',
  partition,
  offset: String(offset),
  values: [value],
});
const deliver = (value: string, partition: number, offset: number): HistoryEventInput => ({
  type: 'deliver',
  consumer: 0,
  partition,
  offset: String(offset),
  values: [value],
});
const commit = (partition: number, offset: number, consumer = 0): HistoryEventInput => ({
  type: 'commit',
  consumer,
  partition,
  offset: String(offset),
});

const cleanRun = [
  { type: 'phase', phase: 'workload' } as const,
  ok('p0-0', 0, 0),
  deliver('p0-0', 0, 0),
  commit(0, 1),
  ok('p0-1', 0, 1),
  ok('p1-0', 1, 0),
  deliver('p0-1', 0, 1),
  deliver('p1-0', 1, 0),
  commit(0, 2),
  commit(1, 1),
  { type: 'phase', phase: 'healed' } as const,
  read('p0-0', 0, 0),
  read('p0-1', 0, 1),
  read('p1-0', 1, 0),
  {
    type: 'replicas',
    partition: 0,
    highWatermark: '2',
    compared: [0, 1, 2],
    differing: [],
  } as const,
];

function violations(result: ReturnType<typeof checkHistory>) {
  const { lost, duplicated, reordered, diverged, undelivered, offsetsBackwards } = result;
  return { lost, duplicated, reordered, diverged, undelivered, offsetsBackwards };
}

const none = {
  lost: 0,
  duplicated: 0,
  reordered: 0,
  diverged: 0,
  undelivered: 0,
  offsetsBackwards: 0,
};

describe('checkHistory', () => {
  it('counts nothing in a clean history', () => {
    const result = checkHistory(history(...cleanRun));
    expect(violations(result)).toEqual(none);
    expect(result).toMatchObject({ acknowledged: 3, delivered: 3, committed: 3, readRecords: 3 });
  });

  it('counts an acknowledged record missing from the log as lost', () => {
    const events = cleanRun.filter((event) => !(event.type === 'read' && event.offset === '1'));
    const result = checkHistory(history(...events));
    expect(violations(result)).toEqual({ ...none, lost: 1 });
    expect(result.examples.lost).toEqual(['p0-1 acknowledged at 0/1, absent from the log']);
  });

  it('counts an acknowledged offset that holds another record as lost', () => {
    const result = checkHistory(
      history(ok('p0-0', 0, 0), deliver('p0-0', 0, 0), read('p9-0', 0, 0), read('p0-0', 0, 1)),
    );
    expect(violations(result)).toEqual({ ...none, lost: 1 });
    expect(result.examples.lost[0]).toContain('found at 0/1');
  });

  it('counts copies beyond the first as duplicates, not as reorders', () => {
    const result = checkHistory(
      history(
        ok('p0-0', 0, 0),
        ok('p0-1', 0, 2),
        deliver('p0-0', 0, 0),
        deliver('p0-1', 0, 2),
        read('p0-0', 0, 0),
        read('p0-0', 0, 1),
        read('p0-1', 0, 2),
        read('p0-0', 0, 3),
      ),
    );
    expect(violations(result)).toEqual({ ...none, duplicated: 2 });
    expect(result.examples.duplicated).toEqual(['p0-0 at 0/0, 0/1, 0/3']);
  });

  it("counts a producer's records out of sequence in a partition as reordered", () => {
    const result = checkHistory(
      history(
        read('p0-1', 0, 0),
        read('p1-5', 0, 1),
        read('p0-0', 0, 2),
        read('p0-2', 0, 3),
        // Another partition keeps its own order.
        read('p0-3', 1, 0),
      ),
    );
    expect(violations(result)).toEqual({ ...none, reordered: 1 });
    expect(result.examples.reordered).toEqual(['partition 0: p0-0 at 2 after p0-1']);
  });

  it('counts partitions whose replicas differ below the high watermark as diverged', () => {
    const result = checkHistory(
      history({
        type: 'replicas',
        partition: 3,
        highWatermark: '10',
        compared: [0, 1, 2],
        differing: [2],
        detail: 'replica 2 differs at byte 61',
      }),
    );
    expect(violations(result)).toEqual({ ...none, diverged: 1 });
    expect(result.examples.diverged[0]).toContain('partition 3 below 10: replicas 2 differ');
  });

  it('counts acknowledged records the group never delivered as undelivered', () => {
    const events = cleanRun.filter((event) => !(event.type === 'deliver' && event.partition === 1));
    const result = checkHistory(history(...events));
    expect(violations(result)).toEqual({ ...none, undelivered: 1 });
    expect(result.examples.undelivered).toEqual(['p1-0']);
  });

  it('counts an acknowledged commit below an earlier one of the partition as backwards', () => {
    const result = checkHistory(
      history(commit(0, 5, 0), commit(1, 2, 0), commit(0, 3, 1), commit(0, 4, 0), commit(0, 6, 1)),
    );
    expect(violations(result)).toEqual({ ...none, offsetsBackwards: 2 });
    expect(result.examples.offsetsBackwards[0]).toBe('partition 0: consumer 1 committed 3 after 5');
  });

  it('reads a send of several records and runs of reads and deliveries record by record', () => {
    const send = (values: string[], offset: number): HistoryEventInput => ({
      type: 'ok',
      producer: 0,
      values,
      partition: 0,
      offset: String(offset),
    });
    const run = (type: 'read' | 'deliver', values: string[], offset: number) =>
      (type === 'read'
        ? { type, partition: 0, offset: String(offset), values }
        : { type, consumer: 0, partition: 0, offset: String(offset), values }) as HistoryEventInput;
    const result = checkHistory(
      history(
        send(['p0-0', 'p0-1', 'p0-2'], 0),
        send(['p0-3', 'p0-4'], 4),
        run('deliver', ['p0-0', 'p0-1', 'p0-2'], 0),
        run('deliver', ['p0-4'], 5),
        run('read', ['p0-0', 'p0-1'], 0),
        run('read', ['p0-2', 'p0-1', 'p0-4'], 3),
      ),
    );
    expect(violations(result)).toEqual({ ...none, lost: 2, duplicated: 1, undelivered: 1 });
    expect(result.examples.lost).toEqual([
      'p0-2 acknowledged at 0/2, found at 0/3',
      'p0-3 acknowledged at 0/4, absent from the log',
    ]);
    expect(result).toMatchObject({ acknowledged: 5, delivered: 4, readRecords: 5 });
  });

  it('measures the longest produce and consume outages inside the fault window', () => {
    const result = checkHistory([
      { timeMs: 0, type: 'ok', producer: 0, values: ['p0-0'], partition: 0, offset: '0' },
      { timeMs: 1_000, type: 'phase', phase: 'workload' },
      { timeMs: 1_500, type: 'ok', producer: 0, values: ['p0-1'], partition: 0, offset: '1' },
      { timeMs: 1_600, type: 'deliver', consumer: 0, partition: 0, offset: '0', values: ['p0-0'] },
      // Acknowledged at 1,500 and waiting from the partition's delivery at 1,600 to 6,900.
      { timeMs: 6_500, type: 'ok', producer: 0, values: ['p0-2'], partition: 0, offset: '2' },
      { timeMs: 6_900, type: 'deliver', consumer: 0, partition: 0, offset: '1', values: ['p0-1'] },
      { timeMs: 7_000, type: 'deliver', consumer: 0, partition: 0, offset: '2', values: ['p0-2'] },
      { timeMs: 8_000, type: 'phase', phase: 'healed' },
      { timeMs: 30_000, type: 'ok', producer: 0, values: ['p0-3'], partition: 0, offset: '3' },
    ]);
    expect(result.longestProduceOutageMs).toBe(5_000);
    expect(result.longestConsumeOutageMs).toBe(5_300);
  });

  it('counts the stretch from the window start or to its end as an outage', () => {
    expect(longestGapMs([], { startMs: 10, endMs: 110 })).toBe(100);
    expect(longestGapMs([20, 30], { startMs: 10, endMs: 110 })).toBe(80);
    expect(longestGapMs([50, 60], { startMs: 10, endMs: 70 })).toBe(40);
  });
});
