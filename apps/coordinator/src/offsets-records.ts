/**
 * The records of __consumer_offsets, as RecordBatch v2 records whose key and value are the
 * protobuf messages of proto/spool/v1/offsets_topic.proto. One batch per write: a group's
 * changes of one heartbeat (or one commit) land atomically, in one acks=all append.
 *
 *   key   OffsetsRecordKey   kind "offset" + group + topic + partition | kind "group" + group +
 *                            subject | kind "shard-epoch"
 *   value OffsetsRecordValue shard epoch of the writer + one payload (a committed offset, a group
 *                            record as JSON, an epoch marker, or the removal of an offset)
 */
import { OffsetsRecordKey, OffsetsRecordValue } from '@spool/protocol';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import { SpoolError } from '@spool/common';
import type { GroupRecord } from '@spool/consumer-group';

export interface CommittedOffsetValue {
  readonly offset: bigint;
  readonly metadata: string;
  readonly commitTimestampMs: bigint;
  readonly leaderEpoch: number;
}

export type OffsetsEntry =
  | {
      readonly kind: 'offset';
      readonly groupId: string;
      readonly topic: string;
      readonly partition: number;
      /** Undefined: the committed offset was removed. */
      readonly committed: CommittedOffsetValue | undefined;
    }
  | { readonly kind: 'group'; readonly record: GroupRecord }
  | { readonly kind: 'shard-epoch'; readonly coordinatorId: string };

export interface ReplayedEntry {
  readonly offset: bigint;
  readonly shardEpoch: number;
  readonly entry: OffsetsEntry;
}

function subjectOf(record: GroupRecord): string {
  switch (record.type) {
    case 'member':
      return `member:${record.member.memberId}`;
    case 'member-removed':
      return `member:${record.memberId}`;
    case 'group-epoch':
      return 'epoch';
    case 'target-assignment':
      return 'assignment';
    case 'group-deleted':
      return 'deleted';
  }
}

function keyOf(entry: OffsetsEntry): OffsetsRecordKey {
  switch (entry.kind) {
    case 'offset':
      return {
        kind: 'offset',
        groupId: entry.groupId,
        topic: entry.topic,
        partition: entry.partition,
        subject: '',
      };
    case 'group':
      return {
        kind: 'group',
        groupId: entry.record.groupId,
        topic: '',
        partition: 0,
        subject: subjectOf(entry.record),
      };
    case 'shard-epoch':
      return { kind: 'shard-epoch', groupId: '', topic: '', partition: 0, subject: '' };
  }
}

function valueOf(entry: OffsetsEntry, shardEpoch: number): OffsetsRecordValue {
  const value: OffsetsRecordValue = { shardEpoch };
  switch (entry.kind) {
    case 'offset':
      if (entry.committed === undefined) value.offsetRemoved = {};
      else value.offsetCommit = { ...entry.committed };
      return value;
    case 'group':
      value.groupRecordJson = Buffer.from(JSON.stringify(entry.record), 'utf8');
      return value;
    case 'shard-epoch':
      value.shardEpochMarker = { coordinatorId: entry.coordinatorId };
      return value;
  }
}

/** One batch holding `entries` in order, each stamped with the writer's shard epoch. */
export function encodeOffsetsBatch(
  entries: readonly OffsetsEntry[],
  shardEpoch: number,
  nowMs: number,
): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: entries.map((entry) => ({
      key: Buffer.from(OffsetsRecordKey.encode(keyOf(entry)).finish()),
      value: Buffer.from(OffsetsRecordValue.encode(valueOf(entry, shardEpoch)).finish()),
      timestampMs: BigInt(nowMs),
    })),
  });
}

/** Every record of the fetched batches, decoded; a record that does not decode is an error. */
export function decodeOffsetsRecords(records: Buffer, topicPartition: string): ReplayedEntry[] {
  return decodeOffsetsBatches(records, topicPartition).entries;
}

/**
 * The records of the fetched batches and the offset after the last batch, so a reader moves
 * past batches that hold nothing for it (control batches, compacted gaps) instead of re-reading.
 */
export function decodeOffsetsBatches(
  records: Buffer,
  topicPartition: string,
): { entries: ReplayedEntry[]; nextOffset: bigint } {
  const entries: ReplayedEntry[] = [];
  let nextOffset = -1n;
  for (const batch of decodeRecordBatches(records)) {
    nextOffset = batch.header.lastOffset + 1n;
    if (batch.header.isControl) continue;
    for (const record of batch.records) {
      try {
        entries.push(decodeOne(record.key, record.value, record.offset));
      } catch (error) {
        throw new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `${topicPartition} offset ${record.offset} is not a coordinator record: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
  }
  return { entries, nextOffset };
}

function decodeOne(key: Buffer | null, value: Buffer | null, offset: bigint): ReplayedEntry {
  if (key === null || value === null) throw new Error('the key or value is null');
  const decodedKey = OffsetsRecordKey.decode(key);
  const decoded = OffsetsRecordValue.decode(value);
  const shardEpoch = decoded.shardEpoch;
  if (decodedKey.kind === 'offset') {
    const commit = decoded.offsetCommit;
    if (commit === undefined && decoded.offsetRemoved === undefined)
      throw new Error('an offset record has neither a commit nor a removal');
    return {
      offset,
      shardEpoch,
      entry: {
        kind: 'offset',
        groupId: decodedKey.groupId,
        topic: decodedKey.topic,
        partition: decodedKey.partition,
        committed: commit === undefined ? undefined : { ...commit },
      },
    };
  }
  if (decodedKey.kind === 'group') {
    if (decoded.groupRecordJson === undefined) throw new Error('a group record has no JSON');
    const record = JSON.parse(decoded.groupRecordJson.toString('utf8')) as GroupRecord;
    if (typeof record !== 'object' || record === null || typeof record.type !== 'string')
      throw new Error('a group record has no type');
    return { offset, shardEpoch, entry: { kind: 'group', record } };
  }
  if (decodedKey.kind === 'shard-epoch') {
    return {
      offset,
      shardEpoch,
      entry: {
        kind: 'shard-epoch',
        coordinatorId: decoded.shardEpochMarker?.coordinatorId ?? '',
      },
    };
  }
  throw new Error(`unknown record kind "${decodedKey.kind}"`);
}
