/**
 * One process per local store file: `<path>.lock` (see ProcessLock in @spool/common for how it
 * is taken, and how a stale lock is taken over).
 */
import { ProcessLock } from '@spool/common';
import { MetadataStoreError } from './errors';

export class LocalStoreLock {
  private constructor(private readonly lock: ProcessLock) {}

  /** Takes the lock for the store file, or throws METADATA_STORE_LOCKED naming the owner. */
  static acquire(storePath: string): LocalStoreLock {
    return new LocalStoreLock(
      ProcessLock.acquire(`${storePath}.lock`, (ownerPid, reason) => {
        const owner = ownerPid === undefined ? '' : ` (owner pid ${ownerPid})`;
        return new MetadataStoreError(
          'METADATA_STORE_LOCKED',
          `cannot open the local metadata store ${storePath}${owner}: ${reason}`,
        );
      }),
    );
  }

  release(): void {
    this.lock.release();
  }
}
