/**
 * A segment's sparse offset index (Kafka's `OffsetIndex`): maps offsets to byte positions in the
 * segment's .log file, one entry per `index.interval.bytes` of log, so a read finds its batch
 * with a binary search and a short forward scan instead of reading the segment from the start.
 *
 * Layout of `<20-digit base offset>.index`, 8 bytes an entry, ascending in both fields:
 *
 *   relativeOffset  u32 BE   the batch's base offset − the segment's base offset
 *   position        u32 BE   where that batch starts in the .log file
 *
 * Every entry points at the first byte of a batch whose base offset is exactly the entry's offset,
 * which lets a lookup verify an entry with one header read (see LogSegment) and makes a damaged
 * index detectable even when its entries still look ascending.
 *
 * In memory only, beside each entry (in the same 16 bytes, so one cache line holds both), the
 * index keeps what it knows for sure of the batch at the entry: its last offset and its size, so
 * the memory copy is at most twice segment.index.bytes. An entry appended in this process gets them from the batch it indexes,
 * which the log validated; an entry loaded from the file gets them the first time LogSegment
 * verifies it against the batch header. A read by offset then finds where its batches start and
 * end in memory, with no header read in the common case, however large the log and whatever of
 * it the page cache holds; an entry nobody verified yet costs one header read, once.
 *
 * Crash story and interleaving: see index-file.ts.
 */
import * as common from '@spool/common';
import { IndexFile, type IndexFileOptions } from './index-file';

export const offsetIndexEntrySizeBytes = 8;

// The append path calls assert for every batch; a named import compiles to a read through the
// CommonJS re-export getter of the package's index module on every call, so it is read once here.
// An assertion function needs a declared type to narrow; `typeof` keeps it the same function.
const assert: typeof common.assert = common.assert;

export interface OffsetPosition {
  readonly offset: bigint;
  readonly position: number;
}

/**
 * An entry in memory: the file's 8 bytes, then the verified batch's last offset minus the entry's
 * offset (u32) and its size in bytes (u32), where a size of 0 (no batch is that small) means not
 * verified yet.
 */
const entryStrideBytes = 16;
const lastOffsetDeltaPosition = 8;
const verifiedSizePosition = 12;

export class OffsetIndex {
  private readonly file: IndexFile;

  constructor(
    path: string,
    readonly baseOffset: bigint,
    maxSizeBytes: number,
    options: IndexFileOptions,
  ) {
    this.file = new IndexFile(
      path,
      offsetIndexEntrySizeBytes,
      maxSizeBytes,
      options,
      entryStrideBytes,
    );
  }

  get path(): string {
    return this.file.path;
  }

  get entryCount(): number {
    return this.file.entryCount;
  }

  get isFull(): boolean {
    return this.file.isFull;
  }

  entryAt(index: number): OffsetPosition {
    const buffer = this.file.buffer;
    const at = index * entryStrideBytes;
    return {
      offset: this.baseOffset + BigInt(buffer.readUInt32BE(at)),
      position: buffer.readUInt32BE(at + 4),
    };
  }

  lastEntry(): OffsetPosition | undefined {
    const count = this.entryCount;
    return count === 0 ? undefined : this.entryAt(count - 1);
  }

