/**
 * An open .log file shared by the log and its readers. The log holds one reference while the
 * segment is part of it; every slice handed to a reader holds another until the reader releases
 * it. Deleting the segment (retention, truncation) unlinks the path at once, so the name is free
 * and the space is reclaimed by the kernel later, but closes the descriptor only when the last
 * reference is released: a transfer in flight keeps reading the bytes it was promised (on Linux
 * an unlinked file stays readable through an open descriptor), and a descriptor number is never
 * closed while a sendfile or fdatasync may still use it, which could otherwise hit a reused fd.
 */
import * as fs from 'node:fs';
import { assert } from '@spool/common';
import type { SegmentFileHandle } from './file-slice';

export class SegmentFile implements SegmentFileHandle {
  readonly fd: number;
  private references = 1;
  private deleted = false;

  private constructor(
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Opens (creating when asked) for reading and positional writes. */
  static open(path: string, options: { create: boolean }): SegmentFile {
    return new SegmentFile(path, fs.openSync(path, options.create ? 'w+' : 'r+'));
  }

  get isDeleted(): boolean {
    return this.deleted;
  }

  acquire(): this {
    assert(this.references > 0, 'acquire of a closed segment file');
    this.references++;
    return this;
  }

  release(): void {
    assert(this.references > 0, 'release of a closed segment file');
    this.references--;
    if (this.references === 0) fs.closeSync(this.fd);
  }

  /** Unlinks the path now and drops the log's reference; readers keep theirs. */
  delete(): void {
    assert(!this.deleted, 'segment file deleted twice');
    this.deleted = true;
    fs.rmSync(this.path, { force: true });
    this.release();
  }

  /** Drops the log's reference without deleting (the log is closing). */
  close(): void {
    this.release();
  }

  sizeBytes(): number {
    return fs.fstatSync(this.fd).size;
  }

  /** fdatasync, holding a reference so the descriptor cannot close underneath it. */
  async flush(): Promise<void> {
    this.acquire();
    try {
      await new Promise<void>((resolve, reject) =>
        fs.fdatasync(this.fd, (error) => (error ? reject(error) : resolve())),
      );
    } finally {
      this.release();
    }
  }
}
