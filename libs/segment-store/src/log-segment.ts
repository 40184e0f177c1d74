/**
 * One segment of a partition's log (Kafka's `LogSegment`): a .log file of whole RecordBatch v2
 * batches, back to back, with its sparse offset and time indexes.
 *
 * Files, named by the base offset (the first offset the segment may hold) in 20 digits:
 *
 *   00000000000000368769.log        batches exactly as stored on the wire (see record-batch's
 *                                   record-batch-layout.ts); no file header, no padding
 *   00000000000000368769.index      offset → position (offset-index.ts)
 *   00000000000000368769.timeindex  timestamp → offset (time-index.ts)
 *
 * Crash story: appends are positional writes at the end of the .log file; a crash can leave a
 * torn batch at the end, or batches the page cache never wrote. `recover` reads every batch from
 * the start, checks framing, CRC and offsets, truncates the file at the first batch that fails,
 * and rebuilds both indexes from what survived. A segment that is not recovered (it lies before
 * the log's recovery point) is trusted, but its indexes are sanity-checked when loaded and every
 * index entry is verified against the batch header it points at before it is first used; the
 * offset index remembers what the check found (offset-index.ts), as it does for the entries of
 * batches appended in this process, so reads need no header reads to find their batches.
 *
 * Interleaving: all methods are synchronous except `flush`, so a segment is never observed half
 * way through an append or a truncation. `flush` holds a reference to the file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as recordBatch from '@spool/record-batch';
import * as common from '@spool/common';
import { SegmentStoreError, storageError } from './errors';
import type { FileHandleCache } from './file-handle-cache';
import type { FileSlice } from './file-slice';
import { readInt64AsNumber } from './int64-fields';
import type { LogConfig } from './log-config';
import { OffsetIndex } from './offset-index';
import { SegmentFile } from './segment-file';
import { TimeIndex } from './time-index';

// Read once, when the module loads: a named import compiles to a read through the CommonJS
// re-export getter of the package's index module on every use, and the append path uses these
// for every batch.
const {
  batchLengthPosition,
  checkRecordBatchCrc,
  checkRecordBatchFields,
  checkRecordBatchFraming,
  lastOffsetDeltaPosition,
  logOverheadSizeBytes,
  magicValueV2,
  maxTimestampPosition,
  partitionLeaderEpochPosition,
  recordBatchHeaderSizeBytes,
} = recordBatch;
// An assertion function needs a declared type to narrow; `typeof` keeps it the same function.
const assert: typeof common.assert = common.assert;

/** Where a batch lies and which offsets it holds: what a read needs to know of it. */
export interface BatchBounds {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  /** Where the batch starts: in the segment file, or in an append's buffer. */
  readonly position: number;
  readonly sizeBytes: number;
}

/** What the log needs to know of a batch, read from its header without decoding records. */
export interface BatchInfo extends BatchBounds {
  readonly maxTimestampMs: number;
  readonly partitionLeaderEpoch: number;
}

/**
 * The BatchInfo of the batch whose header starts at `at` in `header` and at `position` in the
 * segment file or append buffer. Every caller already holds the base offset as a bigint (read,
 * assigned or checked), so the rest costs one bigint addition and a few number reads.
 */
export function batchInfoFromHeader(
  header: Buffer,
  at: number,
  position: number,
  baseOffset: bigint,
): BatchInfo {
  return {
    baseOffset,
    lastOffset: baseOffset + BigInt(header.readInt32BE(at + lastOffsetDeltaPosition)),
    position,
    sizeBytes: header.readInt32BE(at + batchLengthPosition) + logOverheadSizeBytes,
    maxTimestampMs: readInt64AsNumber(header, at + maxTimestampPosition),
    partitionLeaderEpoch: header.readInt32BE(at + partitionLeaderEpochPosition),
  };
}

export interface SegmentRecovery {
  readonly batchesValid: number;
  readonly bytesTruncated: number;
  /** Why recovery stopped early, with the position; undefined when every byte was valid. */
  readonly problem: string | undefined;
}

/** How much of the .log file recovery reads at once. */
const recoveryChunkBytes = 1024 * 1024;
/** Header reads share one buffer: every read is synchronous and finished before the next. */
const headerScratch = Buffer.alloc(recordBatchHeaderSizeBytes);