  /**
   * Appends an entry for the batch that starts at `position` with base offset `offset`. With
   * `batch`, the batch's last offset and size, known from a batch the caller validated, are
   * remembered as verified.
   */
  append(
    offset: bigint,
    position: number,
    batch?: { readonly lastOffset: bigint; readonly sizeBytes: number },
  ): void {
    // Runs for most appended batches: compares in numbers, without entryAt's bigints.
    const relativeOffset = offset - this.baseOffset;
    assert(relativeOffset >= 0n, 'index offset below the segment base offset');
    assert(relativeOffset <= 0xffffffffn, 'relative offset does not fit in 32 bits');
    assert(position <= 0xffffffff, 'position does not fit in 32 bits');
    const count = this.entryCount;
    const lastIndex = count - 1;
    assert(
      count === 0 || Number(relativeOffset) > this.relativeOffsetAt(lastIndex),
      'index offsets must ascend',
    );
    assert(count === 0 || position > this.positionAt(lastIndex), 'index positions must ascend');
    const lastOffsetDelta = batch === undefined ? 0 : Number(batch.lastOffset - offset);
    // A size of 0 marks the batch as not verified.
    const sizeBytes = batch === undefined ? 0 : batch.sizeBytes;
    assert(lastOffsetDelta >= 0 && lastOffsetDelta <= 0xffffffff, 'last offset delta out of range');
    const at = this.file.reserveEntry();
    const buffer = this.file.buffer;
    buffer.writeUInt32BE(Number(relativeOffset), at);
    buffer.writeUInt32BE(position, at + 4);
    // The memory after the entry may hold what an entry truncated away had: overwrite it.
    buffer.writeUInt32BE(lastOffsetDelta, at + lastOffsetDeltaPosition);
    buffer.writeUInt32BE(sizeBytes, at + verifiedSizePosition);
    this.file.writePendingWhenDue();
  }

  /** The entry's offset relative to the segment's base offset. */
  relativeOffsetAt(index: number): number {
    return this.file.buffer.readUInt32BE(index * entryStrideBytes);
  }

  positionAt(index: number): number {
    return this.file.buffer.readUInt32BE(index * entryStrideBytes + 4);
  }

  /** The verified size of the batch at the entry; 0 while it is not verified. */
  verifiedSizeBytesAt(index: number): number {
    return this.file.buffer.readUInt32BE(index * entryStrideBytes + verifiedSizePosition);
  }

  /** The verified last offset of the batch at the entry minus the entry's offset. */
  verifiedLastOffsetDeltaAt(index: number): number {
    return this.file.buffer.readUInt32BE(index * entryStrideBytes + lastOffsetDeltaPosition);
  }

  /** Remembers what a header read found at the entry: the batch's last offset delta and size. */
  markVerified(index: number, lastOffsetDelta: number, sizeBytes: number): void {
    assert(index >= 0 && index < this.entryCount, 'verified entry out of range');
    assert(lastOffsetDelta >= 0 && lastOffsetDelta <= 0xffffffff, 'last offset delta out of range');
    const at = index * entryStrideBytes;
    this.file.buffer.writeUInt32BE(lastOffsetDelta, at + lastOffsetDeltaPosition);
    this.file.buffer.writeUInt32BE(sizeBytes, at + verifiedSizePosition);
  }

  /** The number of the entry with the largest offset ≤ target, or -1 when there is none. */
  entryAtMostOffset(targetOffset: bigint): number {
    const relativeTarget = targetOffset - this.baseOffset;
    if (relativeTarget < 0n) return -1;
    const target = relativeTarget > 0xffffffffn ? 0xffffffff : Number(relativeTarget);
    return this.largestEntryAtMost(target, 0);
  }

  /** The number of the entry with the largest position ≤ target, or -1 when there is none. */
  entryAtMostPosition(targetPosition: number): number {
    return this.largestEntryAtMost(targetPosition, 4);
  }

  /** The entry with the largest offset ≤ target, or the segment start when there is none. */
  lookup(targetOffset: bigint): OffsetPosition {
    const relativeTarget = targetOffset - this.baseOffset;
    if (relativeTarget < 0n) return { offset: this.baseOffset, position: 0 };
    const target = relativeTarget > 0xffffffffn ? 0xffffffff : Number(relativeTarget);
    const index = this.largestEntryAtMost(target, 0);
    return index < 0 ? { offset: this.baseOffset, position: 0 } : this.entryAt(index);
  }

  /** The entry with the largest position ≤ target, or the segment start when there is none. */
  lookupByPosition(targetPosition: number): OffsetPosition {
    const index = this.largestEntryAtMost(targetPosition, 4);
    return index < 0 ? { offset: this.baseOffset, position: 0 } : this.entryAt(index);
  }

