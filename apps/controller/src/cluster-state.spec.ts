// Proves that the controller's view shows a topic change spanning several store transactions
// whole or not at all: a topic being created, partitions written ahead of a CreatePartitions flip
// and a topic being deleted stay out of `topics` and out of every delta until the topic record
// flips, the flip brings every partition in one delta (whatever order the revision's events come
// in), and pendingTopicChanges() reports what an abandoned change left. Pure: events in, view out.
import type { KeyValue, WatchEvent } from '@spool/metadata';
import { MetadataKeys } from '@spool/metadata';
import { describe, expect, it } from 'vitest';
import { ClusterState, type MetadataDelta } from './cluster-state';
import { encodeRecord, type PartitionRecord, type TopicRecord } from './metadata-records';

const keys = new MetadataKeys('test');

function setup() {
  const state = new ClusterState(keys, (key, error) => {
    throw new Error(`bad record at ${key}: ${String(error)}`);
  });
  state.load([], 1n);
  const deltas: MetadataDelta[] = [];
  state.onDelta((delta) => deltas.push(delta));
  let revision = 1n;
  /** Applies one revision of puts (and deletes, as keys prefixed with "-"). */
  const apply = (writes: Array<[string, Buffer] | string>): bigint => {
    revision += 1n;
    const events = writes.map((write): WatchEvent => {
      if (typeof write === 'string') return { kind: 'delete', key: write, modRevision: revision };
      const keyValue: KeyValue = {
        key: write[0],
        value: write[1],
        createRevision: revision,
        modRevision: revision,
        version: 1n,
        lease: 0n,
      };
      return { kind: 'put', keyValue };
    });
    state.apply(events, revision);
    return revision;
  };
  return { state, deltas, apply };
}

const topic = (overrides: Partial<TopicRecord> = {}): TopicRecord => ({
  name: 'big',
  topicId: 'id-1',
  partitionCount: 0,
  configs: {},
  internal: false,
  ...overrides,
});

const partition: PartitionRecord = {
  replicas: [0, 1, 2],
  isr: [0, 1, 2],
  leader: 0,
  leaderEpoch: 0,
  partitionEpoch: 0,
};

function partitionPuts(from: number, to: number): Array<[string, Buffer]> {
  const puts: Array<[string, Buffer]> = [];
  for (let index = from; index < to; index++)
    puts.push([keys.partition('big', index), encodeRecord(partition)]);
  return puts;
}

describe('cluster state visibility', () => {
  it('hides a topic being created until its record flips, then shows every partition at once', () => {
    const { state, deltas, apply } = setup();
    apply([
      [keys.topic('big'), encodeRecord(topic({ state: 'creating', pendingPartitionCount: 250 }))],
      ...partitionPuts(0, 99),
    ]);
    apply(partitionPuts(99, 199));
    expect(state.topics.has('big')).toBe(false);
    expect([...state.allPartitions()]).toHaveLength(0);
    expect(deltas.every((delta) => delta.changedTopics.size === 0)).toBe(true);
    expect(state.pendingTopicChanges()).toMatchObject([
      { topic: 'big', record: { state: 'creating' }, partitions: expect.any(Array) },
    ]);
    expect(state.pendingTopicChanges()[0]!.partitions).toHaveLength(199);

    // The flip's own chunk comes before the record in this revision: order must not matter.
    apply([
      ...partitionPuts(199, 250),
      [keys.topic('big'), encodeRecord(topic({ partitionCount: 250 }))],
    ]);
    expect(state.topics.get('big')!.partitions.size).toBe(250);
    expect([...deltas.at(-1)!.changedTopics]).toEqual(['big']);
    expect(deltas.filter((delta) => delta.changedTopics.size > 0)).toHaveLength(1);
    expect(state.pendingTopicChanges()).toEqual([]);
  });

  it('keeps partitions above the committed count out of view until a CreatePartitions flip', () => {
    const { state, deltas, apply } = setup();
    apply([
      [keys.topic('big'), encodeRecord(topic({ partitionCount: 10 }))],
      ...partitionPuts(0, 10),
    ]);
    deltas.length = 0;
    const marker = topic({ partitionCount: 10, pendingPartitionCount: 300 });
    apply([[keys.topic('big'), encodeRecord(marker)], ...partitionPuts(10, 109)]);
    apply(partitionPuts(109, 209));
    expect(state.topics.get('big')!.partitions.size).toBe(10);
    expect(state.topics.get('big')!.record.partitionCount).toBe(10);
    // A marker alone changes nothing readers see.
    expect(deltas.every((delta) => delta.changedTopics.size === 0)).toBe(true);
    expect(state.pendingTopicChanges()[0]).toMatchObject({
      topic: 'big',
      record: { partitionCount: 10, pendingPartitionCount: 300 },
    });

    apply([
      [keys.topic('big'), encodeRecord(topic({ partitionCount: 300 }))],
      ...partitionPuts(209, 300),
    ]);
    expect(state.topics.get('big')!.partitions.size).toBe(300);
    expect(deltas.filter((delta) => delta.changedTopics.size > 0)).toHaveLength(1);
    expect(state.pendingTopicChanges()).toEqual([]);
  });

  it('drops a topic from view at its deleting flip and never mentions it again', () => {
    const { state, deltas, apply } = setup();
    apply([
      [keys.topic('big'), encodeRecord(topic({ partitionCount: 200 }))],
      ...partitionPuts(0, 100),
    ]);
    apply(partitionPuts(100, 200));
    deltas.length = 0;
    apply([[keys.topic('big'), encodeRecord(topic({ partitionCount: 200, state: 'deleting' }))]]);
    expect(state.topics.has('big')).toBe(false);
    expect([...deltas[0]!.deletedTopics]).toEqual(['big']);
    apply(partitionPuts(0, 100).map(([key]) => key));
    expect(state.pendingTopicChanges()[0]!.partitions).toHaveLength(100);
    apply([keys.topic('big'), ...partitionPuts(100, 200).map(([key]) => key)]);
    expect(
      deltas.slice(1).every((delta) => delta.changedTopics.size + delta.deletedTopics.size === 0),
    ).toBe(true);
    expect(state.pendingTopicChanges()).toEqual([]);
  });

  it('loads a half-written change from a full read as hidden, and reports keys left without a topic', () => {
    const { state } = setup();
    const entries: KeyValue[] = [
      [keys.topic('big'), encodeRecord(topic({ state: 'creating', pendingPartitionCount: 500 }))],
      ...partitionPuts(0, 5),
      [keys.partition('orphan', 3), encodeRecord(partition)],
    ].map(([key, value]) => ({
      key: key as string,
      value: value as Buffer,
      createRevision: 5n,
      modRevision: 5n,
      version: 1n,
      lease: 0n,
    }));
    state.load(entries, 5n);
    expect(state.topics.size).toBe(0);
    expect(state.pendingTopicChanges()).toEqual([
      expect.objectContaining({ topic: 'big', partitions: [0, 1, 2, 3, 4], modRevision: 5n }),
      expect.objectContaining({ topic: 'orphan', record: undefined, partitions: [3] }),
    ]);
  });
});
