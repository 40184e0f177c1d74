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
 *   1. The cleaner writes the `.cleaned` files and fdatasyncs them (segment-cleaner.ts).
 *   2. Every file of every old segment is renamed to `.deleted`; the folder is fsynced.
 *   3. The `.cleaned` files are renamed to `.swap`, the indexes first and the `.log` last; the
 *      folder is fsynced. The `.log.swap` file existing is the commit point.
 *   4. The `.deleted` files are removed; the folder is fsynced.
 *   5. The `.swap` files are renamed to the log's names, the indexes first and the `.log` last;
 *      the folder is fsynced.
 *
 * Crash story (recoverInterruptedSwap, run by the loader before it lists segments):
 *   a. No `.log.swap` file: the swap had not committed (a crash in steps 1 to 3), or had finished
 *      (after step 5's last rename, when nothing of it is left). `.cleaned` and `.swap` files are
 *      removed and every `.deleted` file is renamed back: the old segments, as they were. Their
 *      names are free, since step 5 is the only one that takes them and it runs after step 4.
 *   b. A `.log.swap` file: the swap committed (a crash in steps 3 to 5 after the commit point).
 *      `.deleted` and `.cleaned` files are removed and every `.swap` file renamed to its name:
 *      the new segment. The `.log` is renamed last here too, so a crash during recovery finds
 *      the same case again.
 * Every file of a group is in exactly one of its states at any moment, so case (a) restores all
 * of the old group and case (b) installs all of the new segment. Only one swap runs in a folder
 * at a time: the cleaner cleans one log at a time and finishes a group's swap before the next.
 *
 * Interleaving: steps 2 to 5 run synchronously, together with the log's replacing the segments
 * in memory (Log.replaceCleanedSegments), so no append, read or truncation of the log sees them
 * half done. Readers holding slices of the old segments keep reading their descriptors (pinned
 * in the FileHandleCache; on Linux a renamed or unlinked file stays readable through them).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fsyncDirectory } from '../checkpoint-file';
import { segmentFileName } from '../log-segment';

export const cleanedFileSuffix = '.cleaned';
export const deletedFileSuffix = '.deleted';
export const swapFileSuffix = '.swap';

const segmentFileKinds = ['.index', '.timeindex', '.log'] as const;

/**
 * The points the crash test stops at: after each step, and inside steps 2 to 5 after their first
 * file operation (x.1).
 */
export const swapCrashSteps: readonly number[] = [1, 2.1, 2, 3.1, 3, 4.1, 4, 5.1, 5];

/** The test hook's environment variable: crash-test writers stop the process after a step. */
export const swapCrashStepEnvironmentVariable = 'SPOOL_TEST_CLEANER_SWAP_CRASH_STEP';

/** What recoverInterruptedSwap found and did in one folder. */
export interface SwapRecovery {
  /** `completed` (case b), `discarded` (case a with leftovers), or `none` (nothing to do). */
  readonly outcome: 'completed' | 'discarded' | 'none';
  /** One line per file acted on, for the recovery report's problems. */
  readonly actions: readonly string[];
}

/**
 * Steps 2 to 5 for the old segments' base offsets `oldBaseOffsets` (ascending) and the cleaned
 * segment written under `cleanedBaseOffset` with `.cleaned` files (step 1, done by the caller).
 * Synchronous: see the header's interleaving.
 */
export function swapCleanedSegment(
  directory: string,
  oldBaseOffsets: readonly bigint[],
  cleanedBaseOffset: bigint,
): void {
  const crashStep = crashStepForTests();
  maybeCrash(crashStep, 1);
  // 2.
  for (const baseOffset of oldBaseOffsets) {
    for (const kind of segmentFileKinds) {
      renameIfPresent(directory, fileName(baseOffset, kind), '', deletedFileSuffix);
    }
    maybeCrash(crashStep, 2.1);
  }
  fsyncDirectory(directory);
  maybeCrash(crashStep, 2);
  // 3.
  for (const kind of segmentFileKinds) {
    const name = fileName(cleanedBaseOffset, kind);
    renameIfPresent(directory, name, cleanedFileSuffix, swapFileSuffix);
    if (kind === '.index') maybeCrash(crashStep, 3.1);
  }
  fsyncDirectory(directory);
  maybeCrash(crashStep, 3);
  // 4.
  for (const baseOffset of oldBaseOffsets) {
    for (const kind of segmentFileKinds) {
      fs.rmSync(path.join(directory, fileName(baseOffset, kind) + deletedFileSuffix), {
        force: true,
      });
    }
    maybeCrash(crashStep, 4.1);
  }
  fsyncDirectory(directory);
  maybeCrash(crashStep, 4);
  // 5.
  for (const kind of segmentFileKinds) {
    renameIfPresent(directory, fileName(cleanedBaseOffset, kind), swapFileSuffix, '');
    if (kind === '.index') maybeCrash(crashStep, 5.1);
  }
  fsyncDirectory(directory);
  maybeCrash(crashStep, 5);
}

/**
 * The loader's half of the crash story: finishes a committed swap (case b) or puts the old
 * segments back (case a). Runs before the folder's segments are listed.
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
  const restore = (name: string, suffix: string): void => {
    fs.renameSync(path.join(directory, name), path.join(directory, name.slice(0, -suffix.length)));
    actions.push(`renamed ${name} to ${name.slice(0, -suffix.length)}`);
  };
  const committed = swap.some((name) => name.endsWith(`.log${swapFileSuffix}`));
  if (committed) {
    // b.
    for (const name of [...deleted, ...cleaned]) remove(name);
    fsyncDirectory(directory);
    const logLast = [...swap].sort(
      (left, right) => Number(left.includes('.log.')) - Number(right.includes('.log.')),
    );
    for (const name of logLast) restore(name, swapFileSuffix);
  } else {
    // a.
    for (const name of [...cleaned, ...swap]) remove(name);
    fsyncDirectory(directory);
    for (const name of deleted) restore(name, deletedFileSuffix);
  }
  fsyncDirectory(directory);
  return { outcome: committed ? 'completed' : 'discarded', actions };
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
function renameIfPresent(directory: string, name: string, from: string, to: string): void {
  try {
    fs.renameSync(path.join(directory, name + from), path.join(directory, name + to));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || name.endsWith('.log')) throw error;
  }
}

/**
 * The crash test's hook (test/compaction-crash.spec.ts): with the variable set to a step, the
 * process dies by SIGKILL right after that step's file operations, as a power cut would leave
 * them. Read per swap so a test process can set it before its first clean.
 */
function crashStepForTests(): number | undefined {
  const value = process.env[swapCrashStepEnvironmentVariable];
  return value === undefined || value === '' ? undefined : Number(value);
}

function maybeCrash(crashStep: number | undefined, step: number): void {
  if (crashStep === step) process.kill(process.pid, 'SIGKILL');
}
