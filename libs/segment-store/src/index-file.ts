/**
 * The storage under a segment's sparse indexes (Kafka's `AbstractIndex`): fixed-size entries in
 * ascending order, kept in memory and appended to a file.
 *
 * Layout: `<20-digit base offset>.index` or `.timeindex`, a plain array of entries, big-endian,
 * nothing else: no header, no padding, no preallocation. The file's size is always a multiple of
 * the entry size when it was written by us.
 *
 * Crash story: entries reach the file in groups, with one positional write per
 * `pendingEntriesBytesMax` of entries and whenever the segment is flushed (`writePending`, which
 * LogSegment.flush calls before its fdatasync, so the recovery point never passes an entry that
 * is not in the file), closed or its index made durable; they are made durable only when the log
 * is closed cleanly. The file is therefore always a prefix of the entries in memory. After a
 * crash the log never trusts the index of a segment it recovers; it rebuilds it from the log
 * (`reset` then appends). For a segment before the recovery point the index is loaded lazily,
 * checked by `sanityCheck`, and checked again on every lookup by the caller (offset-index.ts); a
 * prefix is a sound index, it only makes lookups past its last entry scan further.
 *
 * In memory, each entry may take more room than in the file (`memoryStrideBytes`): the file's bytes
 * first, then room for facts the owner keeps beside the entry and never writes (offset-index.ts
 * keeps what it verified of the batch at each entry there, so a lookup finds both in one cache
 * line). The file holds only the entries' own bytes, gathered for each write.
 *
 * Interleaving: one writer (the log's append path holds the log); lookups are synchronous, read
 * the memory copy, and see every entry appended before them whether or not it reached the file.
 *
 * Descriptor: the file is a CachedFile of the node's FileHandleCache (file-handle-cache.ts), used
 * only to load, to write pending entries, to cut and to sync: lookups never touch it, so an idle
 * index holds no descriptor, and the cache may close it between any two calls. `flush` pins it
 * across its fdatasync.
 */
import * as fs from 'node:fs';
import * as common from '@spool/common';
import { defaultFileHandleCache, type CachedFile, type FileHandleCache } from './file-handle-cache';

// The append path calls assert for every batch; a named import compiles to a read through the
// CommonJS re-export getter of the package's index module on every call, so it is read once here.
// An assertion function needs a declared type to narrow; `typeof` keeps it the same function.
const assert: typeof common.assert = common.assert;

/**
 * The in-memory copy starts small and doubles, so thousands of idle segments cost little: at 4 KiB
 * two indexes of 20,000 idle partitions took 160 MiB of a node's memory.
 */
const initialCapacityBytes = 256;

/**
 * Entries held back before they are written to the file: one page. A write per entry cost one
 * more system call per appended batch (about 7 % of an append's CPU time with 16 KiB batches);
 * grouped, a log of 16 KiB batches writes its offset index once per 8 MiB.
 */
const pendingEntriesBytesMax = 4096;

/**
 * Where writePending gathers the file bytes of entries that take more room in memory: shared by
 * every index, as each write is synchronous and done before the next. Larger writes (none are, as
 * append writes at pendingEntriesBytesMax) allocate their own.
 */
const gatherScratch = Buffer.allocUnsafe(pendingEntriesBytesMax);

/** Reopens create a missing index (it is a cache of the log) and never truncate. */
const reopenFlags = fs.constants.O_RDWR | fs.constants.O_CREAT;

export interface IndexFileOptions {
  /** A new, empty index (the file is created or emptied now), or one loaded on first use. */
  readonly create: boolean;
  /** Where the descriptor lives; the process's default cache unless the log's is given. */
  readonly files?: FileHandleCache;
}

export class IndexFile {
  private file: CachedFile | undefined;
  /** Entries were written or cut since the last fdatasync: flushing has work to do. */
  private unsynced = false;
  private entries: Buffer;
  private entryCountValue = 0;
  /** Entries in the file; those from here to entryCountValue are only in memory. */
  private fileEntryCount = 0;
  private loaded: boolean;
  /** A write to the file failed; the file is deleted at close and rebuilt on the next open. */
  private fileBroken = false;

