/**
 * How the log cleaner replaces a group of closed segments with the one segment it cleaned them
 * into (Kafka's `LocalLog.replaceSegments` and the loader's swap recovery), so that a crash at any
 * step leaves either the old segments or the new one, never a mix and never a loss.
 *
 * Files in the partition folder, for a group of sealed segments with base offsets b1 < ... < bn
 * cleaned into one segment with base offset b1 (names as in log-segment.ts):
 *
 *   <b1>.log.cleaned, .index.cleaned, .timeindex.cleaned   the cleaned segment, being written
 *   <bi>.log.deleted, .index.deleted, .timeindex.deleted   the group's old files, set aside
 *   <b1>.log.swap, .index.swap, .timeindex.swap            the cleaned segment, committed
 *
 * The steps, each a file operation, in this order:
 *
 *   1. The cleaner writes the `.cleaned` files, fdatasyncs them and fsyncs the folder.
 *   2. Every file of every old segment is renamed to `.deleted`, b1's first; the folder is
 *      fsynced. (Asynchronously: the log keeps reading the old segments through descriptors
 *      pinned open, and appends go to the active segment, which is never in a group.)
 *   3. The `.cleaned` files are renamed to `.swap`, the indexes first and the `.log` last. The
 *      `.log.swap` file existing is the commit point.
 *   5. The `.swap` files are renamed to the log's names, the indexes first and the `.log` last,
 *      and the log replaces the group with the new segment in memory. Steps 3 and 5 are
 *      synchronous, a few renames with no fsync between them: a rename of a file a rename made
 *      cannot reach the disk before it.
 *   4. The folder is fsynced, the `.deleted` files are removed, bn's first and b1's `.log` last
 *      (case b below tells a finished swap by it), and the folder fsynced again.
 *
 * Crash story (recoverInterruptedSwap, run by the loader before it lists segments):
 *   a. A `.log.swap` file: the swap committed (a crash in steps 3 or 5 after the commit point).
 *      `.deleted` and `.cleaned` files are removed and every `.swap` file renamed to its name:
 *      the new segment. The `.log` is renamed last here too, so a crash during recovery finds
 *      the same case again.
 *   b. No `.log.swap`, but `<b1>.log` beside `<b1>.log.deleted` (b1 the lowest base offset set
 *      aside): step 5 finished, as only step 5 gives b1's name back after step 2 took it, and
 *      step 2 was durable before step 3 began. The `.deleted` files are removed: the new segment.
 *   c. Otherwise the swap had not committed (a crash in steps 1 to 3 before the commit point):
 *      `.cleaned` and `.swap` files are removed and every `.deleted` file renamed back: the old
 *      segments, as they were.
 * Power loss: step 1's fsyncs make the cleaned data and names durable before anything else moves;
 * step 2's fsync makes the old files' new names durable before the commit; step 4 removes old
 * data only after an fsync made the commit and step 5 durable. Only one swap runs in a folder at
 * a time: the cleaner cleans one log at a time and finishes a group's swap before the next.
 *
 * Interleaving: while step 2 runs, the log may change (an append, a truncation, a retention
 * pass); before step 3 the log checks that the group is still its own, unchanged, and otherwise
 * undoes step 2 (restoreSetAside) and keeps its old segments. Readers holding slices of the old
 * segments keep reading their descriptors (on Linux a renamed or unlinked file stays readable).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fsyncDirectory, fsyncDirectoryAsync } from '../checkpoint-file';
import { segmentFileName } from '../log-segment';

export const cleanedFileSuffix = '.cleaned';
export const deletedFileSuffix = '.deleted';
export const swapFileSuffix = '.swap';

const segmentFileKinds = ['.index', '.timeindex', '.log'] as const;

/**
 * The points the crash test stops at, in the order they are reached: after each step, and inside
 * steps 2 to 5 after their first file operation (x.1).
 */
export const swapCrashSteps: readonly number[] = [1, 2.1, 2, 3.1, 3, 5.1, 5, 4.1, 4];

/** The test hook's environment variable: crash-test writers stop the process after a step. */
export const swapCrashStepEnvironmentVariable = 'SPOOL_TEST_CLEANER_SWAP_CRASH_STEP';

/** What recoverInterruptedSwap found and did in one folder. */
export interface SwapRecovery {
  /** `completed` (cases a and b), `discarded` (case c with leftovers), or `none`. */
  readonly outcome: 'completed' | 'discarded' | 'none';
  /** One line per file acted on, for the recovery report's problems. */
  readonly actions: readonly string[];
}

/** Step 2 for the old segments' base offsets (ascending), after step 1 is done. */
export async function setAsideOldSegments(
  directory: string,
  oldBaseOffsets: readonly bigint[],
): Promise<void> {
  maybeCrash(1);
  for (const baseOffset of oldBaseOffsets) {
    for (const kind of segmentFileKinds) {
      await renameIfPresent(directory, fileName(baseOffset, kind), '', deletedFileSuffix);
    }
    maybeCrash(2.1);
  }
  await fsyncDirectoryAsync(directory);
  maybeCrash(2);
}

