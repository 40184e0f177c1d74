// Proves the partition log's contract on real files: offsets are assigned by patching batches in
// place (CRC intact), reads return whole batches within maxBytes and below the high watermark,
// bad input writes nothing, batches are checked once (validateAppend) for one append of their
// kind, followers must continue the log exactly, segments roll by size, age
// and full index, retention keeps the active segment and lets readers finish, truncation and
// DeleteRecords move the ends as Kafka's do, and a clean reopen does not scan the log.
import { afterEach, describe, expect, it } from 'vitest';
import { CompressionType, encodeRecordBatch, validateRecordBatch } from '@spool/record-batch';
import { Log, type LogOpenOptions } from './log';
import { logConfigFromTopicConfigs } from './log-config';
import { writebackIntervalBytes, writebackWithoutAddonIntervalBytes } from './log-flusher';
import { OffsetOutOfRangeError, SegmentStoreError } from './errors';
import { batchOf, bytesOf, recordsOf, temporaryDirectory } from './testing';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function openLog(
  options: LogOpenOptions = {},
  directory?: string,
): Promise<{ log: Log; directory: string }> {
  let folder = directory;
  if (folder === undefined) {
    const temporary = temporaryDirectory();
    cleanups.push(temporary.remove);
    folder = temporary.directory;
  }
  const { log } = await Log.open(folder, options);
  cleanups.push(() => log.abandon());
  return { log, directory: folder };
}

const leader = { leaderEpoch: 3, assignOffsets: true };