  constructor(
    readonly path: string,
    readonly entrySizeBytes: number,
    /** Kafka's segment.index.bytes: the most the file may hold; a full index rolls the segment. */
    readonly maxSizeBytes: number,
    private readonly options: IndexFileOptions,
    /** Bytes an entry takes in memory: its file bytes, then room the owner fills. */
    readonly memoryStrideBytes: number = entrySizeBytes,
  ) {
    assert(maxSizeBytes >= entrySizeBytes, 'an index must hold at least one entry');
    assert(memoryStrideBytes >= entrySizeBytes, 'an entry must fit its memory stride');
    this.entries = Buffer.alloc(0);
    if (options.create) {
      this.file = this.files.create(path, 'w+', reopenFlags);
      this.entries = Buffer.alloc(initialCapacityBytes);
      this.loaded = true;
    } else {
      this.loaded = false;
    }
  }

  private get files(): FileHandleCache {
    return this.options.files ?? defaultFileHandleCache;
  }

  /** The descriptor for a synchronous call made right away (file-handle-cache.ts, point 1). */
  private get fd(): number {
    this.file ??= this.files.file(this.path, reopenFlags);
    return this.file.fd;
  }

  get entryCount(): number {
    this.ensureLoaded();
    return this.entryCountValue;
  }

  get maxEntries(): number {
    return Math.floor(this.maxSizeBytes / this.entrySizeBytes);
  }

  get isFull(): boolean {
    return this.entryCount >= this.maxEntries;
  }

  /**
   * The entries in memory, entry i at i × memoryStrideBytes; valid up to entryCount entries. The
   * owner may write only past each entry's first entrySizeBytes.
   */
  get buffer(): Buffer {
    this.ensureLoaded();
    return this.entries;
  }

  /** Reads the file into memory on first use. A file that is not whole entries is cut to them. */
  private ensureLoaded(): void {
    if (this.loaded) return;
    this.loaded = true;
    const fileSizeBytes = fs.fstatSync(this.fd).size;
    const usableBytes = Math.min(
      fileSizeBytes - (fileSizeBytes % this.entrySizeBytes),
      this.maxSizeBytes,
    );
    const fileBytes = Buffer.alloc(usableBytes);
    let readBytes = 0;
    while (readBytes < usableBytes) {
      const count = fs.readSync(this.fd, fileBytes, readBytes, usableBytes - readBytes, readBytes);
      if (count === 0) break;
      readBytes += count;
    }
    this.entryCountValue = Math.floor(readBytes / this.entrySizeBytes);
    if (this.memoryStrideBytes === this.entrySizeBytes) {
      this.entries = Buffer.alloc(Math.max(initialCapacityBytes, usableBytes));
      fileBytes.copy(this.entries, 0, 0, readBytes);
    } else {
      this.entries = Buffer.alloc(
        Math.max(initialCapacityBytes, this.entryCountValue * this.memoryStrideBytes),
      );
      // Byte by byte: a copy call per entry costs more than the bytes (and a segment's index
      // can hold a million entries).
      const entries = this.entries;
      let from = 0;
      for (let index = 0; index < this.entryCountValue; index++) {
        const to = index * this.memoryStrideBytes;
        for (let offset = 0; offset < this.entrySizeBytes; offset++) {
          entries[to + offset] = fileBytes[from++]!;
        }
      }
    }
    this.fileEntryCount = this.entryCountValue;
    if (fileSizeBytes !== this.entryCountValue * this.entrySizeBytes) {
      fs.ftruncateSync(this.fd, this.entryCountValue * this.entrySizeBytes);
      this.unsynced = true;
    }
  }

  append(entry: Buffer): void {
    assert(entry.length === this.entrySizeBytes, 'index entry has the wrong size');
    entry.copy(this.entries, this.reserveEntry());
    this.writePendingWhenDue();
  }

