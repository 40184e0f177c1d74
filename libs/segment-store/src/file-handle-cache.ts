/**
 * Bounded open files: every descriptor the segment store keeps open (a segment's `.log`,
 * `.index` and `.timeindex`) is a `CachedFile` of one `FileHandleCache`, which opens it on
 * demand and closes the least recently used ones once more than `openFilesMax` are open. Kafka
 * keeps every segment's files open and its operators raise `ulimit -n` with the partition count;
 * here a node with 20,000 partitions holds at most a few thousand descriptors, and the files of
 * a partition that nobody reads or writes hold none.
 *
 * On disk: nothing of its own. Closing a descriptor loses nothing: positional writes went to the
 * kernel already, and fdatasync on a descriptor opened later syncs the same inode's pages.
 *
 * Which calls may interleave (one thread, but asynchronous calls hold a descriptor across turns
 * of the event loop):
 *   1. Synchronous use (readSync, writeSync, fstatSync, ftruncateSync): read `fd` right before
 *      the call. Opening another file is the only thing that closes one, and nothing opens a
 *      file between reading `fd` and a synchronous call on it.
 *   2. Asynchronous use (sendfile on the libuv pool, an fs.read in a copy, fdatasync, the
 *      write-out): `pin()` first, `unpin()` when the call has settled. A pinned file is never
 *      closed by the cache, so a transfer can never find its descriptor closed under it, or,
 *      worse, reused by another open. Pinned files are not evictable: when every open file is
 *      pinned the cache opens one more than its bound rather than fail a read, and the next
 *      unpin closes files until it is back under the bound (pins are bounded elsewhere: per
 *      socket by socketTransfersPendingMax, per log by its one flush at a time).
 *   3. `close()` by the owner (the log closes or deletes the segment) while pinned leaves the
 *      descriptor open until the last unpin, so a reader of a deleted segment keeps reading the
 *      bytes it was promised (an unlinked file stays readable through an open descriptor).
 *   4. A file closed by the cache is opened again by its next use with `reopenFlags`, never the
 *      creating flags: reopening must not truncate what the first open created.
 *
 * Crash story: none of its own; see the owners' files (log-segment.ts, index-file.ts).
 */
import * as fs from 'node:fs';
import * as common from '@spool/common';
import { storageError } from './errors';

// Every append and read reads `fd`; a named import compiles to a getter call on the package's
// index module, so the assertion is read once here.
const assert: typeof common.assert = common.assert;

/** Kafka has no such bound; 4,096 leaves room for sockets under a typical 20,000 hard limit. */
export const logOpenFilesMaxDefault = 4096;

/** The smallest bound accepted: a log's active segment needs three files, a read one more. */
export const logOpenFilesMaxMinimum = 8;

export interface FileHandleCacheStatistics {
  /** Descriptors open now (can pass the bound while every open one is pinned). */
  readonly openFiles: number;
  readonly openFilesMax: number;
  /** Files closed because the bound was reached, since the cache was made. */
  readonly evictionsTotal: number;
  /** Opens, first ones and reopens after an eviction, since the cache was made. */
  readonly opensTotal: number;
}

export class FileHandleCache {
  /** The least and most recently used evictable files: open, unpinned, not closed. */
  private leastRecent: CachedFile | undefined;
  private mostRecent: CachedFile | undefined;
  private openFilesValue = 0;
  private evictionsTotalValue = 0;
  private opensTotalValue = 0;

  constructor(readonly openFilesMax: number = logOpenFilesMaxDefault) {
    assert(Number.isSafeInteger(openFilesMax), 'openFilesMax must be an integer');
    assert(openFilesMax >= logOpenFilesMaxMinimum, 'openFilesMax is below the minimum');
  }

  get statistics(): FileHandleCacheStatistics {
    return {
      openFiles: this.openFilesValue,
      openFilesMax: this.openFilesMax,
      evictionsTotal: this.evictionsTotalValue,
      opensTotal: this.opensTotalValue,
    };
  }

  /**
   * A file to be opened on first use with `reopenFlags` (it exists, or the flags create it).
   * Nothing is opened yet.
   */
  file(path: string, reopenFlags: fs.OpenMode): CachedFile {
    return new CachedFile(this, path, reopenFlags);
  }

  /**
   * Creates (or empties) the file at `path` now, with `createFlags`, and keeps its descriptor
   * as the most recently used; later opens use `reopenFlags`.
   */
  create(path: string, createFlags: fs.OpenMode, reopenFlags: fs.OpenMode): CachedFile {
    const file = new CachedFile(this, path, reopenFlags);
    file.openWith(createFlags);
    return file;
  }

  /** Opens `path` for `file`, closing least recently used files first to stay in bound. */
  openDescriptor(file: CachedFile, flags: fs.OpenMode): number {
    // Room for the one about to open.
    this.evictAbove(this.openFilesMax - 1);
    let fd: number;
    try {
      fd = fs.openSync(file.path, flags);
    } catch (error) {
      throw storageError(`open of ${file.path} failed`, error, file.path);
    }
    this.openFilesValue++;
    this.opensTotalValue++;
    return fd;
  }

