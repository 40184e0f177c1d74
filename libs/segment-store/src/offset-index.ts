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
 * Crash story and interleaving: see index-file.ts.
 */
import { assert } from '@spool/common';
import { IndexFile } from './index-file';

export const offsetIndexEntrySizeBytes = 8;

export interface OffsetPosition {
  readonly offset: bigint;
  readonly position: number;
}

export class OffsetIndex {
  private readonly file: IndexFile;
  private readonly entry = Buffer.alloc(offsetIndexEntrySizeBytes);

  constructor(
    path: string,
    readonly baseOffset: bigint,
    maxSizeBytes: number,
    options: { create: boolean },
  ) {
    this.file = new IndexFile(path, offsetIndexEntrySizeBytes, maxSizeBytes, options);
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
    const at = index * offsetIndexEntrySizeBytes;
    return {
      offset: this.baseOffset + BigInt(buffer.readUInt32BE(at)),
      position: buffer.readUInt32BE(at + 4),
    };
  }

  lastEntry(): OffsetPosition | undefined {
    const count = this.entryCount;
    return count === 0 ? undefined : this.entryAt(count - 1);
  }

  append(offset: bigint, position: number): void {
    const last = this.lastEntry();
    assert(offset >= this.baseOffset, 'index offset below the segment base offset');
    assert(last === undefined || offset > last.offset, 'index offsets must ascend');
    assert(last === undefined || position > last.position, 'index positions must ascend');
    const relativeOffset = offset - this.baseOffset;
    assert(relativeOffset <= 0xffffffffn, 'relative offset does not fit in 32 bits');
    assert(position <= 0xffffffff, 'position does not fit in 32 bits');
    this.entry.writeUInt32BE(Number(relativeOffset), 0);
    this.entry.writeUInt32BE(position, 4);
    this.file.append(this.entry);
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

  close(): void {
    this.file.close();
  }

  delete(): void {
    this.file.delete();
  }

  /** Binary search over the u32 field at `fieldPosition` of each entry. */
  private largestEntryAtMost(target: number, fieldPosition: number): number {
    const buffer = this.file.buffer;
    let low = 0;
    let high = this.file.entryCount - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const value = buffer.readUInt32BE(middle * offsetIndexEntrySizeBytes + fieldPosition);
      if (value <= target) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found;
  }
}
