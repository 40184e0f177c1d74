// Proves the cleaner's rules on real logs, one case each: a batch that keeps every record is
// copied byte for byte and one that loses some is rebuilt with its base offset, last offset delta
// and codec (gzip, snappy, lz4 and zstd alike); a batch whose codec cannot inflate here, a
// producer's last batch and control batches stay whole; only closed segments below
// the high watermark and older than min.compaction.lag.ms are cleaned, and only over the dirty
// ratio; a log changed under a pass makes its swap refuse and leaves no file behind; a map too
// small for one batch marks the log uncleanable with the reason; the checkpoint and the
// statistics follow; recovery finishes a committed swap and undoes an uncommitted one.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  CompressionType,
  compressionCodecFor,
  decodeRecordBatches,
  encodeRecordBatch,
  RecordBatchError,
  RecordBatchErrorCode,
  registerCompressionCodec,
  type RecordInput,
} from '@spool/record-batch';
import { Log, type LogOpenOptions } from '../log';
import { segmentFileName } from '../log-segment';
import { bytesOf, temporaryDirectory } from '../testing';
import { CleanerCheckpoint, cleanerOffsetCheckpointFile } from './cleaner-checkpoint';
import { InlineCleanerCompute, type CleanerCompute } from './cleaner-compute';
import { CleanerThread } from './cleaner-thread';
import { cleanerThreadCrashEnvironmentVariable } from './cleaner-thread-messages';
import { LogCleaner, type CleanerLog, type LogCleanerSettings } from './log-cleaner';
import { recoverInterruptedSwap } from './segment-swap';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

// One cleaner thread for the file's cleaners, as a node has one: a thread's start from the
// TypeScript sources (its modules compiled as they load) costs seconds.
const thread = new CleanerThread();
afterAll(() => thread.close());

function cleanerOf(
  settings?: LogCleanerSettings,
  options: { clock?: () => number; compute?: CleanerCompute } = {},
): LogCleaner {
  return new LogCleaner(settings, { compute: thread, ...options });
}

const leader = { leaderEpoch: 1, assignOffsets: true };
const compacted = { cleanupPolicy: ['compact' as const], minCleanableDirtyRatio: 0 };

async function openLog(options: LogOpenOptions = {}): Promise<{ log: Log; root: string }> {
  const root = temporaryDirectory('spool-cleaner-');
  cleanups.push(root.remove);
  const { log } = await Log.open(path.join(root.directory, 'orders-0'), {
    ...options,
    config: { ...compacted, ...options.config },
  });
  cleanups.push(() => log.abandon());
  return { log, root: root.directory };
}

function records(...entries: Array<[string, string | null]>): RecordInput[] {
  return entries.map(([key, value]) => ({
    key: Buffer.from(key),
    value: value === null ? null : Buffer.from(value),
    timestampMs: 1_000n,
  }));
}

function batch(
  entries: Array<[string, string | null]>,
  fields: Partial<Parameters<typeof encodeRecordBatch>[0]> = {},
): Buffer {
  return encodeRecordBatch({ baseOffset: 0n, records: records(...entries), ...fields });
}

function readBytes(log: Log): Buffer {
  const read = log.read(log.logStartOffset, 1 << 30);
  try {
    return bytesOf(read.slices);
  } finally {
    read.release();
  }
}

function entryOf(log: Log, root: string, extra: Partial<CleanerLog> = {}): CleanerLog {
  return { log, checkpoint: CleanerCheckpoint.load(root), ...extra };
}

async function cleanAll(
  log: Log,
  root: string,
  extra: Partial<CleanerLog> = {},
  compute: CleanerCompute = thread,
) {
  log.roll();
  log.updateHighWatermark(log.logEndOffset);
  return cleanerOf(undefined, { compute }).cleanFilthiest([entryOf(log, root, extra)]);
}