describe('Log append and read', () => {
  it('assigns offsets, stamps the leader epoch, and keeps every CRC valid', async () => {
    const { log } = await openLog();
    expect(log.append(batchOf(3), leader)).toMatchObject({
      baseOffset: 0n,
      lastOffset: 2n,
      recordCount: 3,
    });
    expect(log.append(batchOf(2, { label: 'b' }), leader)).toMatchObject({
      baseOffset: 3n,
      lastOffset: 4n,
    });
    expect(log.logEndOffset).toBe(5n);
    const read = log.read(0n, 1 << 20);
    const bytes = bytesOf(read.slices);
    const first = validateRecordBatch(bytes, 0, { maxBatchSizeBytes: 1 << 20, origin: 'log' });
    expect(first.partitionLeaderEpoch).toBe(3);
    validateRecordBatch(bytes, first.sizeBytes, { maxBatchSizeBytes: 1 << 20, origin: 'log' });
    expect(recordsOf(read.slices).map((record) => `${record.offset}:${record.value}`)).toEqual([
      '0:record-0',
      '1:record-1',
      '2:record-2',
      '3:b-0',
      '4:b-1',
    ]);
    read.release();
  });

  it('returns whole batches within maxBytes, and one whole batch larger than maxBytes', async () => {
    const { log } = await openLog();
    const sizes = [0, 1, 2, 3].map(
      (index) => log.append(batchOf(5, { label: `b${index}` }), leader).sizeBytes,
    );
    const two = log.read(0n, sizes[0]! + sizes[1]! + 10);
    expect(two.sizeBytes).toBe(sizes[0]! + sizes[1]!);
    expect(recordsOf(two.slices).at(-1)!.offset).toBe(9n);
    const fromMiddle = log.read(7n, 1);
    expect(fromMiddle.sizeBytes).toBe(sizes[1]);
    expect(recordsOf(fromMiddle.slices)[0]!.offset).toBe(5n);
    expect(log.read(7n, 1, { minOneBatch: false }).sizeBytes).toBe(0);
    for (const result of [two, fromMiddle]) result.release();
  });

  it('never returns a batch at or above maxOffsetExclusive (the high watermark)', async () => {
    const { log } = await openLog();
    for (let index = 0; index < 4; index++) log.append(batchOf(5), leader);
    expect(
      recordsOf(log.read(0n, 1 << 20, { maxOffsetExclusive: 10n }).slices).at(-1)!.offset,
    ).toBe(9n);
    // A high watermark inside a batch holds back the whole batch.
    expect(
      recordsOf(log.read(0n, 1 << 20, { maxOffsetExclusive: 12n }).slices).at(-1)!.offset,
    ).toBe(9n);
    expect(log.read(10n, 1 << 20, { maxOffsetExclusive: 10n }).slices).toEqual([]);
  });

  it('answers OFFSET_OUT_OF_RANGE outside [log start, log end] and nothing at the end', async () => {
    const { log } = await openLog();
    log.append(batchOf(2), leader);
    expect(log.read(2n, 100).slices).toEqual([]);
    const error = (() => {
      try {
        log.read(3n, 100);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(OffsetOutOfRangeError);
    expect((error as OffsetOutOfRangeError).code).toBe('OFFSET_OUT_OF_RANGE');
    expect((error as OffsetOutOfRangeError).logEndOffset).toBe(2n);
    expect(() => log.read(-1n, 100)).toThrow(/outside the log/);
  });

  it('writes none of a request whose second batch is bad', async () => {
    const { log } = await openLog();
    const good = batchOf(2);
    const bad = batchOf(2);
    bad[bad.length - 1]! ^= 0xff;
    expect(() => log.append(Buffer.concat([good, bad]), leader)).toThrow(/crc/);
    const tooLarge = batchOf(1, { valueSizeBytes: 2000 });
    const { log: small } = await openLog({ config: { maxMessageBytes: 1000 } });
    expect(() => small.append(tooLarge, leader)).toThrow(
      expect.objectContaining({ code: 'MESSAGE_TOO_LARGE' }),
    );
    expect(() => log.append(Buffer.alloc(0), leader)).toThrow(
      expect.objectContaining({ code: 'INVALID_RECORD' }),
    );
    expect(log.logEndOffset).toBe(0n);
    expect(log.sizeBytes).toBe(0);
  });

  it('appends batches checked by validateAppend once, and only those', async () => {
    const { log } = await openLog();
    const records = Buffer.concat([batchOf(2), batchOf(3)]);
    const validated = log.validateAppend(records, leader);
    expect(validated.positions).toEqual([0, batchOf(2).length]);
    expect(log.appendValidated(validated, leader)).toMatchObject({
      baseOffset: 0n,
      lastOffset: 4n,
    });
    // Used once: its offsets are patched in, so it would no longer pass a client's checks.
    expect(() => log.appendValidated(validated, leader)).toThrow(/assert/i);
    // Made by hand, not by validateAppend: nothing vouches for the bytes.
    const forged = { records: batchOf(1), positions: [0], assignOffsets: true };
    expect(() => log.appendValidated(forged, leader)).toThrow(/assert/i);
    // Checked for a follower's append, used for a leader's.
    const follower = { leaderEpoch: 3, assignOffsets: false };
    const asFollower = log.validateAppend(batchOf(1), follower);
    expect(() => log.appendValidated(asFollower, leader)).toThrow(/assert/i);
    expect(log.logEndOffset).toBe(5n);
  });

  it("takes a compacted leader's batches past a gap on a follower, and refuses a gap elsewhere", async () => {
    const compact = { config: { cleanupPolicy: ['compact' as const] } };
    const { log: source } = await openLog(compact);
    source.append(batchOf(3, { keyed: true }), { leaderEpoch: 1, assignOffsets: true });
    source.append(batchOf(2, { keyed: true }), { leaderEpoch: 1, assignOffsets: true });
    const read = source.read(0n, 1 << 20);
    const bytes = bytesOf(read.slices);
    read.release();
    // The first batch removed by a cleaner: the second starts at offset 3 on an empty follower.
    const afterGap = bytes.subarray(bytes.readInt32BE(8) + 12);
    const { log: follower } = await openLog(compact);
    follower.append(Buffer.from(afterGap), { leaderEpoch: 1, assignOffsets: false });
    expect(follower.logEndOffset).toBe(5n);
    expect(recordsOf(follower.read(0n, 1 << 20).slices).map((record) => record.offset)).toEqual([
      3n,
      4n,
    ]);
    expect(() =>
      follower.append(Buffer.from(afterGap), { leaderEpoch: 1, assignOffsets: false }),
    ).toThrow(expect.objectContaining({ code: 'UNEXPECTED_APPEND_OFFSET' }));
  });

  it('takes a follower append only where the log ends, with the leader offsets and epochs', async () => {
    const { log: source } = await openLog();
    source.append(batchOf(3), { leaderEpoch: 1, assignOffsets: true });
    source.append(batchOf(2), { leaderEpoch: 4, assignOffsets: true });
    const read = source.read(0n, 1 << 20);
    const bytes = bytesOf(read.slices);
    read.release();
    const { log: follower } = await openLog();
    expect(() =>
      follower.append(bytes.subarray(bytes.readInt32BE(8) + 12), {
        leaderEpoch: 4,
        assignOffsets: false,
      }),
    ).toThrow(expect.objectContaining({ code: 'UNEXPECTED_APPEND_OFFSET' }));
    follower.append(Buffer.from(bytes), { leaderEpoch: 4, assignOffsets: false });
    expect(follower.logEndOffset).toBe(5n);
    expect(follower.leaderEpochEntries()).toEqual([
      { epoch: 1, startOffset: 0n },
      { epoch: 4, startOffset: 3n },
    ]);
    expect(follower.endOffsetForLeaderEpoch(1)).toEqual({ epoch: 1, endOffset: 3n });
    expect(follower.endOffsetForLeaderEpoch(4)).toEqual({ epoch: 4, endOffset: 5n });
  });
});

describe('Log segments', () => {
  it('rolls on segment.bytes, on segment.ms and on a full index', async () => {
    const batch = batchOf(10, { valueSizeBytes: 100 });
    const { log } = await openLog({ config: { segmentBytes: batch.length * 3 } });
    for (let index = 0; index < 7; index++) log.append(Buffer.from(batch), leader);
    expect(log.segmentBaseOffsets()).toEqual([0n, 30n, 60n]);
    expect(recordsOf(log.read(25n, 1 << 20).slices).map((record) => record.offset)).toEqual(
      Array.from({ length: 50 }, (_, index) => BigInt(index + 20)),
    );

    let nowMs = 1_000_000;
    const { log: timed } = await openLog({ config: { segmentMs: 1000 }, clock: () => nowMs });
    timed.append(batchOf(1, { timestampMs: nowMs }), leader);
    nowMs += 500;
    timed.append(batchOf(1, { timestampMs: nowMs }), leader);
    nowMs += 1000;
    timed.append(batchOf(1, { timestampMs: nowMs }), leader);
    expect(timed.segmentBaseOffsets()).toEqual([0n, 2n]);

    const { log: indexed } = await openLog({
      config: { segmentIndexBytes: 4096, indexIntervalBytes: 0 },
    });
    for (let index = 0; index < 600; index++) indexed.append(batchOf(1), leader);
    expect(indexed.segmentCount).toBeGreaterThan(1);
    expect(recordsOf(indexed.read(0n, 1 << 30).slices)).toHaveLength(600);
  });

  it('deletes by retention.ms and retention.bytes but never the active segment', async () => {
    let nowMs = 10_000_000;
    const batch = (timestampMs: number) =>
      batchOf(10, { valueSizeBytes: 100, timestampMs, keyed: true });
    const segmentBytes = batch(0).length * 2;
    const { log } = await openLog({
      config: { segmentBytes, retentionMs: 60_000, retentionBytes: -1 },
      clock: () => nowMs,
    });
    for (let index = 0; index < 6; index++) log.append(batch(nowMs + index * 10_000), leader);
    expect(log.segmentCount).toBe(3);
    nowMs += 200_000;
    expect(log.deleteRetainedSegments()).toMatchObject({ segmentsDeleted: 2 });
    expect(log.segmentBaseOffsets()).toEqual([40n]);
    expect(log.logStartOffset).toBe(40n);
    expect(() => log.read(0n, 100)).toThrow(OffsetOutOfRangeError);

    const { log: sized } = await openLog({
      config: { segmentBytes, retentionBytes: segmentBytes * 2 },
    });
    for (let index = 0; index < 8; index++) sized.append(batch(Date.now()), leader);
    sized.deleteRetainedSegments();
    expect(sized.segmentBaseOffsets()).toEqual([40n, 60n]);
  });

  it('deletes nothing by time or size under cleanup.policy=compact, and does with compact,delete', async () => {
    let nowMs = 10_000_000;
    const batch = (timestampMs: number) =>
      batchOf(10, { valueSizeBytes: 100, timestampMs, keyed: true });
    const segmentBytes = batch(0).length * 2;
    const retention = { segmentBytes, retentionMs: 60_000, retentionBytes: segmentBytes };
    const { log: compacted } = await openLog({
      config: { ...retention, cleanupPolicy: ['compact'] },
      clock: () => nowMs,
    });
    const { log: both } = await openLog({
      config: { ...retention, cleanupPolicy: ['compact', 'delete'] },
      clock: () => nowMs,
    });
    for (let index = 0; index < 6; index++) {
      compacted.append(batch(nowMs), leader);
      both.append(batch(nowMs), leader);
    }
    nowMs += 200_000;
    expect(compacted.deleteRetainedSegments()).toMatchObject({ segmentsDeleted: 0 });
    expect(recordsOf(compacted.read(0n, 1 << 30).slices)).toHaveLength(60);
    expect(both.deleteRetainedSegments()).toMatchObject({ segmentsDeleted: 2 });
  });

  it('reads cleanup.policy from topic configs and refuses an unknown policy', () => {
    expect(logConfigFromTopicConfigs({ 'cleanup.policy': 'compact,delete' }).cleanupPolicy).toEqual(
      ['compact', 'delete'],
    );
    expect(logConfigFromTopicConfigs({}).cleanupPolicy).toEqual(['delete']);
    expect(() => logConfigFromTopicConfigs({ 'cleanup.policy': 'archive' })).toThrow(
      /cleanup.policy must be delete, compact, or compact,delete, got archive/,
    );
  });

  it("refuses a keyless record on a compacted log with Kafka's INVALID_RECORD, writing nothing", async () => {
    const { log } = await openLog({ config: { cleanupPolicy: ['compact', 'delete'] } });
    log.append(batchOf(2, { keyed: true }), leader);
    const mixed = encodeRecordBatch({
      baseOffset: 0n,
      records: [
        { key: Buffer.from('k'), value: Buffer.from('v'), timestampMs: 1n },
        { key: null, value: Buffer.from('v'), timestampMs: 1n },
      ],
    });
    const refusal = (() => {
      try {
        log.append(mixed, leader);
      } catch (error) {
        return error as SegmentStoreError;
      }
      return undefined;
    })();
    expect(refusal).toBeInstanceOf(SegmentStoreError);
    expect(refusal?.code).toBe('INVALID_RECORD');
    expect(refusal?.message).toMatch(
      /^Compacted topic cannot accept message without key in topic partition /,
    );
    expect(log.logEndOffset).toBe(2n);
    // A follower copies the leader's log as it is; only produced batches are checked.
    const { log: deleting } = await openLog();
    expect(deleting.append(batchOf(1), leader).recordCount).toBe(1);
  });

  it.each([
    ['gzip', CompressionType.Gzip],
    ['snappy', CompressionType.Snappy],
    ['lz4', CompressionType.Lz4],
    ['zstd', CompressionType.Zstd],
  ] as const)(
    'inflates a %s batch to refuse its keyless record on a compacted log',
    async (_name, codec) => {
      const { log } = await openLog({ config: { cleanupPolicy: ['compact'] } });
      const keyed = (key: string | null) => ({
        key: key === null ? null : Buffer.from(key),
        value: Buffer.from('v'),
        timestampMs: 1n,
      });
      const compressed = (...keys: Array<string | null>) =>
        encodeRecordBatch({ baseOffset: 0n, compressionType: codec, records: keys.map(keyed) });
      expect(log.append(compressed('a', 'b'), leader).recordCount).toBe(2);
      expect(() => log.append(compressed('c', null, 'd'), leader)).toThrow(
        expect.objectContaining({
          code: 'INVALID_RECORD',
          message: expect.stringMatching(/^Compacted topic cannot accept message without key/),
        }),
      );
      expect(log.logEndOffset).toBe(2n);
    },
  );

  it('reads the compaction settings with Kafka names and defaults, and refuses bad ones', () => {
    expect(logConfigFromTopicConfigs({})).toMatchObject({
      minCleanableDirtyRatio: 0.5,
      minCompactionLagMs: 0,
      maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
      deleteRetentionMs: 86_400_000,
    });
    expect(
      logConfigFromTopicConfigs({
        'min.cleanable.dirty.ratio': '0.01',
        'min.compaction.lag.ms': '10',
        'max.compaction.lag.ms': '9223372036854775807',
        'delete.retention.ms': '0',
      }),
    ).toMatchObject({
      minCleanableDirtyRatio: 0.01,
      minCompactionLagMs: 10,
      maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
      deleteRetentionMs: 0,
    });
    expect(() => logConfigFromTopicConfigs({ 'min.cleanable.dirty.ratio': '1.5' })).toThrow(
      /min.cleanable.dirty.ratio must be a number from 0 to 1, got 1.5/,
    );
    expect(() => logConfigFromTopicConfigs({ 'min.cleanable.dirty.ratio': 'half' })).toThrow(
      /min.cleanable.dirty.ratio must be a number from 0 to 1, got "half"/,
    );
    expect(() => logConfigFromTopicConfigs({ 'delete.retention.ms': '-1' })).toThrow(
      /delete.retention.ms must be an integer from 0/,
    );
    expect(() => logConfigFromTopicConfigs({ 'max.compaction.lag.ms': '0' })).toThrow(
      /max.compaction.lag.ms must be an integer from 1/,
    );
    expect(() =>
      logConfigFromTopicConfigs({ 'min.compaction.lag.ms': '5', 'max.compaction.lag.ms': '4' }),
    ).toThrow(
      /conflict topic config setting min.compaction.lag.ms \(5\) > max.compaction.lag.ms \(4\)/,
    );
  });

  it('lets a reader finish with a segment that retention deleted', async () => {
    const batch = batchOf(10, { valueSizeBytes: 100, timestampMs: 1 });
    const { log } = await openLog({ config: { segmentBytes: batch.length, retentionMs: 1000 } });
    for (let index = 0; index < 3; index++) log.append(Buffer.from(batch), leader);
    const read = log.read(0n, batch.length);
    expect(log.deleteRetainedSegments().segmentsDeleted).toBe(2);
    expect(recordsOf(read.slices)).toHaveLength(10);
    read.release();
  });

  it('truncates to an offset, removing whole segments and batches at or after it', async () => {
    const batch = batchOf(10);
    const { log } = await openLog({ config: { segmentBytes: batch.length * 2 } });
    for (let epoch = 1; epoch <= 5; epoch++)
      log.append(Buffer.from(batch), { leaderEpoch: epoch, assignOffsets: true });
    expect(log.truncateTo(25n).bytesTruncated).toBe(batch.length * 3);
    expect(log.logEndOffset).toBe(20n);
    expect(log.segmentBaseOffsets()).toEqual([0n, 20n]);
    expect(log.leaderEpochEntries().map((entry) => entry.epoch)).toEqual([1, 2]);
    expect(log.append(Buffer.from(batch), leader).baseOffset).toBe(20n);
    log.truncateFullyAndStartAt(100n);
    expect([log.logStartOffset, log.logEndOffset, log.segmentCount]).toEqual([100n, 100n, 1]);
    expect(log.append(Buffer.from(batch), leader).baseOffset).toBe(100n);
  });

  it('measures the bytes from an offset to the end across segments', async () => {
    const batch = batchOf(10);
    const { log } = await openLog({ config: { segmentBytes: batch.length * 2 } });
    for (let index = 0; index < 5; index++) log.append(Buffer.from(batch), leader);
    expect(log.sizeBytesFrom(0n)).toBe(batch.length * 5);
    expect(log.sizeBytesFrom(25n)).toBe(batch.length * 3);
    expect(log.sizeBytesFrom(49n)).toBe(batch.length);
    expect(log.sizeBytesFrom(50n)).toBe(0);
  });

  it('moves the log start offset with DeleteRecords and deletes segments below it', async () => {
    const batch = batchOf(10);
    const { log } = await openLog({ config: { segmentBytes: batch.length } });
    for (let index = 0; index < 4; index++) log.append(Buffer.from(batch), leader);
    expect(log.deleteRecordsBefore(25n)).toEqual({ logStartOffset: 25n, segmentsDeleted: 2 });
    expect(() => log.read(24n, 100)).toThrow(OffsetOutOfRangeError);
    expect(recordsOf(log.read(25n, 1 << 20).slices)[0]!.offset).toBe(20n);
    expect(() => log.deleteRecordsBefore(41n)).toThrow(OffsetOutOfRangeError);
  });

  it('finds the first offset at or after a timestamp', async () => {
    const { log } = await openLog({ config: { indexIntervalBytes: 0 } });
    for (let index = 0; index < 10; index++)
      log.append(batchOf(5, { timestampMs: 1000 + index * 100 }), leader);
    expect(log.offsetForTimestamp(0)).toEqual({ offset: 0n, timestampMs: 1000 });
    expect(log.offsetForTimestamp(1302)).toEqual({ offset: 17n, timestampMs: 1302 });
    expect(log.offsetForTimestamp(1305)).toEqual({ offset: 20n, timestampMs: 1400 });
    expect(log.offsetForTimestamp(99_999)).toBeUndefined();
  });

  it('finds the first record with the largest timestamp, across segments (MAX_TIMESTAMP)', async () => {
    const batch = batchOf(5, { timestampMs: 1000 });
    const { log } = await openLog({ config: { segmentBytes: batch.length * 2 } });
    expect(log.offsetOfMaxTimestamp()).toBeUndefined();
    // Timestamps need not grow with offsets: the largest is in the second of three segments.
    for (const timestampMs of [1000, 2000, 3000, 2500, 500])
      log.append(batchOf(5, { timestampMs }), leader);
    log.append(batchOf(1, { timestampMs: 3004 }), leader);
    expect(log.segmentCount).toBeGreaterThan(2);
    // 3004 is first carried by offset 14 (3000 + 4), before the later batch at 3004.
    expect(log.offsetOfMaxTimestamp()).toEqual({ offset: 14n, timestampMs: 3004 });
  });

  it('stamps LogAppendTime when the topic asks for it', async () => {
    const { log } = await openLog({
      config: { messageTimestampType: 'LogAppendTime' },
      clock: () => 42_000,
    });
    expect(log.append(batchOf(2, { timestampMs: 5 }), leader).logAppendTimeMs).toBe(42_000);
    const bytes = bytesOf(log.read(0n, 1000).slices);
    expect(
      validateRecordBatch(bytes, 0, { maxBatchSizeBytes: 1000, origin: 'log' }).maxTimestampMs,
    ).toBe(42_000n);
  });
});

describe('Log open and close', () => {
  it('reopens after a clean close without scanning, with offsets, epochs and start intact', async () => {
    const batch = batchOf(10);
    const { log, directory } = await openLog({ config: { segmentBytes: batch.length * 2 } });
    for (let epoch = 1; epoch <= 5; epoch++)
      log.append(Buffer.from(batch), { leaderEpoch: epoch, assignOffsets: true });
    log.deleteRecordsBefore(5n);
    await log.close();
    const { log: reopened, report } = await Log.open(directory, {
      config: { segmentBytes: batch.length * 2 },
    });
    cleanups.push(() => reopened.abandon());
    expect(report).toMatchObject({
      clean: true,
      segmentsScanned: 0,
      bytesTruncated: 0,
      logEndOffset: 50n,
      logStartOffset: 5n,
    });
    expect(reopened.leaderEpochEntries()).toEqual(log.leaderEpochEntries());
    expect(reopened.append(Buffer.from(batch), leader).baseOffset).toBe(50n);
  });

  it('recovers from the recovery point after an unclean stop', async () => {
    const batch = batchOf(10);
    const config = { segmentBytes: batch.length * 2 };
    const { log, directory } = await openLog({ config });
    for (let index = 0; index < 6; index++) log.append(Buffer.from(batch), leader);
    await log.flush();
    expect(log.recoveryPoint).toBe(60n);
    log.append(Buffer.from(batch), leader);
    log.abandon();
    const { log: reopened, report } = await Log.open(directory, { config });
    cleanups.push(() => reopened.abandon());
    expect(report.clean).toBe(false);
    expect(report.logEndOffset).toBe(70n);
    expect(report.bytesTruncated).toBe(0);
    expect(recordsOf(reopened.read(0n, 1 << 20).slices)).toHaveLength(70);
  });

  it('starts the write-out of every writebackIntervalBytes appended, range after range', async () => {
    const started: Array<{ position: number; count: number }> = [];
    const writeback = {
      startWriteback: async (_fd: number, position: number, count: number) => {
        started.push({ position, count });
      },
    };
    const batch = batchOf(100, { valueSizeBytes: 10_000 }); // ~1 MB
    const { log } = await openLog({ writeback });
    let appended = 0;
    while (appended < 3 * writebackIntervalBytes) {
      appended += log.append(Buffer.from(batch), leader).sizeBytes;
    }
    expect(started.length).toBeGreaterThanOrEqual(2);
    // Contiguous from the segment's start, each at least the interval.
    let position = 0;
    for (const range of started) {
      expect(range.position).toBe(position);
      expect(range.count).toBeGreaterThanOrEqual(writebackIntervalBytes);
      position += range.count;
    }
    expect(position).toBeLessThanOrEqual(appended);
    // A write-out is not a flush: the recovery point stays.
    expect(log.recoveryPoint).toBe(0n);
  });

  it('flushes every writebackWithoutAddonIntervalBytes instead when there is no addon', async () => {
    const batch = batchOf(100, { valueSizeBytes: 10_000 }); // ~1 MB
    const { log } = await openLog({ writeback: null });
    let appended = 0;
    while (appended < writebackWithoutAddonIntervalBytes) {
      appended += log.append(Buffer.from(batch), leader).sizeBytes;
    }
    // The last append crossed the interval and started a flush; nothing else will.
    const crossedAt = log.logEndOffset;
    const deadlineMs = Date.now() + 10_000;
    while (log.recoveryPoint < crossedAt && Date.now() < deadlineMs) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(log.recoveryPoint).toBe(crossedAt);
  });

  it('refuses work after close with a storage error', async () => {
    const { log } = await openLog();
    await log.close();
    expect(() => log.append(batchOf(1), leader)).toThrow(SegmentStoreError);
  });
});

describe('Log configuration', () => {
  it('names a bad setting by its Kafka name', async () => {
    const temporary = temporaryDirectory();
    cleanups.push(temporary.remove);
    await expect(Log.open(temporary.directory, { config: { segmentBytes: 0 } })).rejects.toThrow(
      /segment\.bytes must be an integer from 14/,
    );
  });

  it('encodes records the log reads back unchanged', () => {
    const batch = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from('x'), timestampMs: 1n }],
    });
    expect(batch.length).toBeGreaterThan(61);
  });
});
