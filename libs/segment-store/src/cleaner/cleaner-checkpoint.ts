/**
 * Where each compacted log of a data directory was cleaned up to (Kafka's
 * `cleaner-offset-checkpoint`): the first dirty offset of every log the cleaner has cleaned, in
 * one file in the data directory, in Kafka's format (checkpoint-file.ts):
 *
 *   cleaner-offset-checkpoint   `<topic> <partition> <first dirty offset>`, one line per log
 *
 * Crash story: the file is replaced atomically after a log's cleaned segments were swapped in
 * (cleaner/segment-swap.ts), so it never runs ahead of what was cleaned. A stale or missing entry
 * only makes the next pass treat more of the log as dirty (it cleans it again, which keeps the
 * same records); an entry past the log's end (a truncated log) or before its start is clamped by
 * the selection (cleanable-log.ts). A malformed file is reported and read as empty.
 *
 * Interleaving: one cleaner writes it, synchronously, after each log it cleaned.
 */
import * as path from 'node:path';
import {
  partitionOffsetEntries,
  readPartitionOffsets,
  writeCheckpointFile,
} from '../checkpoint-file';

export const cleanerOffsetCheckpointFile = 'cleaner-offset-checkpoint';

export class CleanerCheckpoint {
  private constructor(
    /** The data directory holding the file. */
    readonly root: string,
    private readonly offsets: Map<string, bigint>,
    /** What was wrong with the file when it was read, one line each. */
    readonly problems: readonly string[],
  ) {}

  static load(root: string): CleanerCheckpoint {
    const problems: string[] = [];
    const offsets = readPartitionOffsets(
      path.join(root, cleanerOffsetCheckpointFile),
      problems,
      'every compacted log is cleaned from its start again',
    );
    return new CleanerCheckpoint(root, offsets, problems);
  }

  /** The first dirty offset recorded for the log in `folder` (`<topic>-<partition>`). */
  firstDirtyOffset(folder: string): bigint | undefined {
    return this.offsets.get(folder);
  }

  /** Records that the log in `folder` is clean below `offset`; durable when this returns. */
  update(folder: string, offset: bigint): void {
    if (this.offsets.get(folder) === offset) return;
    this.offsets.set(folder, offset);
    this.write();
  }

  /** Forgets a log (deleted from the directory), so a log created again starts dirty. */
  remove(folder: string): void {
    if (this.offsets.delete(folder)) this.write();
  }

  private write(): void {
    writeCheckpointFile(
      path.join(this.root, cleanerOffsetCheckpointFile),
      partitionOffsetEntries(this.offsets),
    );
  }
}