  /** Removes entries for offsets ≥ `offset`. */
  truncateTo(offset: bigint): void {
    const relativeTarget = offset - this.baseOffset;
    if (relativeTarget <= 0n) {
      this.file.reset();
      return;
    }
    const target = relativeTarget > 0xffffffffn ? 0xffffffff : Number(relativeTarget);
    // Entries strictly below target stay: the largest entry ≤ target − 1.
    this.file.truncateToEntries(this.largestEntryAtMost(target - 1, 0) + 1);
  }

  reset(): void {
    this.file.reset();
  }

  /**
   * Kafka's sanity check of an index loaded from disk: ascending offsets and positions, all
   * positions inside the log file. Returns the problem, or undefined when the index looks sound.
   */
  sanityCheck(logSizeBytes: number): string | undefined {
    let previous: OffsetPosition | undefined;
    for (let index = 0; index < this.entryCount; index++) {
      const entry = this.entryAt(index);
      if (entry.position >= logSizeBytes) {
        return `entry ${index} points at position ${entry.position}, past the log's ${logSizeBytes} bytes`;
      }
      if (
        previous !== undefined &&
        (entry.offset <= previous.offset || entry.position <= previous.position)
      ) {
        return `entry ${index} (offset ${entry.offset}, position ${entry.position}) does not ascend`;
      }
      previous = entry;
    }
    return undefined;
  }

  flush(): Promise<void> {
    return this.file.flush();
  }

  flushSync(): void {
    this.file.flushSync();
  }

  /** Writes entries held in memory to the file, without waiting for the disk. */
  writePending(): void {
    this.file.writePending();
  }

  close(): void {
    this.file.close();
  }

  delete(): void {
    this.file.delete();
  }

  /**
   * The last entry whose u32 field at `fieldPosition` is ≤ target, or -1 when there is none.
   *
   * Interpolation search: offsets and positions grow about evenly along an index, so a guess
   * from the values lands near the entry and a few probes find it. A binary search takes
   * log2(entries) probes spread over the whole index, each a likely cache and TLB miss once the
   * index is large: in the benchmark's 4 GiB log (1 GiB segments, 65,536 entries each) they took
   * three times as long as in a 100 MiB log, and a read should cost the same however large the
   * log is. A probe after a guess that did not halve the range bisects, so an unevenly grown
   * index costs at most about twice a binary search.
   *
   *   1. Below the first entry there is none; at or past the last, the last is the answer.
   *   2. Otherwise keep value(low) ≤ target < value(high) and probe strictly between the two
   *      until they are neighbours; low is then the answer.
   *   3. Each probe also reads its neighbour on the far side of the target, which sits in the
   *      same cache line four times out of five: a guess that lands on the answer, as it does
   *      in an evenly grown index, then ends the search, where the bisection that must otherwise
   *      follow it would read a line far away.
   */
  private largestEntryAtMost(target: number, fieldPosition: number): number {
    const buffer = this.file.buffer;
    const valueAt = (index: number): number =>
      buffer.readUInt32BE(index * entryStrideBytes + fieldPosition);
    const count = this.file.entryCount;
    // 1.
    if (count === 0 || valueAt(0) > target) return -1;
    let high = count - 1;
    let highValue = valueAt(high);
    if (highValue <= target) return high;
    // 2.
    let low = 0;
    let lowValue = valueAt(low);
    let bisectNext = false;
    while (high - low > 1) {
      const span = high - low;
      // A damaged index (not yet caught by sanityCheck) may not ascend; bisect through it.
      const bisect: boolean = bisectNext || highValue <= lowValue;
      const guess = bisect
        ? low + (span >>> 1)
        : low + Math.floor(((target - lowValue) / (highValue - lowValue)) * span);
      const middle = Math.min(high - 1, Math.max(low + 1, guess));
      const value = valueAt(middle);
      if (value <= target) {
        low = middle;
        lowValue = value;
        // 3.
        const next = valueAt(middle + 1);
        if (next > target) {
          high = middle + 1;
          highValue = next;
        }
      } else {
        high = middle;
        highValue = value;
        // 3.
        const previous = valueAt(middle - 1);
        if (previous <= target) {
          low = middle - 1;
          lowValue = previous;
        }
      }
      bisectNext = !bisect && high - low > span / 2;
    }
    return low;
  }
}