describe('LogCleaner', () => {
  it('copies kept batches byte for byte and rebuilds the rest with their offsets and codec', async () => {
    const { log, root } = await openLog();
    log.append(
      batch([
        ['a', '1'],
        ['b', '1'],
      ]),
      leader,
    );
    log.append(
      batch(
        [
          ['c', '1'],
          ['a', '2'],
          ['d', '1'],
        ],
        { compressionType: CompressionType.Gzip },
      ),
      leader,
    );
    log.append(batch([['d', '2']]), leader);
    const before = decodeRecordBatches(readBytes(log));
    const lastBatchBytes = readBytes(log).subarray(-before[2]!.header.sizeBytes);

    const result = await cleanAll(log, root);

    expect(result).toMatchObject({ recordsRemoved: 2, endOffset: 6n, aborted: false });
    const after = decodeRecordBatches(readBytes(log));
    expect(after.map((decoded) => decoded.records.map((record) => record.offset))).toEqual([
      [1n],
      [2n, 3n],
      [5n],
    ]);
    // Offsets stay; the rebuilt gzip batch keeps its base offset, last offset and codec.
    expect(after[1]!.header.baseOffset).toBe(2n);
    expect(after[1]!.header.lastOffset).toBe(4n);
    expect(after[1]!.header.compressionType).toBe(CompressionType.Gzip);
    expect(after[0]!.header.lastOffset).toBe(1n);
    expect(readBytes(log).subarray(-lastBatchBytes.length).equals(lastBatchBytes)).toBe(true);
    expect(log.logEndOffset).toBe(6n);
    expect(fs.readFileSync(path.join(root, cleanerOffsetCheckpointFile), 'utf8')).toBe(
      '0\n1\norders 0 6\n',
    );
  });

  it.each([
    ['snappy', CompressionType.Snappy],
    ['lz4', CompressionType.Lz4],
    ['zstd', CompressionType.Zstd],
  ] as const)(
    'drops the older records of a %s batch and recompresses it with its own codec',
    async (_name, codec) => {
      const { log, root } = await openLog();
      const compressed = { compressionType: codec };
      log.append(
        batch(
          [
            ['a', '1'],
            ['b', '1'],
            ['c', '1'],
          ],
          compressed,
        ),
        leader,
      );
      log.append(
        batch(
          [
            ['a', '2'],
            ['c', '2'],
          ],
          compressed,
        ),
        leader,
      );

      const result = await cleanAll(log, root);

      expect(result).toMatchObject({ recordsRemoved: 2, endOffset: 5n, aborted: false });
      const after = decodeRecordBatches(readBytes(log));
      expect(after.map((decoded) => decoded.header.compressionType)).toEqual([codec, codec]);
      expect(
        after.map((decoded) => [decoded.header.baseOffset, decoded.header.lastOffset]),
      ).toEqual([
        [0n, 2n],
        [3n, 4n],
      ]);
      expect(
        after.flatMap((decoded) =>
          decoded.records.map((record) => `${record.offset}:${record.key}=${record.value}`),
        ),
      ).toEqual(['1:b=1', '3:a=2', '4:c=2']);
    },
  );

  it('keeps a batch whole when its codec cannot inflate here (its package failed to load)', async () => {
    const { log, root } = await openLog();
    log.append(batch([['a', '1']], { compressionType: CompressionType.Zstd }), leader);
    log.append(batch([['a', '2']]), leader);
    const zstd = compressionCodecFor(CompressionType.Zstd);
    registerCompressionCodec({
      ...zstd,
      decompress: () => {
        throw new RecordBatchError(
          RecordBatchErrorCode.UnsupportedCompressionType,
          'compression zstd needs the package @toondepauw/node-zstd, which failed to load here',
        );
      },
    });
    try {
      // On this thread: the codec replaced above is in this thread's registry only (the
      // cleaner's thread has its own, where every codec loads).
      const result = await cleanAll(log, root, {}, new InlineCleanerCompute());
      expect(result).toMatchObject({ recordsRemoved: 0, aborted: false });
    } finally {
      registerCompressionCodec(zstd);
    }
    expect(
      decodeRecordBatches(readBytes(log)).flatMap((decoded) =>
        decoded.records.map((record) => `${record.offset}:${record.key}=${record.value}`),
      ),
    ).toEqual(['0:a=1', '1:a=2']);
  });

  it("keeps a producer's last batch whole, and its earlier batches only for their latest keys", async () => {
    const { log, root } = await openLog();
    const producer = { producerId: 7n, producerEpoch: 0 };
    log.append(batch([['a', '1']], { ...producer, baseSequence: 0 }), leader);
    log.append(batch([['a', '2']], { ...producer, baseSequence: 1 }), leader);
    log.append(batch([['a', '3']]), leader);
    await cleanAll(log, root, { producerLastOffsets: () => new Map([[7n, 1n]]) });
    const offsets = decodeRecordBatches(readBytes(log)).map((decoded) => decoded.header.baseOffset);
    expect(offsets).toEqual([1n, 2n]);
  });

  it('keeps control batches', async () => {
    const { log, root } = await openLog();
    log.append(batch([['a', '1']]), leader);
    // Transaction markers come from the leader's own log, so a follower append writes one here.
    const marker = encodeRecordBatch({
      baseOffset: 1n,
      partitionLeaderEpoch: 1,
      isControl: true,
      isTransactional: true,
      producerId: 3n,
      producerEpoch: 0,
      records: [
        { key: Buffer.from([0, 0, 0, 1]), value: Buffer.from([0, 0, 0, 0, 0, 0]), timestampMs: 1n },
      ],
    });
    log.append(marker, { leaderEpoch: 1, assignOffsets: false });
    log.append(batch([['a', '2']]), leader);
    await cleanAll(log, root);
    const kept = decodeRecordBatches(readBytes(log)).map((decoded) => decoded.header.isControl);
    expect(kept).toEqual([true, false]);
  });

  it('cleans only closed segments below the high watermark, past the lag, over the ratio', async () => {
    let nowMs = 100_000;
    const { log, root } = await openLog({
      clock: () => nowMs,
      config: { minCompactionLagMs: 50_000, minCleanableDirtyRatio: 0.6 },
    });
    const at = (timestampMs: number) =>
      encodeRecordBatch({
        baseOffset: 0n,
        records: [
          { key: Buffer.from('a'), value: Buffer.from('v'), timestampMs: BigInt(timestampMs) },
        ],
      });
    log.append(at(10_000), leader);
    log.roll();
    log.append(at(90_000), leader);
    log.roll();
    log.append(at(95_000), leader);
    const cleaner = cleanerOf(undefined, { clock: () => nowMs });
    const entry = entryOf(log, root);
    // The high watermark at the log start: nothing is cleanable.
    expect(await cleaner.cleanFilthiest([entry])).toBeUndefined();
    log.updateHighWatermark(log.logEndOffset);
    // Only the first segment is older than the lag: dirty ratio 1, cleaned.
    expect(await cleaner.cleanFilthiest([entry])).toMatchObject({
      firstDirtyOffset: 0n,
      endOffset: 1n,
    });
    // The second becomes cleanable as time passes, but its share (one of two) is under 0.6.
    nowMs = 200_000;
    expect(await cleaner.cleanFilthiest([entry])).toBeUndefined();
    expect(cleaner.logStates()).toEqual([
      expect.objectContaining({ folder: 'orders-0', firstDirtyOffset: 1n, dirtyRatio: 0.5 }),
    ]);
    log.updateConfig({ minCleanableDirtyRatio: 0.5 });
    expect(await cleaner.cleanFilthiest([entry])).toMatchObject({
      endOffset: 2n,
      recordsRemoved: 1,
    });
    expect(cleaner.statistics()).toMatchObject({ passes: 2, recordsRemovedTotal: 1 });
  });

  it('refuses the swap of a log truncated under the pass and leaves no cleaned file', async () => {
    const { log, root } = await openLog();
    for (let index = 0; index < 3; index++) {
      log.append(batch([['a', String(index)]]), leader);
      log.roll();
    }
    log.updateHighWatermark(log.logEndOffset);
    const cleaner = cleanerOf({
      dedupeBufferSizeBytes: 1 << 16,
      ioMaxBytesPerSecond: Number.POSITIVE_INFINITY,
    });
    const pass = cleaner.cleanFilthiest([entryOf(log, root)]);
    log.truncateTo(1n);
    expect(await pass).toMatchObject({ aborted: true });
    const names = fs.readdirSync(log.directory);
    expect(names.filter((name) => /cleaned|swap|deleted/.test(name))).toEqual([]);
    expect(decodeRecordBatches(readBytes(log)).map((decoded) => decoded.header.baseOffset)).toEqual(
      [0n],
    );
  });

  it('marks a log uncleanable, with the reason, when one batch has more keys than the map', async () => {
    const { log, root } = await openLog();
    log.append(
      batch([
        ['a', '1'],
        ['b', '1'],
        ['c', '1'],
      ]),
      leader,
    );
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    const cleaner = cleanerOf({ dedupeBufferSizeBytes: 50, ioMaxBytesPerSecond: Infinity });
    await expect(cleaner.cleanFilthiest([entryOf(log, root)])).rejects.toThrow(
      /log.cleaner.dedupe.buffer.size 50 holds 1 keys/,
    );
    expect(cleaner.statistics().uncleanable).toEqual([
      { folder: 'orders-0', reason: expect.stringMatching(/dedupe.buffer.size/) },
    ]);
    expect(await cleaner.cleanFilthiest([entryOf(log, root)])).toBeUndefined();
  });

  // Two thread starts from the TypeScript sources, each seconds on a loaded machine. The crash
  // is at step 3, once the map is built and the .cleaned segment created (step 2's crash takes
  // the same way out of the pass).
  it('survives a crash of its thread: the pass fails, the log is marked uncleanable and left whole', async () => {
    const crashing = new CleanerThread();
    cleanups.push(() => void crashing.close());
    // The thread copies the environment when it starts: at a pass's first request, and again
    // after a crash.
    const crashAt = 'filterChunk';
    const { log, root } = await openLog();
    log.append(batch([['a', '1']]), leader);
    log.append(batch([['a', '2']]), leader);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    const before = readBytes(log);
    const cleaner = cleanerOf(undefined, { compute: crashing });
    process.env[cleanerThreadCrashEnvironmentVariable] = crashAt;
    try {
      await expect(cleaner.cleanFilthiest([entryOf(log, root)])).rejects.toThrow(
        `the log cleaner thread crashed: test hook: crash at ${crashAt}`,
      );
    } finally {
      delete process.env[cleanerThreadCrashEnvironmentVariable];
    }
    expect(cleaner.statistics()).toMatchObject({
      threadCrashes: 1,
      uncleanable: [{ folder: 'orders-0', reason: expect.stringMatching(/thread crashed/) }],
    });
    expect(readBytes(log).equals(before)).toBe(true);
    const leftovers = fs
      .readdirSync(log.directory)
      .filter((name) => /cleaned|swap|deleted/.test(name));
    expect(leftovers).toEqual([]);
    // The log stays uncleanable until it is opened again.
    expect(await cleaner.cleanFilthiest([entryOf(log, root)])).toBeUndefined();
    // The next pass starts a new thread.
    const other = await openLog();
    other.log.append(batch([['b', '1']]), leader);
    other.log.append(batch([['b', '2']]), leader);
    expect(await cleanAll(other.log, other.root, {}, crashing)).toMatchObject({
      recordsRemoved: 1,
    });
    expect(crashing.crashes).toBe(1);
  }, 90_000);

  it('ends a pass quietly when it is closed during the pass', async () => {
    const { log, root } = await openLog();
    for (let index = 0; index < 50; index++) {
      log.append(batch([['a', String(index)]]), leader);
      log.roll();
    }
    log.updateHighWatermark(log.logEndOffset);
    const own = new LogCleaner();
    const pass = own.cleanFilthiest([entryOf(log, root)]);
    await own.close();
    expect(await pass).toMatchObject({ aborted: true });
    expect(
      fs.readdirSync(log.directory).filter((name) => /cleaned|swap|deleted/.test(name)),
    ).toEqual([]);
    await expect(own.cleanFilthiest([entryOf(log, root)])).resolves.toBeUndefined();
  });
});

