/**
 * A partition's log together with its producer state (the part of Kafka's UnifiedLog that keeps
 * the ProducerStateManager in step with the log). Every append and truncation of a hosted
 * replica goes through here, so the state always describes exactly the batches in the log:
 *
 *   - leader appends have the log check the batches once (Log.validateAppend), then check the
 *     producers (producer-state-manager.ts) and write nothing for a refused or duplicate
 *     request; the state is updated after the write succeeds;
 *   - follower appends update the state from the leader's batches, without checks;
 *   - a segment roll writes a snapshot as of the new segment's base offset, before the batches
 *     that went into the new segment are applied (producer-state-snapshot.ts);
 *   - truncations delete the snapshots past the new log end and rebuild: load the newest
 *     snapshot at or below it, then replay the batch headers after it;
 *   - opening (a restart, or a replica hosted again) rebuilds the same way; a clean close
 *     writes a durable snapshot at the log end offset, so the next open replays nothing;
 *   - with the data directory offline (a LogDirGuard: the storage node's log-dir-health.ts)
 *     appends are refused before anything is checked or written, and an append that fails for
 *     the disk's sake reports it.
 *
 * Rebuilding reads only the 61-byte header of each batch, never its records.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  RecordBatchHeader,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
} from '@spool/record-batch';
import type { AppendResult, Log, ValidatedBatches } from '../log';
import {
  ProducerStateManager,
  producerBatchHeaderOf,
  type ProducerBatchHeader,
  type ProducerStateSettings,
} from './producer-state-manager';
import {
  deleteProducerSnapshot,
  listProducerSnapshots,
  producerSnapshotFileName,
  readProducerSnapshot,
  writeProducerSnapshot,
} from './producer-state-snapshot';

/** Bytes of log one read step of a rebuild covers (only headers are read from them). */
const rebuildReadSizeBytes = 8 * 1024 * 1024;

export interface ProducerStateRebuildReport {
  /** The snapshot the state started from, undefined when it was replayed from the log start. */
  readonly snapshotOffset: bigint | undefined;
  readonly batchesReplayed: number;
  /** Snapshots that could not be used, one line each. */
  readonly problems: readonly string[];
}

export type LeaderAppendOutcome =
  | { readonly kind: 'appended'; readonly appended: AppendResult }
  | { readonly kind: 'duplicate'; readonly baseOffset: bigint; readonly lastOffset: bigint };

/**
 * The data directory's health as the log paths see it (Kafka's LogDirFailureChannel): appends
 * refuse while it is offline, and report the errors that may mean the disk failed.
 */
export interface LogDirGuard {
  /** Throws a retriable KAFKA_STORAGE_ERROR while the directory is offline. */
  ensureOnline(): void;
  /** Takes the directory offline when `error` is a disk failure; otherwise does nothing. */
  report(error: unknown): void;
}

export class ProducerStateLog {
  readonly producers: ProducerStateManager;
  /**
   * The log end offset at which a snapshot on disk describes the state exactly (written here, or
   * loaded with nothing to replay after it); undefined once anything changed since. A clean close
   * of an idle partition then writes no snapshot: 20,000 durable snapshots took minutes.
   */
  private snapshotCurrentAt: bigint | undefined;

  constructor(
    readonly log: Log,
    partitionName: string,
    settings?: ProducerStateSettings,
    private readonly logDir?: LogDirGuard,
  ) {
    this.producers = new ProducerStateManager(partitionName, settings);
  }

