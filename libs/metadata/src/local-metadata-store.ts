/**
 * The `local` metadata store: one process, one durable file, etcd's semantics. The embedded
 * default of `spool dev` and single-machine installs.
 *
 * The file format and crash story are in local-journal.ts; the single-owner rule in
 * local-store-lock.ts. What this class adds:
 *
 * - Writes (put, delete, transactions, lease revocations) go through one queue: evaluate the
 *   compares against the durable state, append the change, fdatasync, then apply it in memory
 *   and hand it to watches. Reads are served from memory and so only ever see durable writes.
 *   One fdatasync per write is plenty for metadata, which changes a few times per second.
 * - Leases belong to this process, which is also the only one that could renew them, so they
 *   never expire on a timer: a lease lives until it is revoked or the store closes. Keys bound
 *   to a lease are deleted, in one revision, when it ends. After a crash no lease survives, so
 *   open deletes every lease-bound key left in the file (again one revision).
 * - Campaigns use the shared recipe in election.ts: the first candidate wins at once, a second
 *   waits until the first resigns or its lease ends.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigError, type Logger } from '@spool/common';
import { campaign, readLeader } from './election';
import { MetadataStoreError, WatchCompactedError } from './errors';
import { JournalFile, recoverJournal, type JournalRecoveryReport } from './local-journal';
import { validateTransaction, type Change, type KeySpace } from './local-key-space';
import { LocalStoreLock } from './local-store-lock';
import { LocalWatch, WatchHistory, copyKeyValue } from './local-watch';
import type {
  CampaignOptions,
  KeyValue,
  Leadership,
  Lease,
  MetadataStore,
  Transaction,
  TransactionResult,
  Watch,
  WatchEvent,
  WatchHandlers,
} from './metadata-store';

/**
 * Compact once this many bytes were appended after the snapshot (or the snapshot's own size, if
 * larger, so the rewrite costs at most as much as what was appended: amortized 2x).
 */
export const journalAppendedBytesMaxDefault = 4 * 1024 * 1024;
/** How far back a watch can start: about an hour of a busy controller's writes. */
export const watchHistoryRevisionsMaxDefault = 10_000;
/** Writes waiting for the disk before callers are told to back off. */
export const pendingWritesMax = 10_000;

export interface LocalMetadataStoreOptions {
  /** path: the journal file; its folder is created if missing. */
  readonly path: string;
  /** journalAppendedBytesMax: appended bytes after which the journal is compacted. */
  readonly journalAppendedBytesMax?: number;
  /** watchHistoryRevisionsMax: revisions kept in memory for watches to start from. */
  readonly watchHistoryRevisionsMax?: number;
  /** logger: where recovery and compaction are reported. */
  readonly logger?: Logger;
}

export interface LocalRecoveryReport extends JournalRecoveryReport {
  /** Keys bound to leases of the previous run, deleted at open. */
  readonly leaseKeysDeleted: number;
}

export class LocalMetadataStore implements MetadataStore {
  private readonly watches = new Set<LocalWatch>();
  private readonly leases = new Map<bigint, LocalLease>();
  private leaseIdLast = 0n;
  private writeTail: Promise<unknown> = Promise.resolve();
  private pendingWrites = 0;
  /** Set once a write or sync failed: the file's state is unknown until it is reopened. */
  private storageFailure: MetadataStoreError | undefined;
  private closing: Promise<void> | undefined;
  private recoveryReportValue: LocalRecoveryReport;

  private constructor(
    readonly filePath: string,
    private readonly keySpace: KeySpace,
    private readonly history: WatchHistory,
    private readonly journal: JournalFile,
    private readonly lock: LocalStoreLock,
    private readonly journalAppendedBytesMax: number,
    private readonly logger: Logger | undefined,
    report: JournalRecoveryReport,
  ) {
    this.recoveryReportValue = { ...report, leaseKeysDeleted: 0 };
  }

  /** What open found in the file: the torn tail it cut, the lease keys it deleted. */
  get recoveryReport(): LocalRecoveryReport {
    return this.recoveryReportValue;
  }