/** The log's own files have none; the cleaner writes `.cleaned` files (cleaner/segment-swap.ts). */
export type SegmentFileSuffix = '' | '.cleaned';

export function segmentFileName(
  baseOffset: bigint,
  suffix: '.log' | '.index' | '.timeindex',
): string {
  assert(baseOffset >= 0n, 'segment base offsets are non-negative');
  return `${baseOffset.toString().padStart(20, '0')}${suffix}`;
}

export class LogSegment {
  readonly logFile: SegmentFile;
  readonly offsetIndex: OffsetIndex;
  readonly timeIndex: TimeIndex;
  /** Valid bytes in the .log file, always at a batch boundary. */
  sizeBytes: number;
  /** The offset after the last batch; the base offset while the segment is empty. */
  nextOffset: bigint;
  /** The largest batch max timestamp in the segment, -1 while there is none. */
  maxTimestampMs = -1;
  offsetOfMaxTimestamp: bigint;
  /** The first batch's max timestamp, read lazily after an open; for `segment.ms` rolls. */
  private firstBatchTimestampMs: number | undefined;
  /**
   * The batch at position 0, which has no index entry: known from its append or recovery, or
   * read once after an open. Undefined while unknown or the segment is empty.
   */
  private firstBatch: BatchBounds | undefined;
  /** When this process created or opened the segment: the age of a segment without timestamps. */
  createdAtMs = Date.now();
  private bytesSinceLastIndexEntry = 0;

  private constructor(
    readonly directory: string,
    readonly baseOffset: bigint,
    private readonly config: LogConfig,
    files: FileHandleCache,
    create: boolean,
    fileSuffix: SegmentFileSuffix,
  ) {
    const logPath = path.join(directory, segmentFileName(baseOffset, '.log') + fileSuffix);
    this.logFile = create ? SegmentFile.create(files, logPath) : SegmentFile.open(files, logPath);
    this.offsetIndex = new OffsetIndex(
      path.join(directory, segmentFileName(baseOffset, '.index') + fileSuffix),
      baseOffset,
      config.segmentIndexBytes,
      { create, files },
    );
    this.timeIndex = new TimeIndex(
      path.join(directory, segmentFileName(baseOffset, '.timeindex') + fileSuffix),
      baseOffset,
      config.segmentIndexBytes,
      { create, files },
    );
    this.sizeBytes = create ? 0 : this.logFile.sizeBytes();
    this.nextOffset = baseOffset;
    this.offsetOfMaxTimestamp = baseOffset;
  }

  /**
   * A new, empty segment. With a file suffix (`.cleaned`), its files are the log cleaner's output
   * (cleaner/segment-swap.ts), which only the swap renames into the log's names.
   */
  static create(
    directory: string,
    baseOffset: bigint,
    config: LogConfig,
    files: FileHandleCache,
    fileSuffix: SegmentFileSuffix = '',
  ): LogSegment {
    return new LogSegment(directory, baseOffset, config, files, true, fileSuffix);
  }

  /**
   * Opens an existing segment. Nothing is read yet: the caller either recovers it or calls
   * `loadTrusted` to check its indexes and find its end.
   */
  static open(
    directory: string,
    baseOffset: bigint,
    config: LogConfig,
    files: FileHandleCache,
  ): LogSegment {
    return new LogSegment(directory, baseOffset, config, files, false, '');
  }

  get isEmpty(): boolean {
    return this.sizeBytes === 0;
  }

  get path(): string {
    return this.logFile.path;
  }

  /**
   * For a segment that needs no recovery: checks its indexes (rebuilding them when they are not
   * sound) and reads the batches after the last index entry to find the segment's end and
   * largest timestamp. Costs one index load and at most an index interval of header reads.
   */
  loadTrusted(): { indexesRebuilt: boolean } {
    const problem = this.offsetIndex.sanityCheck(this.sizeBytes) ?? this.timeIndex.sanityCheck();
    const last = this.offsetIndex.lastEntry();
    if (
      problem !== undefined ||
      (last !== undefined &&
        this.verifiedBatchAtEntry(this.offsetIndex.entryCount - 1) === undefined)
    ) {
      this.rebuildIndexes();
      return { indexesRebuilt: true };
    }
    const lastTime = this.timeIndex.lastEntry();
    if (lastTime !== undefined) {
      this.maxTimestampMs = lastTime.timestampMs;
      this.offsetOfMaxTimestamp = lastTime.offset;
    }
    let position = last?.position ?? 0;
    this.bytesSinceLastIndexEntry = 0;
    while (position < this.sizeBytes) {
      const batch = this.readBatchAt(position)!;
      this.trackBatch(batch);
      this.bytesSinceLastIndexEntry += batch.sizeBytes;
      position += batch.sizeBytes;
    }
    return { indexesRebuilt: false };
  }

