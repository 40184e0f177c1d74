/**
 * One process per resource (a local metadata store, a storage node's data directory): a lock
 * file holds the owner's pid as decimal text.
 *
 * Acquiring creates the lock with O_CREAT|O_EXCL, so of two processes starting together exactly
 * one wins. A lock that already exists is held if its pid names a live process (or another open
 * store in this process); a lock whose pid is dead is stale (its owner crashed without removing
 * it) and is taken over: unlinked, then created again exclusively. Like PostgreSQL's
 * postmaster.pid, this leaves one narrow race: two processes that both find the same stale lock
 * at the same moment can both take it over; starting one controller at a time avoids it.
 *
 * The lock is written to a temporary file and hard-linked into place, so its content is complete
 * the moment it exists: an empty or half-written lock never appears.
 */
import * as fs from 'node:fs';

/** Stale-lock takeovers before giving up: each one lost to another process costs one attempt. */
const acquireAttemptsMax = 5;

/** Paths this process holds, so a second open in the same process is refused too. */
const heldInThisProcess = new Set<string>();

/** Builds the error for a held lock: the owner's pid when known, and why. */
export type LockedErrorFactory = (ownerPid: number | undefined, reason: string) => Error;

export class ProcessLock {
  private released = false;

  private constructor(readonly lockPath: string) {}

  /** Takes the lock at `lockPath`, or throws the factory's error naming the owner. */
  static acquire(lockPath: string, locked: LockedErrorFactory): ProcessLock {
    if (heldInThisProcess.has(lockPath)) {
      throw locked(process.pid, 'it is already held by this process');
    }
    for (let attempt = 1; attempt <= acquireAttemptsMax; attempt++) {
      if (tryCreate(lockPath)) {
        heldInThisProcess.add(lockPath);
        return new ProcessLock(lockPath);
      }
      const ownerPid = readOwnerPid(lockPath);
      if (ownerPid !== undefined && ownerPid !== process.pid && isProcessAlive(ownerPid)) {
        throw locked(ownerPid, `process ${ownerPid} holds ${lockPath}`);
      }
      // A dead owner, or this very pid left over from an earlier run that reused it: stale.
      fs.rmSync(lockPath, { force: true });
    }
    throw locked(undefined, `the lock ${lockPath} kept changing hands`);
  }

  /** Removes the lock if it is still ours. */
  release(): void {
    if (this.released) return;
    this.released = true;
    heldInThisProcess.delete(this.lockPath);
    if (readOwnerPid(this.lockPath) === process.pid) fs.rmSync(this.lockPath, { force: true });
  }
}

function tryCreate(lockPath: string): boolean {
  const temporaryPath = `${lockPath}.${process.pid}.tmp`;
  fs.writeFileSync(temporaryPath, `${process.pid}\n`);
  try {
    fs.linkSync(temporaryPath, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    fs.rmSync(temporaryPath, { force: true });
  }
}

function readOwnerPid(lockPath: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(lockPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const match = /^(\d{1,10})\n?$/.exec(text);
  return match === null ? undefined : Number(match[1]);
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