  /**
   * Adds an entry at the end and returns where it starts in `buffer`, for the caller to fill
   * before anything else uses the index, then to call writePendingWhenDue.
   */
  reserveEntry(): number {
    this.ensureLoaded();
    assert(!this.isFull, 'append to a full index');
    const stride = this.memoryStrideBytes;
    const position = this.entryCountValue * stride;
    if (position + stride > this.entries.length) {
      const grown = Buffer.alloc(Math.min(this.entries.length * 2, (this.maxEntries + 1) * stride));
      this.entries.copy(grown, 0, 0, position);
      this.entries = grown;
    }
    this.entryCountValue++;
    return position;
  }

  /** Writes the pending entries once they fill pendingEntriesBytesMax. */
  writePendingWhenDue(): void {
    if (
      (this.entryCountValue - this.fileEntryCount) * this.entrySizeBytes >=
      pendingEntriesBytesMax
    ) {
      this.writePending();
    }
  }

  /** Writes the entries that are only in memory to the file, in one positional write. */
  writePending(): void {
    if (!this.loaded || this.fileEntryCount === this.entryCountValue) return;
    const firstEntry = this.fileEntryCount;
    const entryCount = this.entryCountValue - firstEntry;
    this.fileEntryCount = this.entryCountValue;
    if (this.fileBroken) return;
    const filePosition = firstEntry * this.entrySizeBytes;
    let bytes: Buffer;
    if (this.memoryStrideBytes === this.entrySizeBytes) {
      bytes = this.entries.subarray(filePosition, filePosition + entryCount * this.entrySizeBytes);
    } else {
      const sizeBytes = entryCount * this.entrySizeBytes;
      bytes =
        sizeBytes <= gatherScratch.length
          ? gatherScratch.subarray(0, sizeBytes)
          : Buffer.allocUnsafe(sizeBytes);
      const entries = this.entries;
      let to = 0;
      for (let index = 0; index < entryCount; index++) {
        const from = (firstEntry + index) * this.memoryStrideBytes;
        for (let offset = 0; offset < this.entrySizeBytes; offset++) {
          bytes[to++] = entries[from + offset]!;
        }
      }
    }
    try {
      this.unsynced = true;
      let written = 0;
      while (written < bytes.length) {
        written += fs.writeSync(
          this.fd,
          bytes,
          written,
          bytes.length - written,
          filePosition + written,
        );
      }
    } catch {
      // The index is a cache of the log: a failed write (a full disk) must not fail the append
      // whose data is already written. The memory copy stays right; the file is removed at close
      // so that the next open rebuilds it instead of trusting a file with a hole.
      this.fileBroken = true;
    }
  }

  /** Keeps the first `entryCount` entries. */
  truncateToEntries(entryCount: number): void {
    this.ensureLoaded();
    if (entryCount >= this.entryCountValue) return;
    this.entryCountValue = entryCount;
    // Entries still only in memory are simply dropped; the file is cut only below what it holds.
    if (entryCount >= this.fileEntryCount) return;
    this.fileEntryCount = entryCount;
    if (this.fileBroken) return;
    fs.ftruncateSync(this.fd, entryCount * this.entrySizeBytes);
    this.unsynced = true;
  }

  /** Drops every entry, for a rebuild. */
  reset(): void {
    this.truncateToEntries(0);
  }

  async flush(): Promise<void> {
    this.writePending();
    if (!this.unsynced || this.fileBroken || this.file === undefined) return;
    // Cleared first: a write while the sync runs marks it again for the next flush.
    this.unsynced = false;
    try {
      await this.file.datasync();
    } catch (error) {
      this.unsynced = true;
      throw error;
    }
  }

  flushSync(): void {
    this.writePending();
    if (!this.unsynced || this.fileBroken || this.file === undefined) return;
    this.unsynced = false;
    fs.fdatasyncSync(this.fd);
  }

  close(): void {
    this.writePending();
    this.file?.close();
    this.file = undefined;
    if (this.fileBroken) fs.rmSync(this.path, { force: true });
    this.fileBroken = false;
    this.unsynced = false;
    this.loaded = false;
    this.entries = Buffer.alloc(0);
    this.entryCountValue = 0;
    this.fileEntryCount = 0;
  }

  /** Closes and removes the file. */
  delete(): void {
    // Entries about to be deleted need not be written first.
    this.fileEntryCount = this.entryCountValue;
    this.close();
    fs.rmSync(this.path, { force: true });
  }
}