  /**
   * Opens (or creates) the store: takes the lock, recovers the journal (cutting a torn tail and
   * reporting it), and deletes keys bound to leases of the previous run.
   */
  static async open(options: LocalMetadataStoreOptions): Promise<LocalMetadataStore> {
    const journalAppendedBytesMax = positiveInteger(
      'journalAppendedBytesMax',
      options.journalAppendedBytesMax ?? journalAppendedBytesMaxDefault,
    );
    const watchHistoryRevisionsMax = positiveInteger(
      'watchHistoryRevisionsMax',
      options.watchHistoryRevisionsMax ?? watchHistoryRevisionsMaxDefault,
    );
    if (options.path.length === 0) throw new ConfigError('path must name the journal file');
    const filePath = path.resolve(options.path);
    fs.mkdirSync(path.dirname(filePath), { recursive: true });
    const lock = LocalStoreLock.acquire(filePath);
    try {
      const recovery = recoverJournal(filePath);
      const { report } = recovery;
      // A snapshot's own revision has no events, except revision 1, the empty store's.
      const history = new WatchHistory(
        watchHistoryRevisionsMax,
        report.snapshotRevision === 1n ? 1n : report.snapshotRevision + 1n,
      );
      for (const change of recovery.changes) {
        history.record(change.revision, eventsOf(change));
      }
      const journal = await JournalFile.open(filePath, recovery.endPosition);
      const store = new LocalMetadataStore(
        filePath,
        recovery.keySpace,
        history,
        journal,
        lock,
        journalAppendedBytesMax,
        options.logger,
        report,
      );
      if (report.bytesTruncated > 0) {
        options.logger?.warn(
          { report: reportForLog(report) },
          `metadata journal ${filePath}: cut a torn tail of ${report.bytesTruncated} bytes ` +
            `at position ${report.truncatedAtPosition}`,
        );
      }
      try {
        await store.deleteLeaseKeysOfPreviousRun();
      } catch (error) {
        await journal.close();
        throw error;
      }
      return store;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  async get(key: string): Promise<KeyValue | undefined> {
    this.ensureOpen();
    const keyValue = this.keySpace.get(key);
    return keyValue === undefined ? undefined : copyKeyValue(keyValue);
  }

  async getPrefix(
    prefix: string,
  ): Promise<{ readonly entries: readonly KeyValue[]; readonly revision: bigint }> {
    this.ensureOpen();
    return {
      entries: this.keySpace.range(prefix).map(copyKeyValue),
      revision: this.keySpace.revision,
    };
  }

  async put(key: string, value: Buffer, options: { lease?: bigint } = {}): Promise<bigint> {
    const operation = { kind: 'put', key, value, lease: options.lease } as const;
    return (await this.transaction({ compares: [], success: [operation] })).revision;
  }

  async delete(key: string): Promise<bigint> {
    return (await this.transaction({ compares: [], success: [{ kind: 'delete', key }] })).revision;
  }

  async transaction(transaction: Transaction): Promise<TransactionResult> {
    this.ensureOpen();
    validateTransaction(transaction);
    return this.enqueueWrite(async () => {
      const succeeded = transaction.compares.every((compare) => this.keySpace.compare(compare));
      const operations = succeeded ? transaction.success : (transaction.failure ?? []);
      const change = this.keySpace.planChange(
        operations,
        (lease) => this.leases.get(lease)?.alive === true,
      );
      if (change !== undefined) await this.commitLocked(change);
      return { succeeded, revision: this.keySpace.revision };
    });
  }

  async watchPrefix(
    prefix: string,
    afterRevision: bigint,
    handlers: WatchHandlers,
  ): Promise<Watch> {
    this.ensureOpen();
    const watch = new LocalWatch(prefix, afterRevision, handlers, (ended) =>
      this.watches.delete(ended),
    );
    if (afterRevision + 1n < this.history.compactRevision) {
      watch.fail(new WatchCompactedError(afterRevision, this.history.compactRevision));
      return watch;
    }
    for (const { revision, events } of this.history.after(afterRevision)) {
      watch.deliver(revision, events);
    }
    this.watches.add(watch);
    return watch;
  }

  async grantLease(ttlMs: number): Promise<Lease> {
    this.ensureOpen();
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
      throw new MetadataStoreError(
        'METADATA_STORE_INVALID_REQUEST',
        `lease TTL must be a positive integer of milliseconds, got ${ttlMs}`,
      );
    }
    // Ids only need to be unique while the store is open: no lease outlives it.
    this.leaseIdLast += 1n;
    const lease = new LocalLease(this.leaseIdLast, ttlMs, (ending) => this.revokeLease(ending));
    this.leases.set(lease.id, lease);
    return lease;
  }

  campaign(electionPrefix: string, options: CampaignOptions): Promise<Leadership> {
    return campaign(this, electionPrefix, options);
  }

  leader(electionPrefix: string): Promise<{ candidate: string; fencingToken: bigint } | undefined> {
    return readLeader(this, electionPrefix);
  }

  /**
   * Forgets watch history below `revision`, as etcd's compaction does: a later watch must start
   * at `revision` or after. The journal compacts itself; this is for operators and tests.
   */
  async compact(revision: bigint): Promise<void> {
    this.ensureOpen();
    if (revision > this.keySpace.revision) {
      throw new MetadataStoreError(
        'METADATA_STORE_INVALID_REQUEST',
        `cannot compact at revision ${revision}: the store is only at revision ` +
          `${this.keySpace.revision}`,
      );
    }
    this.history.compact(revision);
  }

  /**
   * Revokes every lease (their keys go in one last revision), ends the watches, waits for queued
   * writes, closes the file and releases the lock. Later calls fail with METADATA_STORE_CLOSED.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    const ending = [...this.leases.values()].filter((lease) => lease.alive);
    try {
      if (this.storageFailure === undefined && ending.length > 0) {
        await this.enqueueWrite(() => this.endLeasesLocked(ending));
      }
    } finally {
      for (const lease of ending) lease.end();
      for (const watch of [...this.watches]) await watch.cancel();
      await this.writeTail;
      await this.journal.close();
      this.lock.release();
    }
  }

  private revokeLease(lease: LocalLease): Promise<void> {
    if (!lease.alive || this.closing !== undefined) return Promise.resolve();
    return this.enqueueWrite(async () => {
      try {
        await this.endLeasesLocked([lease]);
      } finally {
        lease.end();
      }
    });
  }

  /** Deletes the keys bound to the leases, in one revision. Assumes the write queue is held. */
  private async endLeasesLocked(leases: readonly LocalLease[]): Promise<void> {
    const keys = new Set<string>();
    for (const lease of leases) {
      if (!lease.alive) continue;
      lease.alive = false;
      this.leases.delete(lease.id);
      for (const key of this.keySpace.keysBoundToLease(lease.id)) keys.add(key);
    }
    const operations = [...keys].map((key) => ({ kind: 'delete', key }) as const);
    const change = this.keySpace.planChange(operations, () => false);
    if (change !== undefined) await this.commitLocked(change);
  }

  private async deleteLeaseKeysOfPreviousRun(): Promise<void> {
    const keys = this.keySpace.keysBoundToLease();
    if (keys.length === 0) return;
    await this.enqueueWrite(async () => {
      const operations = keys.map((key) => ({ kind: 'delete', key }) as const);
      const change = this.keySpace.planChange(operations, () => false);
      if (change !== undefined) await this.commitLocked(change);
    });
    this.recoveryReportValue = { ...this.recoveryReportValue, leaseKeysDeleted: keys.length };
    this.logger?.info(
      { keys: keys.length },
      `metadata journal ${this.filePath}: deleted keys bound to leases of the previous run`,
    );
  }

  /**
   * Runs `work` once every write queued before it has finished: the one place writes are
   * serialized. A storage failure fails every later write.
   */
  private enqueueWrite<T>(work: () => Promise<T>): Promise<T> {
    if (this.pendingWrites >= pendingWritesMax) {
      return Promise.reject(
        new MetadataStoreError(
          'METADATA_STORE_UNAVAILABLE',
          `${this.pendingWrites} writes are waiting for the disk; retry later`,
        ),
      );
    }
    this.pendingWrites += 1;
    const result = this.writeTail.then(() => {
      if (this.storageFailure !== undefined) throw this.storageFailure;
      return work();
    });
    this.writeTail = result.then(
      () => (this.pendingWrites -= 1),
      () => (this.pendingWrites -= 1),
    );
    return result;
  }

  /** Makes the change durable, applies it, hands it to the watches. Assumes the queue is held. */
  private async commitLocked(change: Change): Promise<void> {
    try {
      await this.journal.appendLocked(change);
    } catch (error) {
      this.storageFailure = storageFailure(this.filePath, 'append to', error);
      throw this.storageFailure;
    }
    const events = this.keySpace.apply(change);
    this.history.record(change.revision, events);
    for (const watch of this.watches) watch.deliver(change.revision, events);
    await this.maybeCompactJournalLocked();
  }

  /** Compacts once the appended bytes exceed the bound and the snapshot's own size (amortized). */
  private async maybeCompactJournalLocked(): Promise<void> {
    const limitBytes = Math.max(this.journalAppendedBytesMax, this.journal.snapshotBytes);
    if (this.journal.appendedBytes <= limitBytes) return;
    try {
      await this.journal.compactLocked({
        revision: this.keySpace.revision,
        keyValues: this.keySpace.all(),
      });
      this.logger?.info(
        { revision: String(this.keySpace.revision), sizeBytes: this.journal.endPosition },
        `metadata journal ${this.filePath}: compacted into a snapshot`,
      );
    } catch (error) {
      // The change itself is durable; only the file's next state is unknown.
      this.storageFailure = storageFailure(this.filePath, 'compact', error);
      this.logger?.error({ err: error }, this.storageFailure.message);
    }
  }

  private ensureOpen(): void {
    if (this.closing !== undefined) {
      throw new MetadataStoreError(
        'METADATA_STORE_CLOSED',
        `the local metadata store ${this.filePath} is closed`,
      );
    }
  }
}

class LocalLease implements Lease {
  /** Cleared under the store's write queue, the moment its keys are planned for deletion. */
  alive = true;
  private listeners: (() => void)[] = [];
  private ended = false;