  /**
   * The leader's append: checks the producers of every batch, then writes them all or none.
   * A request of duplicates writes nothing and answers the original offsets.
   */
  appendAsLeader(records: Buffer, leaderEpoch: number): LeaderAppendOutcome {
    this.logDir?.ensureOnline();
    // The batches are checked once, first (as Kafka's LogValidator runs before the producer
    // state's checks): a damaged batch is reported as damaged, never as a sequence problem,
    // and the positions the check returns are the only walk over the framing.
    const validated = this.log.validateAppend(records, { assignOffsets: true });
    const headers = producerHeadersOf(records, validated.positions);
    if (headers.length > 0) {
      const check = this.producers.checkLeaderAppend(headers);
      if (check.kind === 'duplicate') return check;
    }
    const appended = this.appendAndSnapshotOnRoll(validated, leaderEpoch);
    this.snapshotCurrentAt = undefined;
    if (headers.length > 0) this.updateFrom(records, validated.positions);
    return { kind: 'appended', appended };
  }

  /** A follower's append of the leader's batches: the state follows without checks. */
  appendAsFollower(records: Buffer, leaderEpoch: number): AppendResult {
    this.logDir?.ensureOnline();
    const validated = this.log.validateAppend(records, { assignOffsets: false });
    const appended = this.appendAndSnapshotOnRoll(validated, leaderEpoch);
    this.snapshotCurrentAt = undefined;
    this.updateFrom(records, validated.positions);
    return appended;
  }

  /** Kafka's truncateTo with the producer state rebuilt below the new end. */
  truncateTo(offset: bigint): { bytesTruncated: number } {
    if (offset >= this.log.logEndOffset) return { bytesTruncated: 0 };
    const result = this.log.truncateTo(offset);
    // At most the active segment's headers are replayed: a snapshot was written at its roll.
    this.rebuild();
    return result;
  }

  /** Kafka's truncateFullyAndStartAt: nothing is left to describe producers. */
  truncateFullyAndStartAt(offset: bigint): void {
    this.log.truncateFullyAndStartAt(offset);
    for (const snapshotOffset of listProducerSnapshots(this.log.directory)) {
      deleteProducerSnapshot(this.log.directory, snapshotOffset);
    }
    this.producers.clear();
    this.snapshotCurrentAt = undefined;
  }

  /**
   * Loads the newest usable snapshot at or below the log end offset and replays the batch
   * headers after it. Snapshots past the end, or damaged, are deleted.
   */
  rebuild(): ProducerStateRebuildReport {
    const directory = this.log.directory;
    const logEndOffset = this.log.logEndOffset;
    const problems: string[] = [];
    this.producers.clear();
    let snapshotOffset: bigint | undefined;
    for (const offset of listProducerSnapshots(directory).reverse()) {
      if (offset > logEndOffset) {
        deleteProducerSnapshot(directory, offset);
        continue;
      }
      try {
        this.producers.load(readProducerSnapshot(directory, offset));
        snapshotOffset = offset;
        break;
      } catch (error) {
        problems.push(`producer snapshot at ${offset} is unusable: ${(error as Error).message}`);
        deleteProducerSnapshot(directory, offset);
      }
    }
    let from = snapshotOffset ?? this.log.logStartOffset;
    if (from < this.log.logStartOffset) from = this.log.logStartOffset;
    const batchesReplayed = this.replayHeaders(from);
    this.snapshotCurrentAt =
      snapshotOffset === logEndOffset && batchesReplayed === 0 ? snapshotOffset : undefined;
    return { snapshotOffset, batchesReplayed, problems };
  }

  /**
   * Writes a snapshot at the log end offset; durable on a clean close. Deletes snapshots below
   * the oldest segment (the records they cover are gone), keeping the newest one always. Writes
   * nothing when a snapshot on disk already describes the state, or the log is empty with no
   * producers (a rebuild then replays nothing either). A snapshot that was loaded, not written
   * durably, may then be lost to an OS crash: the next start replays from an older one, which
   * is slower, not wrong (producer-state-snapshot.ts, crash story 2).
   */
  takeSnapshot(durable: boolean): void {
    const logEndOffset = this.log.logEndOffset;
    if (this.snapshotCurrentAt === logEndOffset) return;
    if (logEndOffset === this.log.logStartOffset && this.producers.producerCount === 0) return;
    this.writeSnapshotAt(logEndOffset, durable);
    this.snapshotCurrentAt = logEndOffset;
  }