describe('recoverInterruptedSwap', () => {
  function touch(directory: string, names: string[]): void {
    for (const name of names) fs.writeFileSync(path.join(directory, name), name);
  }
  const old = (base: bigint, suffix: string) =>
    ['.log', '.index', '.timeindex'].map(
      (kind) => segmentFileName(base, '.log').replace('.log', kind) + suffix,
    );

  it('restores the old segments when the swap had not committed', () => {
    const { directory, remove } = temporaryDirectory();
    cleanups.push(remove);
    touch(directory, [...old(0n, '.deleted'), ...old(5n, ''), ...old(0n, '.cleaned')]);
    touch(directory, [segmentFileName(0n, '.index') + '.swap']);
    expect(recoverInterruptedSwap(directory).outcome).toBe('discarded');
    expect(fs.readdirSync(directory).sort()).toEqual([...old(0n, ''), ...old(5n, '')].sort());
    expect(fs.readFileSync(path.join(directory, segmentFileName(0n, '.log')), 'utf8')).toBe(
      segmentFileName(0n, '.log') + '.deleted',
    );
  });

  it('keeps the new segment when it took its name and the old files are still set aside', () => {
    const { directory, remove } = temporaryDirectory();
    cleanups.push(remove);
    touch(directory, [...old(0n, ''), ...old(0n, '.deleted'), ...old(5n, '.deleted')]);
    expect(recoverInterruptedSwap(directory).outcome).toBe('completed');
    expect(fs.readdirSync(directory).sort()).toEqual(old(0n, '').sort());
    expect(fs.readFileSync(path.join(directory, segmentFileName(0n, '.log')), 'utf8')).toBe(
      segmentFileName(0n, '.log'),
    );
  });

  it('installs the new segment once the .log.swap exists', () => {
    const { directory, remove } = temporaryDirectory();
    cleanups.push(remove);
    touch(directory, [...old(0n, '.swap'), ...old(5n, '.deleted'), segmentFileName(9n, '.log')]);
    expect(recoverInterruptedSwap(directory).outcome).toBe('completed');
    expect(fs.readdirSync(directory).sort()).toEqual(
      [...old(0n, ''), segmentFileName(9n, '.log')].sort(),
    );
    expect(recoverInterruptedSwap(directory)).toEqual({ outcome: 'none', actions: [] });
  });
});