  constructor(
    readonly id: bigint,
    readonly ttlMs: number,
    private readonly revokeInStore: (lease: LocalLease) => Promise<void>,
  ) {}

  onLost(listener: () => void): void {
    if (this.ended) queueMicrotask(listener);
    else this.listeners.push(listener);
  }

  /** The store is in this process: its leases are renewed by its own clock, never unanswered. */
  readonly suspended = false;

  onSuspended(): void {}

  onResumed(): void {}

  revoke(): Promise<void> {
    return this.revokeInStore(this);
  }

  /** Tells the listeners, once, that the lease and its keys are gone. */
  end(): void {
    this.alive = false;
    if (this.ended) return;
    this.ended = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) queueMicrotask(listener);
  }
}

function eventsOf(change: Change): WatchEvent[] {
  return change.writes.map((write) =>
    write.kind === 'put'
      ? { kind: 'put', keyValue: write.keyValue }
      : { kind: 'delete', key: write.key, modRevision: change.revision },
  );
}

function storageFailure(filePath: string, verb: string, cause: unknown): MetadataStoreError {
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  const reason = errno === undefined ? '' : ` (${errno})`;
  return new MetadataStoreError(
    'METADATA_STORE_STORAGE_ERROR',
    `failed to ${verb} the metadata journal ${filePath}${reason}; reopen the store to recover`,
    { cause },
  );
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function reportForLog(report: JournalRecoveryReport): Record<string, unknown> {
  return {
    ...report,
    snapshotRevision: String(report.snapshotRevision),
    lastRevision: String(report.lastRevision),
  };
}