/** Undoes step 2: `restore` renamed back, `remove` (segments the log dropped meanwhile) removed. */
export function restoreSetAside(
  directory: string,
  restore: readonly bigint[],
  remove: readonly bigint[],
): void {
  for (const baseOffset of restore) {
    for (const kind of segmentFileKinds) {
      const name = fileName(baseOffset, kind);
      try {
        fs.renameSync(path.join(directory, name + deletedFileSuffix), path.join(directory, name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
  for (const baseOffset of remove) {
    for (const kind of segmentFileKinds) {
      fs.rmSync(path.join(directory, fileName(baseOffset, kind) + deletedFileSuffix), {
        force: true,
      });
    }
  }
}

/** Steps 3 and 5: synchronous renames, the `.log.swap` the commit point. */
export function installCleanedSegment(directory: string, cleanedBaseOffset: bigint): void {
  for (const kind of segmentFileKinds) {
    renameSyncIfPresent(
      directory,
      fileName(cleanedBaseOffset, kind),
      cleanedFileSuffix,
      swapFileSuffix,
    );
    if (kind === '.index') maybeCrash(3.1);
  }
  maybeCrash(3);
  for (const kind of segmentFileKinds) {
    renameSyncIfPresent(directory, fileName(cleanedBaseOffset, kind), swapFileSuffix, '');
    if (kind === '.index') maybeCrash(5.1);
  }
  maybeCrash(5);
}

/** Step 4: the set-aside files removed once the commit and step 5 are durable. */
export async function removeSetAside(
  directory: string,
  oldBaseOffsets: readonly bigint[],
): Promise<void> {
  await fsyncDirectoryAsync(directory);
  for (const baseOffset of [...oldBaseOffsets].reverse()) {
    for (const kind of segmentFileKinds) {
      await fs.promises.rm(path.join(directory, fileName(baseOffset, kind) + deletedFileSuffix), {
        force: true,
      });
    }
    maybeCrash(4.1);
  }
  await fsyncDirectoryAsync(directory);
  maybeCrash(4);
}

/**
 * The loader's half of the crash story: finishes a committed swap (cases a and b) or puts the
 * old segments back (case c). Runs before the folder's segments are listed.
 */
export function recoverInterruptedSwap(directory: string): SwapRecovery {
  const names = fs.readdirSync(directory);
  const leftover = (suffix: string): string[] =>
    names.filter((name) => /^\d{20}\.(log|index|timeindex)\./.test(name) && name.endsWith(suffix));
  const cleaned = leftover(cleanedFileSuffix);
  const deleted = leftover(deletedFileSuffix);
  const swap = leftover(swapFileSuffix);
  if (cleaned.length + deleted.length + swap.length === 0) return { outcome: 'none', actions: [] };
  const actions: string[] = [];
  const remove = (name: string): void => {
    fs.rmSync(path.join(directory, name), { force: true });
    actions.push(`removed ${name}`);
  };
  const rename = (name: string, suffix: string): void => {
    fs.renameSync(path.join(directory, name), path.join(directory, name.slice(0, -suffix.length)));
    actions.push(`renamed ${name} to ${name.slice(0, -suffix.length)}`);
  };
  const deletedLogs = deleted.filter((name) => name.endsWith(`.log${deletedFileSuffix}`)).sort();
  const firstSetAside = deletedLogs[0]?.slice(0, -deletedFileSuffix.length);
  let outcome: SwapRecovery['outcome'];
  if (swap.some((name) => name.endsWith(`.log${swapFileSuffix}`))) {
    // a.
    for (const name of [...deleted, ...cleaned]) remove(name);
    fsyncDirectory(directory);
    const logLast = [...swap].sort(
      (left, right) => Number(left.includes('.log.')) - Number(right.includes('.log.')),
    );
    for (const name of logLast) rename(name, swapFileSuffix);
    outcome = 'completed';
  } else if (firstSetAside !== undefined && names.includes(firstSetAside)) {
    // b.
    for (const name of [...deleted, ...cleaned, ...swap]) remove(name);
    outcome = 'completed';
  } else {
    // c.
    for (const name of [...cleaned, ...swap]) remove(name);
    fsyncDirectory(directory);
    for (const name of deleted) rename(name, deletedFileSuffix);
    outcome = 'discarded';
  }
  fsyncDirectory(directory);
  return { outcome, actions };
}

/** Removes the `.cleaned` files of an abandoned cleaning (the log changed under it). */
export function removeCleanedFiles(directory: string, cleanedBaseOffset: bigint): void {
  for (const kind of segmentFileKinds) {
    fs.rmSync(path.join(directory, fileName(cleanedBaseOffset, kind) + cleanedFileSuffix), {
      force: true,
    });
  }
}

function fileName(baseOffset: bigint, kind: (typeof segmentFileKinds)[number]): string {
  return segmentFileName(baseOffset, kind);
}

/** Renames `<name><from>` to `<name><to>`; an index may be absent (it is a cache of the log). */
async function renameIfPresent(
  directory: string,
  name: string,
  from: string,
  to: string,
): Promise<void> {
  try {
    await fs.promises.rename(path.join(directory, name + from), path.join(directory, name + to));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || name.endsWith('.log')) throw error;
  }
}

function renameSyncIfPresent(directory: string, name: string, from: string, to: string): void {
  try {
    fs.renameSync(path.join(directory, name + from), path.join(directory, name + to));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || name.endsWith('.log')) throw error;
  }
}

/**
 * The crash test's hook (test/compaction-crash.spec.ts): with the variable set to a step, the
 * process dies by SIGKILL right after that step's file operations, as a power cut would leave
 * them. Read at each point so a test process can set it before its first clean.
 */
function maybeCrash(step: number): void {
  const value = process.env[swapCrashStepEnvironmentVariable];
  if (value !== undefined && value !== '' && Number(value) === step) {
    process.kill(process.pid, 'SIGKILL');
  }
}
