/**
 * A segment's sparse time index (Kafka's `TimeIndex`): maps timestamps to offsets so that
 * `offsetForTimestamp` and time-based retention need not read the log. Entries are written with
 * the offset index, each holding the largest timestamp seen so far in the segment and the offset
 * of the record batch that carried it, and only when that timestamp grew.
 *
 * Layout of `<20-digit base offset>.timeindex`, 12 bytes an entry, ascending in both fields:
 *
 *   timestamp       i64 BE   milliseconds since the epoch
 *   relativeOffset  u32 BE   offset − the segment's base offset
 *
 * Crash story and interleaving: see index-file.ts.
 */
import * as common from '@spool/common';
import { IndexFile, type IndexFileOptions } from './index-file';
import { readInt64AsNumber, writeInt64FromNumber } from './int64-fields';

export const timeIndexEntrySizeBytes = 12;

// The append path may call assert for every batch; a named import compiles to a read through the
// CommonJS re-export getter of the package's index module on every call, so it is read once here.
// An assertion function needs a declared type to narrow; `typeof` keeps it the same function.
const assert: typeof common.assert = common.assert;

export interface TimestampOffset {
  readonly timestampMs: number;
  readonly offset: bigint;
}

export class TimeIndex {
  private readonly file: IndexFile;
  private readonly entry = Buffer.alloc(timeIndexEntrySizeBytes);

  constructor(
    path: string,
    readonly baseOffset: bigint,
    maxSizeBytes: number,
    options: IndexFileOptions,
  ) {
    this.file = new IndexFile(path, timeIndexEntrySizeBytes, maxSizeBytes, options);
  }

  get path(): string {
    return this.file.path;
  }

  get entryCount(): number {
    return this.file.entryCount;
  }

  /** One slot stays free for the entry a segment gets when it stops being active. */
  get isFull(): boolean {
    return this.file.entryCount >= this.file.maxEntries - 1;
  }

  entryAt(index: number): TimestampOffset {
    const buffer = this.file.buffer;
    const at = index * timeIndexEntrySizeBytes;
    return {
      timestampMs: readInt64AsNumber(buffer, at),
      offset: this.baseOffset + BigInt(buffer.readUInt32BE(at + 8)),
    };
  }

  lastEntry(): TimestampOffset | undefined {
    const count = this.entryCount;
    return count === 0 ? undefined : this.entryAt(count - 1);
  }

  /**
   * Appends when the timestamp grew past the last entry's; returns whether it did. `final` is the
   * entry written when the segment stops being active, which may use the slot kept free for it.
   */
  maybeAppend(timestampMs: number, offset: bigint, options: { final?: boolean } = {}): boolean {
    // Runs for most appended batches, so it compares with the last entry as stored, in numbers,
    // without the bigints of entryAt. A relative offset past 2^53 may round as a number, but it
    // stays past 2^32 and fails the range check all the same.
    const count = this.entryCount;
    const lastAt = (count - 1) * timeIndexEntrySizeBytes;
    const buffer = this.file.buffer;
    if (count > 0 && timestampMs <= readInt64AsNumber(buffer, lastAt)) return false;
    if (options.final === true ? this.file.isFull : this.isFull) return false;
    const relativeOffset = Number(offset - this.baseOffset);
    assert(
      count === 0 || relativeOffset >= buffer.readUInt32BE(lastAt + 8),
      'time index offsets must not go back',
    );
    assert(relativeOffset >= 0 && relativeOffset <= 0xffffffff, 'relative offset out of range');
    writeInt64FromNumber(this.entry, timestampMs, 0);
    this.entry.writeUInt32BE(relativeOffset, 8);
    this.file.append(this.entry);
    return true;
  }

  /** The entry with the largest timestamp ≤ target, or the segment start when there is none. */
  lookup(targetTimestampMs: number): TimestampOffset {
    let low = 0;
    let high = this.entryCount - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (this.entryAt(middle).timestampMs <= targetTimestampMs) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found < 0 ? { timestampMs: -1, offset: this.baseOffset } : this.entryAt(found);
  }

  /** Removes entries for offsets ≥ `offset`. */
  truncateTo(offset: bigint): void {
    let keep = this.entryCount;
    while (keep > 0 && this.entryAt(keep - 1).offset >= offset) keep--;
    this.file.truncateToEntries(keep);
  }

  reset(): void {
    this.file.reset();
  }

  /** Ascending timestamps and offsets; returns the problem, or undefined when sound. */
  sanityCheck(): string | undefined {
    let previous: TimestampOffset | undefined;
    for (let index = 0; index < this.entryCount; index++) {
      const entry = this.entryAt(index);
      if (
        previous !== undefined &&
        (entry.timestampMs <= previous.timestampMs || entry.offset < previous.offset)
      ) {
        return `entry ${index} (timestamp ${entry.timestampMs}, offset ${entry.offset}) does not ascend`;
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
}
