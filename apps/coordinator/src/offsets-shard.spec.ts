// Proves the __consumer_offsets records round-trip through RecordBatch v2 and that replaying a
// shard rebuilds groups and committed offsets, applies removals, and ignores what a zombie
// coordinator wrote under an older shard epoch after a newer owner's marker.
import { createLogger } from '@spool/common';
import { describe, expect, it } from 'vitest';
import type { GroupRecord } from '@spool/consumer-group';
import { decodeOffsetsRecords, encodeOffsetsBatch, type OffsetsEntry } from './offsets-records';
import { OffsetsShard } from './offsets-shard';

const logger = createLogger({ service: 'test', level: 'silent' });
const commit = (groupId: string, partition: number, offset: bigint): OffsetsEntry => ({
  kind: 'offset',
  groupId,
  topic: 'orders',
  partition,
  committed: { offset, metadata: 'm', commitTimestampMs: 5n, leaderEpoch: 2 },
});
const groupEpoch: GroupRecord = {
  type: 'group-epoch',
  groupId: 'g',
  groupEpoch: 1,
  assignor: 'uniform',
};

/** Encodes batches as if appended in order, with offsets assigned from 0. */
function log(batches: Array<{ epoch: number; entries: OffsetsEntry[] }>) {
  let offset = 0;
  return batches.flatMap(({ epoch, entries }) =>
    decodeOffsetsRecords(encodeOffsetsBatch(entries, epoch, 1_000), 't-0').map((record) => ({
      ...record,
      offset: BigInt(offset++),
    })),
  );
}

describe('offsets shard replay', () => {
  it('round-trips every kind of record', () => {
    const entries: OffsetsEntry[] = [
      commit('g', 0, 42n),
      { kind: 'offset', groupId: 'g', topic: 'orders', partition: 1, committed: undefined },
      { kind: 'group', record: groupEpoch },
      { kind: 'shard-epoch', coordinatorId: 'c-1' },
    ];
    const decoded = decodeOffsetsRecords(encodeOffsetsBatch(entries, 7, 1_000), 't-0');
    expect(decoded.map((record) => record.entry)).toEqual(entries);
    expect(decoded.every((record) => record.shardEpoch === 7)).toBe(true);
  });

  it('rebuilds offsets and groups and ignores a zombie after a newer marker', () => {
    const shard = new OffsetsShard(
      3,
      2,
      { sessionTimeoutMs: 1_000, heartbeatIntervalMs: 100 },
      logger,
    );
    const records = log([
      { epoch: 1, entries: [{ kind: 'shard-epoch', coordinatorId: 'old' }, commit('g', 0, 10n)] },
      { epoch: 1, entries: [{ kind: 'group', record: groupEpoch }, commit('g', 1, 4n)] },
      { epoch: 2, entries: [{ kind: 'shard-epoch', coordinatorId: 'new' }, commit('g', 0, 12n)] },
      // The old owner did not know it lost the shard: its commit must not count.
      { epoch: 1, entries: [commit('g', 0, 11n)] },
      {
        epoch: 2,
        entries: [
          { kind: 'offset', groupId: 'g', topic: 'orders', partition: 1, committed: undefined },
        ],
      },
    ]);
    const applied = records.map((record) => shard.replay(record, 2_000));
    expect(applied).toEqual([true, true, true, true, true, true, false, true]);
    expect(shard.committedOffsets('g').map((offset) => [offset.partition, offset.offset])).toEqual([
      [0, 12n],
    ]);
    expect(shard.groups.get('g')?.groupEpoch).toBe(1);
    expect(shard.groupIds()).toEqual(['g']);
  });
});
