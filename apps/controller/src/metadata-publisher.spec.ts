// Proves WatchMetadata's deltas follow the size of the change: a revision that writes only
// partition records (elections, ISR changes) sends just those partitions, never their topic; a
// revision that writes the topic record sends the topic whole; each delta message is built once
// for every watcher; a storage node's watch is counted by its registration until it goes away.
// Pure: store events into a ClusterState, messages out of fake server streams.
import { EventEmitter } from 'node:events';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { createLogger } from '@spool/common';
import type { KeyValue, WatchEvent } from '@spool/metadata';
import { MetadataKeys } from '@spool/metadata';
import type { WatchMetadataRequest, WatchMetadataResponse } from '@spool/protocol';
import { describe, expect, it } from 'vitest';
import { ClusterState } from './cluster-state';
import { encodeRecord, type PartitionRecord, type TopicRecord } from './metadata-records';
import { MetadataPublisher } from './metadata-publisher';

const keys = new MetadataKeys('test');
const logger = createLogger({ service: 'test', level: 'silent' });

function clusterState() {
  const state = new ClusterState(keys, (key, error) => {
    throw new Error(`bad record at ${key}: ${String(error)}`);
  });
  state.load([], 1n);
  let revision = 1n;
  const apply = (writes: Array<[string, Buffer]>): bigint => {
    revision += 1n;
    const events = writes.map(([key, value]): WatchEvent => ({
      kind: 'put',
      keyValue: {
        key,
        value,
        createRevision: revision,
        modRevision: revision,
        version: 1n,
        lease: 0n,
      } satisfies KeyValue,
    }));
    state.apply(events, revision);
    return revision;
  };
  return { state, apply };
}

const topicRecord = (partitionCount: number, configs = {}): TopicRecord => ({
  name: 'wide',
  topicId: 'id-1',
  partitionCount,
  configs,
  internal: false,
});

const partitionRecord = (leader: number, leaderEpoch = 0): PartitionRecord => ({
  replicas: [0, 1, 2],
  isr: [0, 1, 2],
  leader,
  leaderEpoch,
  partitionEpoch: leaderEpoch,
});

/** A server stream that records what it is sent; `end()` is the client going away. */
function fakeCall(request: Partial<WatchMetadataRequest> = {}) {
  const emitter = new EventEmitter();
  const messages: WatchMetadataResponse[] = [];
  const call = Object.assign(emitter, {
    request: { fromVersion: 0n, ...request },
    writableLength: 0,
    write: (message: WatchMetadataResponse) => messages.push(message),
    getPeer: () => 'test',
  }) as unknown as ServerWritableStream<WatchMetadataRequest, WatchMetadataResponse>;
  return { call, messages, end: () => emitter.emit('cancelled') };
}

describe('MetadataPublisher', () => {
  it('sends only the partitions an election wrote, and a topic whole when its record changed', () => {
    const { state, apply } = clusterState();
    const partitions = Array.from({ length: 1_000 }, (_, index) => index);
    apply([
      [keys.topic('wide'), encodeRecord(topicRecord(1_000))],
      ...partitions.map((index): [string, Buffer] => [
        keys.partition('wide', index),
        encodeRecord(partitionRecord(0)),
      ]),
    ]);
    const publisher = new MetadataPublisher(logger);
    const first = fakeCall();
    const second = fakeCall();
    void publisher.serve(first.call, state, 'c:1');
    void publisher.serve(second.call, state, 'c:1');
    expect(first.messages[0]!.snapshot).toBe(true);
    expect(first.messages[0]!.topics[0]!.partitions).toHaveLength(1_000);

    // An election chunk: three partitions move to broker 1.
    const elected = apply(
      [7, 8, 500].map((index): [string, Buffer] => [
        keys.partition('wide', index),
        encodeRecord(partitionRecord(1, 1)),
      ]),
    );
    const delta = first.messages[1]!;
    expect(delta).toMatchObject({ metadataVersion: elected, snapshot: false, topics: [] });
    expect(delta.changedPartitions.map((p) => [p.topic, p.partition, p.leaderId])).toEqual([
      ['wide', 7, 1],
      ['wide', 8, 1],
      ['wide', 500, 1],
    ]);
    // Built once, written to both watchers.
    expect(second.messages[1]).toBe(delta);

    // A config change rewrites the topic record: the topic goes whole.
    apply([[keys.topic('wide'), encodeRecord(topicRecord(1_000, { 'retention.ms': '1000' }))]]);
    const whole = first.messages[2]!;
    expect(whole.changedPartitions).toEqual([]);
    expect(whole.topics.map((topic) => topic.partitions.length)).toEqual([1_000]);
  });

  it("counts a storage node's watches by registration until they go away", async () => {
    const { state } = clusterState();
    const publisher = new MetadataPublisher(logger);
    const registration = { brokerId: 0, brokerEpoch: 7n };
    const watch = fakeCall(registration);
    const other = fakeCall();
    const served = publisher.serve(watch.call, state, 'c:1');
    void publisher.serve(other.call, state, 'c:1');
    expect(publisher.isWatching(registration)).toBe(true);
    expect(publisher.isWatching({ brokerId: 0, brokerEpoch: 6n })).toBe(false);
    watch.end();
    await served;
    expect(publisher.isWatching(registration)).toBe(false);
    expect(publisher.watcherCount).toBe(1);
  });
});