  /** The descriptor of `file` was closed (by its owner or by eviction). */
  descriptorClosed(): void {
    this.openFilesValue--;
    assert(this.openFilesValue >= 0, 'more descriptors closed than opened');
  }

  /** Closes least recently used unpinned files while more than `openFilesLimit` are open. */
  evictAbove(openFilesLimit: number): void {
    while (this.openFilesValue > openFilesLimit && this.leastRecent !== undefined) {
      const victim = this.leastRecent;
      this.unlink(victim);
      victim.closeDescriptor();
      this.evictionsTotalValue++;
    }
  }

  /** A use of an evictable file: it becomes the most recently used. */
  touch(file: CachedFile): void {
    if (!file.linked || this.mostRecent === file) return;
    this.unlink(file);
    this.linkMostRecent(file);
  }

  /** Makes `file` the most recently used evictable file. */
  linkMostRecent(file: CachedFile): void {
    assert(!file.linked, 'a cached file linked twice');
    file.linked = true;
    file.moreRecent = undefined;
    file.lessRecent = this.mostRecent;
    if (this.mostRecent !== undefined) this.mostRecent.moreRecent = file;
    this.mostRecent = file;
    this.leastRecent ??= file;
  }

  unlink(file: CachedFile): void {
    assert(file.linked, 'unlink of a cached file that is not linked');
    file.linked = false;
    if (file.moreRecent === undefined) this.mostRecent = file.lessRecent;
    else file.moreRecent.lessRecent = file.lessRecent;
    if (file.lessRecent === undefined) this.leastRecent = file.moreRecent;
    else file.lessRecent.moreRecent = file.moreRecent;
    file.moreRecent = undefined;
    file.lessRecent = undefined;
  }
}

/**
 * The cache of logs opened without one of their own (tests, tools); a storage node passes its
 * own, bounded by its setting, to every log it opens.
 */
export const defaultFileHandleCache = new FileHandleCache();

/**
 * One file of a FileHandleCache: its path, and its descriptor while open. See the header for
 * when `fd` may be read and when `pin` is needed.
 */
export class CachedFile {
  private descriptor = -1;
  private pins = 0;
  private closedByOwner = false;
  /** In the cache's recency list (open, unpinned, not closed by the owner); the list's links. */
  linked = false;
  moreRecent: CachedFile | undefined;
  lessRecent: CachedFile | undefined;

  constructor(
    private readonly cache: FileHandleCache,
    readonly path: string,
    private readonly reopenFlags: fs.OpenMode,
  ) {}

  /** Whether a descriptor is open now; for tests and statistics. */
  get isOpen(): boolean {
    return this.descriptor >= 0;
  }

  get isPinned(): boolean {
    return this.pins > 0;
  }

  /**
   * The descriptor, opened when closed, for a synchronous call made right away (header, point
   * 1). Marks the file as the most recently used.
   */
  get fd(): number {
    assert(!this.closedByOwner || this.pins > 0, 'use of a closed cached file');
    if (this.descriptor < 0) this.openWith(this.reopenFlags);
    else this.cache.touch(this);
    return this.descriptor;
  }

  /** Keeps the descriptor open until the matching unpin (header, point 2); returns it. */
  pin(): number {
    const fd = this.fd;
    if (this.linked) this.cache.unlink(this);
    this.pins++;
    return fd;
  }

  /** fdatasync on the libuv pool with the descriptor pinned meanwhile, so no eviction closes it. */
  async datasync(): Promise<void> {
    const fd = this.pin();
    try {
      await new Promise<void>((resolve, reject) =>
        fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())),
      );
    } finally {
      this.unpin();
    }
  }

  unpin(): void {
    assert(this.pins > 0, 'unpin of a cached file that is not pinned');
    this.pins--;
    if (this.pins > 0) return;
    if (this.closedByOwner) {
      this.closeDescriptor();
      return;
    }
    this.cache.linkMostRecent(this);
    // Files opened past the bound while every open file was pinned are closed now (this one
    // last: it was just used).
    this.cache.evictAbove(this.cache.openFilesMax);
  }

  /**
   * The owner is done with the file: the descriptor closes now, or at the last unpin. Closing
   * twice is a programming error.
   */
  close(): void {
    assert(!this.closedByOwner, 'a cached file closed twice');
    this.closedByOwner = true;
    if (this.pins > 0) return;
    if (this.linked) this.cache.unlink(this);
    if (this.descriptor >= 0) this.closeDescriptor();
  }

  openWith(flags: fs.OpenMode): void {
    assert(this.descriptor < 0, 'open of an open cached file');
    this.descriptor = this.cache.openDescriptor(this, flags);
    this.cache.linkMostRecent(this);
  }

  closeDescriptor(): void {
    assert(this.descriptor >= 0, 'close of a cached file that is not open');
    assert(!this.linked, 'close of a cached file still in the recency list');
    const fd = this.descriptor;
    this.descriptor = -1;
    this.cache.descriptorClosed();
    try {
      fs.closeSync(fd);
    } catch {
      // close(2) fails only for a bad descriptor (a bug the assertions above rule out) or EIO
      // from a file system that reports write errors late; fdatasync reports those first.
    }
  }
}