  /**
   * Appends batches that the log validated and assigned offsets to. `buffer` holds them back to
   * back; `batches` gives each one's header facts with its position inside `buffer`.
   */
  append(buffer: Buffer, batches: readonly BatchInfo[]): void {
    assert(batches.length > 0, 'append of no batches');
    assert(batches[0]!.baseOffset >= this.nextOffset, 'append offsets must ascend');
    assert(batches.at(-1)!.lastOffset - this.baseOffset <= 0xffffffffn, 'relative offset overflow');
    const startPosition = this.sizeBytes;
    this.logFile.markUnsynced();
    try {
      let written = 0;
      while (written < buffer.length) {
        written += fs.writeSync(
          this.logFile.fd,
          buffer,
          written,
          buffer.length - written,
          startPosition + written,
        );
      }
    } catch (error) {
      // A short write (a full disk) leaves bytes past sizeBytes: cut them so the file ends at a
      // batch boundary again. If even that fails, the next append overwrites them, and recovery
      // would cut them after a crash.
      try {
        fs.ftruncateSync(this.logFile.fd, startPosition);
      } catch {
        // Reported through the original error below.
      }
      throw storageError(
        `append to ${this.path} at position ${startPosition} failed`,
        error,
        this.path,
      );
    }
    if (this.isEmpty) this.firstBatchTimestampMs = batches[0]!.maxTimestampMs;
    for (const batch of batches) this.indexBatch(batch, startPosition + batch.position);
    this.sizeBytes += buffer.length;
  }

