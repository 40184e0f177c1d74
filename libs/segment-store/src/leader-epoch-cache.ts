/**
 * The leader-epoch cache (Kafka's `LeaderEpochFileCache`, KIP-101): for each leader epoch, the
 * first offset written in it. A follower asks the leader "where does my latest epoch end?" and
 * truncates everything after that answer, so replicas never diverge after leader changes.
 *
 * File `leader-epoch-checkpoint` in the partition folder, a checkpoint file (checkpoint-file.ts)
 * whose entries are `<epoch> <startOffset>`, ascending in both.
 *
 * Crash story: the file is rewritten atomically on every change. It may lag the log (a crash
 * between an append in a new epoch and the checkpoint), so after recovery the log re-assigns the
 * epochs of the batches it scanned; it may also run ahead of a log that lost its tail, so the log
 * calls `truncateFromEnd(logEndOffset)` after recovery.
 *
 * Every change is written to the file before it is made in memory: if the write fails (a full
 * disk), the change is not made and the caller gets a retriable KAFKA_STORAGE_ERROR, so a retry
 * of the same change writes it again. (Changing memory first once left an epoch that was never
 * checkpointed: the retry saw the epoch as known and skipped the write.)
 */
import { CheckpointFormatError, readCheckpointFile, writeCheckpointFile } from './checkpoint-file';
import { storageError } from './errors';

export interface EpochEntry {
  readonly epoch: number;
  readonly startOffset: bigint;
}

/** Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET. */
export const undefinedEpoch = -1;
export const undefinedEpochOffset = -1n;

export class LeaderEpochCache {
  private entries: EpochEntry[];

  private constructor(
    private readonly filePath: string,
    entries: EpochEntry[],
  ) {
    this.entries = entries;
  }

  /** Loads the cache; a malformed file is treated as empty and rebuilt from the log's batches. */
  static load(filePath: string): { cache: LeaderEpochCache; malformed: boolean } {
    try {
      const lines = readCheckpointFile(filePath) ?? [];
      const entries = lines.map((line) => {
        const match = /^(\d+) (\d+)$/.exec(line);
        if (match === null)
          throw new CheckpointFormatError(`${filePath}: bad entry ${JSON.stringify(line)}`);
        return { epoch: Number(match[1]), startOffset: BigInt(match[2]!) };
      });
      for (let index = 1; index < entries.length; index++) {
        const previous = entries[index - 1]!;
        const current = entries[index]!;
        if (current.epoch <= previous.epoch || current.startOffset < previous.startOffset) {
          throw new CheckpointFormatError(
            `${filePath}: entries are not ascending at line ${index + 3}`,
          );
        }
      }
      return { cache: new LeaderEpochCache(filePath, entries), malformed: false };
    } catch (error) {
      if (!(error instanceof CheckpointFormatError)) throw error;
      return { cache: new LeaderEpochCache(filePath, []), malformed: true };
    }
  }

  get latestEpoch(): number {
    return this.entries.at(-1)?.epoch ?? undefinedEpoch;
  }

  list(): readonly EpochEntry[] {
    return this.entries;
  }

  /**
   * Records that `epoch` starts at `startOffset`. Only a newer epoch is recorded; an entry for a
   * later start offset with an older epoch would break the ordering and is ignored, as Kafka does.
   * Returns whether the cache changed.
   */
  assign(epoch: number, startOffset: bigint): boolean {
    if (epoch < 0) return false;
    const latest = this.entries.at(-1);
    if (latest !== undefined && epoch <= latest.epoch) return false;
    // A new epoch starting at or before earlier entries' start offsets replaces them: those
    // epochs wrote nothing that survived.
    this.persistThenUse([
      ...this.entries.filter((entry) => entry.startOffset < startOffset),
      { epoch, startOffset },
    ]);
    return true;
  }

  /** Removes epochs starting at or after `endOffset` (the log was truncated to it). */
  truncateFromEnd(endOffset: bigint): void {
    const kept = this.entries.filter((entry) => entry.startOffset < endOffset);
    if (kept.length === this.entries.length) return;
    this.persistThenUse(kept);
  }

  /** Drops epochs wholly below `startOffset` (the log start moved); the one spanning it is clamped. */
  truncateFromStart(startOffset: bigint): void {
    let firstKept = 0;
    while (
      firstKept + 1 < this.entries.length &&
      this.entries[firstKept + 1]!.startOffset <= startOffset
    )
      firstKept++;
    const first = this.entries[firstKept];
    if (first === undefined || (firstKept === 0 && first.startOffset >= startOffset)) return;
    this.persistThenUse([
      { epoch: first.epoch, startOffset },
      ...this.entries.slice(firstKept + 1),
    ]);
  }

  /** Empties the cache (the log was truncated fully). */
  clear(): void {
    if (this.entries.length === 0) return;
    this.persistThenUse([]);
  }

  /**
   * Kafka's `endOffsetFor`: for the latest epoch, that epoch and the log end offset; for an older
   * one, the largest epoch ≤ it and the start offset of the next epoch (where it ended); for one
   * older than every entry, the requested epoch and the first entry's start offset (its data is
   * gone, and the follower must start from the leader's earliest data); undefined otherwise.
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: bigint): { epoch: number; endOffset: bigint } {
    const undefinedAnswer = { epoch: undefinedEpoch, endOffset: undefinedEpochOffset };
    const latest = this.entries.at(-1);
    if (latest === undefined || requestedEpoch === undefinedEpoch) return undefinedAnswer;
    if (requestedEpoch === latest.epoch) return { epoch: latest.epoch, endOffset: logEndOffset };
    const higherIndex = this.entries.findIndex((entry) => entry.epoch > requestedEpoch);
    if (higherIndex < 0) return undefinedAnswer;
    const higher = this.entries[higherIndex]!;
    if (higherIndex === 0) return { epoch: requestedEpoch, endOffset: higher.startOffset };
    return { epoch: this.entries[higherIndex - 1]!.epoch, endOffset: higher.startOffset };
  }

  /** Writes `entries` to the file, then makes them the cache's; on a failed write, neither. */
  private persistThenUse(entries: EpochEntry[]): void {
    try {
      writeCheckpointFile(
        this.filePath,
        entries.map((entry) => `${entry.epoch} ${entry.startOffset}`),
      );
    } catch (error) {
      throw storageError(
        `writing the leader-epoch checkpoint ${this.filePath} failed`,
        error,
        this.filePath,
      );
    }
    this.entries = entries;
  }
}