  removeExpiredProducers(nowMs: number): number {
    const removed = this.producers.removeExpiredProducers(nowMs);
    if (removed > 0) this.snapshotCurrentAt = undefined;
    return removed;
  }

  private appendAndSnapshotOnRoll(validated: ValidatedBatches, leaderEpoch: number): AppendResult {
    const segmentsBefore = this.log.segmentCount;
    let appended: AppendResult;
    try {
      appended = this.log.appendValidated(validated, {
        leaderEpoch,
        assignOffsets: validated.assignOffsets,
      });
    } catch (error) {
      this.logDir?.report(error);
      throw error;
    }
    if (this.log.segmentCount !== segmentsBefore) {
      // The state does not include this append's batches yet: it is the state as of the new
      // segment's base offset, which is where this append started.
      try {
        this.writeSnapshotAt(appended.baseOffset, false);
      } catch {
        // The batches are in the log already, so the append must succeed and the state must
        // take them in (the caller does, on return): failing here once answered a written
        // batch with an error and left it out of the state, so the producer's retry was
        // appended a second time. The snapshot only shortens rebuilds: without it a rebuild
        // replays from an older snapshot, or from the log start. (A full disk does this.)
        try {
          fs.rmSync(
            path.join(this.log.directory, `${producerSnapshotFileName(appended.baseOffset)}.tmp`),
            { force: true },
          );
        } catch {
          // Left for the next snapshot at this offset to overwrite; never listed as a snapshot.
        }
      }
    }
    return appended;
  }

  private writeSnapshotAt(offset: bigint, durable: boolean): void {
    const directory = this.log.directory;
    writeProducerSnapshot(directory, offset, this.producers.entries(), durable);
    const oldestSegmentBase = this.log.segmentBaseOffsets()[0] ?? 0n;
    const snapshots = listProducerSnapshots(directory);
    for (const snapshotOffset of snapshots.slice(0, -1)) {
      if (snapshotOffset < oldestSegmentBase) deleteProducerSnapshot(directory, snapshotOffset);
    }
  }

  private updateFrom(records: Buffer, positions: readonly number[]): void {
    for (const position of positions) {
      if (records.readBigInt64BE(position + producerIdPosition) < 0n) continue;
      const header = new RecordBatchHeader(records, position);
      this.producers.update(producerBatchHeaderOf(header), header.baseOffset, header.lastOffset);
    }
  }

  /** Reads each batch header from `from` to the log end and applies it; returns the count. */
  private replayHeaders(from: bigint): number {
    let offset = from;
    let batches = 0;
    const header = Buffer.alloc(recordBatchHeaderSizeBytes);
    while (offset < this.log.logEndOffset) {
      const read = this.log.read(offset, rebuildReadSizeBytes);
      try {
        if (read.slices.length === 0) break;
        for (const slice of read.slices) {
          let position = slice.position;
          const end = slice.position + slice.sizeBytes;
          while (position + recordBatchHeaderSizeBytes <= end) {
            fs.readSync(slice.file.fd, header, 0, recordBatchHeaderSizeBytes, position);
            const view = new RecordBatchHeader(header, 0);
            if (view.hasProducerId) {
              this.producers.update(producerBatchHeaderOf(view), view.baseOffset, view.lastOffset);
            }
            batches++;
            offset = view.lastOffset + 1n;
            position += view.sizeBytes;
          }
        }
      } finally {
        read.release();
      }
    }
    return batches;
  }
}

/** Producer fields of the idempotent batches; empty when none has a producer id. */
function producerHeadersOf(records: Buffer, positions: readonly number[]): ProducerBatchHeader[] {
  let idempotent = false;
  for (const position of positions) {
    if (records.readBigInt64BE(position + producerIdPosition) >= 0n) idempotent = true;
  }
  if (!idempotent) return [];
  return positions.map((position) =>
    producerBatchHeaderOf(new RecordBatchHeader(records, position)),
  );
}