  /** Tracks a batch that starts at `position` in the file, with index entries by the interval. */
  private indexBatch(batch: BatchInfo, position: number): void {
    this.trackBatch(batch);
    if (position === 0) {
      const { baseOffset, lastOffset, sizeBytes } = batch;
      this.firstBatch = { baseOffset, lastOffset, position, sizeBytes };
    }
    if (this.bytesSinceLastIndexEntry > this.config.indexIntervalBytes) {
      this.offsetIndex.append(batch.baseOffset, position, batch);
      this.timeIndex.maybeAppend(this.maxTimestampMs, this.offsetOfMaxTimestamp);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += batch.sizeBytes;
  }

  private trackBatch(batch: BatchInfo): void {
    if (batch.maxTimestampMs > this.maxTimestampMs) {
      this.maxTimestampMs = batch.maxTimestampMs;
      this.offsetOfMaxTimestamp = batch.lastOffset;
    }
    this.nextOffset = batch.lastOffset + 1n;
  }

  /**
   * How long this segment has been collecting, for `segment.ms` (Kafka's timeWaitedForRoll): by
   * record time when both the first batch and the incoming one carry timestamps, so replaying
   * old data rolls by its own clock; by this process's clock otherwise. The clock is read only
   * then: this runs on every append, and a clock read costs more than the rest of it.
   */
  timeWaitedForRollMs(clock: () => number, incomingMaxTimestampMs: number): number {
    if (this.firstBatchTimestampMs === undefined && !this.isEmpty) {
      this.firstBatchTimestampMs = this.readBatchAt(0)!.maxTimestampMs;
    }
    const first = this.firstBatchTimestampMs ?? -1;
    return first >= 0 && incomingMaxTimestampMs >= 0
      ? incomingMaxTimestampMs - first
      : clock() - this.createdAtMs;
  }

  /** Whether the indexes can take no more entries; the log rolls before the next append. */
  get indexesFull(): boolean {
    return this.offsetIndex.isFull || this.timeIndex.isFull;
  }

  /** The segment stops being active: record its final largest timestamp in the time index. */
  onBecomeInactive(): void {
    if (this.maxTimestampMs >= 0) {
      this.timeIndex.maybeAppend(this.maxTimestampMs, this.offsetOfMaxTimestamp, { final: true });
    }
  }

  /** The header of the batch at `position`, or undefined at the end of the segment. */
  readBatchAt(position: number): BatchInfo | undefined {
    if (position >= this.sizeBytes) return undefined;
    const available = Math.min(recordBatchHeaderSizeBytes, this.sizeBytes - position);
    const read = fs.readSync(this.logFile.fd, headerScratch, 0, available, position);
    if (read < recordBatchHeaderSizeBytes || headerScratch.readInt8(16) !== magicValueV2) {
      throw this.corruption(position, 'no valid batch header');
    }
    const batchLength = headerScratch.readInt32BE(8);
    const sizeBytes = batchLength + 12;
    if (batchLength < recordBatchHeaderSizeBytes - 12 || position + sizeBytes > this.sizeBytes) {
      throw this.corruption(position, `batch length ${batchLength} runs past the segment's end`);
    }
    // The offset index may remember this batch: its last offset must not lie below its base.
    if (headerScratch.readInt32BE(lastOffsetDeltaPosition) < 0) {
      throw this.corruption(position, 'negative last offset delta');
    }
    return batchInfoFromHeader(headerScratch, 0, position, headerScratch.readBigInt64BE(0));
  }

  /**
   * The first batch whose last offset is ≥ `offset` (the batch holding it, or the next one), or
   * undefined when the segment ends before it. Starts at the index entry at or below `offset`
   * and steps batch by batch; a step to a verified entry's batch reads nothing from the file.
   */
  translateOffset(offset: bigint): BatchBounds | undefined {
    if (offset >= this.nextOffset) return undefined;
    let batch = this.verifiedBatchAtEntry(this.offsetIndex.entryAtMostOffset(offset));
    // A failed verification rebuilt the indexes from the log: the lookup is sound the second time.
    batch ??= this.verifiedBatchAtEntry(this.offsetIndex.entryAtMostOffset(offset));
    while (batch !== undefined && batch.lastOffset < offset) batch = this.batchAfter(batch);
    return batch;
  }

  /** Where the batch holding `offset` (or the next one) starts; the segment size past the end. */
  positionOf(offset: bigint): number {
    return this.translateOffset(offset)?.position ?? this.sizeBytes;
  }

  /**
   * The batch at index entry `entry` (-1: the segment's first batch), from what the index knows
   * of it, or read from its header and checked against the entry, once. When the check fails the
   * index is wrong: it is rebuilt from the log and undefined returned, for the caller to look up
   * again. Undefined too for an empty segment.
   */
  private verifiedBatchAtEntry(entry: number): BatchBounds | undefined {
    if (entry < 0) {
      if (this.firstBatch === undefined && !this.isEmpty) {
        const { baseOffset, lastOffset, position, sizeBytes } = this.readBatchAt(0)!;
        this.firstBatch = { baseOffset, lastOffset, position, sizeBytes };
      }
      return this.firstBatch;
    }
    const index = this.offsetIndex;
    const position = index.positionAt(entry);
    const entryOffset = this.baseOffset + BigInt(index.relativeOffsetAt(entry));
    const sizeBytes = index.verifiedSizeBytesAt(entry);
    if (sizeBytes > 0) {
      const lastOffset = entryOffset + BigInt(index.verifiedLastOffsetDeltaAt(entry));
      return { baseOffset: entryOffset, lastOffset, position, sizeBytes };
    }
    const batch = this.readBatchAt(position);
    if (batch === undefined || batch.baseOffset !== entryOffset) {
      this.rebuildIndexes();
      return undefined;
    }
    index.markVerified(entry, Number(batch.lastOffset - entryOffset), batch.sizeBytes);
    return batch;
  }

  /** The batch right after `batch`, undefined at the end of the segment. */
  private batchAfter(batch: BatchBounds): BatchBounds | undefined {
    const position = batch.position + batch.sizeBytes;
    if (position >= this.sizeBytes) return undefined;
    const entry = this.offsetIndex.entryAtMostPosition(position);
    if (entry >= 0 && this.offsetIndex.positionAt(entry) === position) {
      // An entry that fails its check was rebuilt away; the position is still a batch boundary.
      return this.verifiedBatchAtEntry(entry) ?? this.readBatchAt(position);
    }
    return this.readBatchAt(position);
  }

  /**
   * The byte range to read from `startOffset`: whole batches only, at most `maxBytes` of them
   * unless the first alone is larger and `minOneBatch` is set, and none at or past
   * `maxPosition` (a batch boundary). Undefined when there is nothing to read.
   */
  read(
    startOffset: bigint,
    maxBytes: number,
    maxPosition: number,
    minOneBatch: boolean,
  ): { position: number; sizeBytes: number } | undefined {
    const start = this.translateOffset(startOffset);
    if (start === undefined || start.position >= maxPosition) return undefined;
    const limit = start.position + maxBytes;
    let end: number;
    if (limit >= maxPosition) {
      end = maxPosition;
    } else {
      end = this.lastBoundaryAtMost(limit, start);
      if (end === start.position && minOneBatch) end = start.position + start.sizeBytes;
    }
    if (end === start.position) return undefined;
    return { position: start.position, sizeBytes: end - start.position };
  }

  /**
   * The last batch boundary at or below `limit` (which lies inside the segment), counting from
   * the batch `start`:
   *
   *   1. Jump to the last index entry at or below the limit, when it lies past `start`; its batch
   *      is known from the index, and the next entry's lies past the limit.
   *   2. Walk whole batches up to the limit. With an entry per batch (batches at least
   *      index.interval.bytes) the first step already fails and nothing is read from the file;
   *      smaller batches between two entries are read header by header.
   */
  private lastBoundaryAtMost(limit: number, start: BatchBounds): number {
    // 1.
    let batch: BatchBounds | undefined = start;
    const entry = this.offsetIndex.entryAtMostPosition(limit);
    if (entry >= 0 && this.offsetIndex.positionAt(entry) > start.position) {
      batch = this.verifiedBatchAtEntry(entry) ?? start;
    }
    // 2.
    let end = batch.position;
    while (batch !== undefined && end + batch.sizeBytes <= limit) {
      end += batch.sizeBytes;
      batch = this.batchAfter(batch);
    }
    return end;
  }

  /** A slice of this segment's file that holds a reference until released. */
  slice(
    position: number,
    sizeBytes: number,
    hot = false,
  ): FileSlice & { readonly file: SegmentFile } {
    return { file: this.logFile.acquire(), position, sizeBytes, hot };
  }

  /** The first batch with a max timestamp ≥ target, or undefined when none is in the segment. */
  findBatchAtOrAfterTimestamp(targetTimestampMs: number): BatchInfo | undefined {
    const fromIndex = this.timeIndex.lookup(targetTimestampMs);
    let position = this.positionOf(fromIndex.offset);
    for (;;) {
      const batch = this.readBatchAt(position);
      if (batch === undefined || batch.maxTimestampMs >= targetTimestampMs) return batch;
      position += batch.sizeBytes;
    }
  }

  /**
   * Recovery: reads every batch from the start, stops at the first that fails its framing, CRC,
   * field or offset checks, truncates the file there, and rebuilds the indexes from the batches
   * that passed. Never throws for bad data; the report says what was cut.
   */
  recover(batchSizeBytesLimit: number): SegmentRecovery {
    const fileSizeBytes = this.logFile.sizeBytes();
    this.resetIndexState();
    let chunk = Buffer.allocUnsafe(recoveryChunkBytes);
    let chunkStart = 0;
    let chunkLength = 0;
    const view = (position: number, length: number): Buffer => {
      if (position < chunkStart || position + length > chunkStart + chunkLength) {
        if (length > chunk.length) chunk = Buffer.allocUnsafe(length);
        chunkStart = position;
        chunkLength = readFully(
          this.logFile.fd,
          chunk,
          Math.min(chunk.length, fileSizeBytes - position),
          position,
        );
      }
      return chunk.subarray(position - chunkStart, position - chunkStart + length);
    };

    let position = 0;
    let batchesValid = 0;
    let problem: string | undefined;
    while (position < fileSizeBytes) {
      const remaining = fileSizeBytes - position;
      if (remaining < recordBatchHeaderSizeBytes) {
        problem = `a torn batch of ${remaining} bytes at the end`;
        break;
      }
      const header = view(position, recordBatchHeaderSizeBytes);
      const sizeBytes = header.readInt32BE(8) + 12;
      if (header.readInt8(16) !== magicValueV2 || sizeBytes < recordBatchHeaderSizeBytes) {
        problem = `no valid batch header (magic ${header.readInt8(16)}, length ${sizeBytes - 12})`;
        break;
      }
      if (sizeBytes > batchSizeBytesLimit || sizeBytes > remaining) {
        problem = `batch length ${sizeBytes - 12} runs past the end or the size limit`;
        break;
      }
      const bytes = view(position, sizeBytes);
      try {
        const batchHeader = checkRecordBatchFraming(bytes, 0);
        checkRecordBatchCrc(batchHeader);
        checkRecordBatchFields(batchHeader, 'log');
      } catch (error) {
        problem = (error as Error).message;
        break;
      }
      const baseOffset = bytes.readBigInt64BE(0);
      if (baseOffset < this.nextOffset) {
        problem = `base offset ${baseOffset} is below the expected ${this.nextOffset}`;
        break;
      }
      this.indexBatch(batchInfoFromHeader(bytes, 0, position, baseOffset), position);
      batchesValid++;
      position += sizeBytes;
    }
    const bytesTruncated = fileSizeBytes - position;
    if (bytesTruncated > 0) {
      fs.ftruncateSync(this.logFile.fd, position);
      this.logFile.markUnsynced();
    }
    this.sizeBytes = position;
    return {
      batchesValid,
      bytesTruncated,
      problem: problem === undefined ? undefined : `${this.path} position ${position}: ${problem}`,
    };
  }

  /** Rebuilds both indexes from the batch headers (no CRC checks: the data is trusted). */
  private rebuildIndexes(): void {
    this.resetIndexState();
    let position = 0;
    while (position < this.sizeBytes) {
      const batch = this.readBatchAt(position)!;
      this.indexBatch(batch, position);
      position += batch.sizeBytes;
    }
  }

  private resetIndexState(): void {
    this.firstBatch = undefined;
    this.offsetIndex.reset();
    this.timeIndex.reset();
    this.nextOffset = this.baseOffset;
    this.maxTimestampMs = -1;
    this.offsetOfMaxTimestamp = this.baseOffset;
    this.bytesSinceLastIndexEntry = 0;
  }

  /**
   * Removes every batch that holds an offset ≥ `offset` (a batch that straddles it goes whole).
   * Returns the bytes removed.
   */
  truncateTo(offset: bigint): number {
    const first = this.translateOffset(offset);
    if (first === undefined) return 0;
    const bytesTruncated = this.sizeBytes - first.position;
    this.offsetIndex.truncateTo(first.baseOffset);
    this.timeIndex.truncateTo(first.baseOffset);
    fs.ftruncateSync(this.logFile.fd, first.position);
    this.logFile.markUnsynced();
    this.sizeBytes = first.position;
    // The tail facts (end, largest timestamp) are read again from what remains.
    this.nextOffset = this.baseOffset;
    this.maxTimestampMs = -1;
    this.offsetOfMaxTimestamp = this.baseOffset;
    this.loadTrusted();
    this.firstBatchTimestampMs = undefined;
    if (this.isEmpty) this.firstBatch = undefined;
    return bytesTruncated;
  }

  async flush(): Promise<void> {
    // Index entries are written to their files in groups (index-file.ts); everything this flush
    // makes durable must have its entries in the files before the recovery point passes it.
    this.offsetIndex.writePending();
    this.timeIndex.writePending();
    await this.logFile.flush();
  }

  /** Makes the indexes durable on the libuv pool: the cleaner's, off the event loop. */
  async flushIndexes(): Promise<void> {
    await Promise.all([this.offsetIndex.flush(), this.timeIndex.flush()]);
  }

  /** Makes the indexes durable too; used on roll and clean close. */
  flushIndexesSync(): void {
    this.offsetIndex.flushSync();
    this.timeIndex.flushSync();
  }

  close(): void {
    this.offsetIndex.close();
    this.timeIndex.close();
    this.logFile.close();
  }

  /** Deletes the files; readers holding slices keep reading until they release them. */
  delete(): void {
    this.offsetIndex.delete();
    this.timeIndex.delete();
    this.logFile.delete();
  }

  private corruption(position: number, problem: string): SegmentStoreError {
    return new SegmentStoreError(
      'CORRUPT_MESSAGE',
      `${this.path} position ${position}: ${problem}`,
      {
        filePath: this.path,
      },
    );
  }
}

function readFully(fd: number, buffer: Buffer, length: number, position: number): number {
  let read = 0;
  while (read < length) {
    const count = fs.readSync(fd, buffer, read, length - read, position + read);
    if (count === 0) break;
    read += count;
  }
  return read;
}
