/**
 * A segment's .log file, shared by the log and its readers, with its descriptor in the node's
 * FileHandleCache (file-handle-cache.ts): open while in use, closed by the cache when it is the
 * least recently used of too many, opened again by the next use.
 *
 * The log owns the file while the segment is part of it; every slice handed to a reader pins the
 * descriptor until the reader releases it (`acquire`/`release`), and so do the log's own
 * asynchronous calls (fdatasync, the write-out). Deleting the segment (retention, truncation)
 * unlinks the path at once, so the name is free and the space is reclaimed by the kernel later,
 * but closes the descriptor only when the last pin is released: a transfer in flight keeps
 * reading the bytes it was promised (on Linux an unlinked file stays readable through an open
 * descriptor), and a descriptor number is never closed while a sendfile or fdatasync may still
 * use it, which could otherwise hit a reused fd.
 *
 * `fd` may be read for a synchronous call right away (it opens the file when the cache closed
 * it); anything asynchronous pins first.
 */
import * as fs from 'node:fs';
import type { CachedFile, FileHandleCache } from './file-handle-cache';
import type { SegmentFileHandle } from './file-slice';

export class SegmentFile implements SegmentFileHandle {
  private deleted = false;
  /** Bytes were written or cut since the last fdatasync started: `flush` has work to do. */
  private unsynced = false;

  private constructor(private readonly file: CachedFile) {}

  /** Creates (or empties) the file now; reopens after an eviction never truncate. */
  static create(files: FileHandleCache, path: string): SegmentFile {
    return new SegmentFile(files.create(path, 'w+', 'r+'));
  }

  /** An existing file, opened on first use. */
  static open(files: FileHandleCache, path: string): SegmentFile {
    return new SegmentFile(files.file(path, 'r+'));
  }

  get path(): string {
    return this.file.path;
  }

  /** The descriptor, for a synchronous call made right away; see the header. */
  get fd(): number {
    return this.file.fd;
  }

  get isDeleted(): boolean {
    return this.deleted;
  }

  /** Pins the descriptor open for a reader or an asynchronous call, until `release`. */
  acquire(): this {
    this.file.pin();
    return this;
  }

  release(): void {
    this.file.unpin();
  }

  /** Unlinks the path now and lets go of the log's hold; readers keep their pins. */
  delete(): void {
    this.deleted = true;
    fs.rmSync(this.path, { force: true });
    this.file.close();
  }

  /** Lets go of the log's hold without deleting (the log is closing). */
  close(): void {
    this.file.close();
  }

  sizeBytes(): number {
    return fs.fstatSync(this.fd).size;
  }

  /** The log wrote or cut bytes (or recovery trusted bytes a crash left): flush must sync. */
  markUnsynced(): void {
    this.unsynced = true;
  }

  /** fdatasync when anything changed since the last one, pinning the descriptor meanwhile. */
  async flush(): Promise<void> {
    if (!this.unsynced) return;
    // Cleared first: a write while the sync runs marks it again for the next flush.
    this.unsynced = false;
    try {
      await this.file.datasync();
    } catch (error) {
      this.unsynced = true;
      throw error;
    }
  }

  /** fdatasync now, whatever changed: a truncation must be durable before it is reported. */
  flushSync(): void {
    this.unsynced = false;
    fs.fdatasyncSync(this.fd);
  }
}
