/**
 * Every write of the active controller goes through here: one store transaction whose first
 * condition is the controller's election guard, so a controller that lost its leadership (its
 * lease expired while it was paused or cut off) cannot change anything, however stale its view.
 * After a commit the writer waits until the cluster view has applied the revision, so the caller
 * reads its own write.
 *
 * Both store backends cap a transaction at 128 compares or operations per branch (etcd's
 * `--max-txn-ops`) and ~1.5 MiB (`--max-request-bytes`). A change larger than that is written as
 * a sequence of transactions of at most `chunkOperationsMax` operations and `chunkBytesMax`
 * bytes, each guarded like every other write: `commitIndependent` for changes whose parts stand
 * alone (leader elections), topic-changes.ts for changes readers must see whole.
 */
import { SpoolError, type Logger } from '@spool/common';
import type { Compare, Leadership, MetadataKeys, MetadataStore, Operation } from '@spool/metadata';
import type { ClusterState } from './cluster-state';

/**
 * Operations in one transaction of a split change: under the stores' 128, leaving room for the
 * election guard and a few compares of the change's own.
 */
export const chunkOperationsMax = 100;
/** Bytes of keys and values in one transaction of a split change: a third of etcd's 1.5 MiB. */
export const chunkBytesMax = 512 * 1024;

/** One part of a change that stands alone: its condition and its write. */
/**
 * How long a commit waits for the view to apply its revision. The watch brings a write back in
 * milliseconds; this is well past that and under the storage node's 5 s AlterPartition deadline,
 * so the caller hears REQUEST_TIMED_OUT (and retries) rather than its own call timing out.
 */
export const revisionApplyWaitMsMax = 3_000;

export interface IndependentWrite {
  readonly compare: Compare;
  readonly operation: Operation;
}

export interface MetadataWriterTestHooks {
  /**
   * TEST HOOK (the controller's `testPauseAfterMetadataChunk` setting): after this many
   * transactions of one split topic change, the writer logs and stops for good, so a test can
   * SIGKILL the process in the middle of the change. 0 turns it off.
   */
  readonly pauseAfterChunk: number;
  readonly logger: Logger;
}

export class MetadataWriter {
  constructor(
    private readonly store: MetadataStore,
    private readonly keys: MetadataKeys,
    private readonly state: ClusterState,
    private readonly leadership: Leadership,
    /** Called when a write proves this controller was deposed. */
    private readonly onDeposed: () => void,
    private readonly testHooks: MetadataWriterTestHooks | undefined = undefined,
  ) {}

  /**
   * Commits `operations` if every compare holds. Throws NOT_CONTROLLER when the guard failed
   * (and reports the deposition), INVALID_UPDATE_VERSION when another compare failed. After a
   * commit, throws NOT_CONTROLLER when the controller stopped leading before its view applied
   * the write, REQUEST_TIMED_OUT when the view took longer than `revisionApplyWaitMsMax`: the
   * change may be committed, and the caller's retry reads it (a partition's epoch has moved on).
   */
  async commit(compares: readonly Compare[], operations: readonly Operation[]): Promise<bigint> {
    let result;
    try {
      result = await this.store.transaction({
        compares: [this.leadership.guard, ...compares],
        success: operations,
      });
    } catch (error) {
      throw new SpoolError(
        'UNAVAILABLE',
        `the metadata store refused the write: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    if (!result.succeeded) {
      const guard = await this.store
        .get((this.leadership.guard as { key: string }).key)
        .catch(() => undefined);
      if (guard === undefined || guard.createRevision !== this.leadership.fencingToken) {
        this.onDeposed();
        throw new SpoolError(
          'NOT_CONTROLLER',
          'this controller lost its leadership; retry with the new one',
        );
      }
      throw new SpoolError(
        'INVALID_UPDATE_VERSION',
        'the metadata changed during the update; retry',
      );
    }
    await this.state.waitForRevision(result.revision, revisionApplyWaitMsMax);
    return result.revision;
  }

  /**
   * Commits writes that need no atomicity between them, in transactions of at most
   * `chunkOperationsMax`, each with the compares of its own writes. A failure leaves the earlier
   * transactions committed, which is correct for such writes; the caller learns of it by the
   * error. Returns the last revision, undefined when there was nothing to write.
   */
  async commitIndependent(writes: readonly IndependentWrite[]): Promise<bigint | undefined> {
    let revision: bigint | undefined;
    for (const chunk of splitIntoChunks(writes, chunkOperationsMax, (write) => write.operation)) {
      revision = await this.commit(
        chunk.map((write) => write.compare),
        chunk.map((write) => write.operation),
      );
    }
    return revision;
  }

  /**
   * Called by a split topic change after its `chunkNumber`-th transaction (from 1). Does nothing
   * unless the test hook is on.
   */
  async chunkCommitted(chunkNumber: number): Promise<void> {
    const hooks = this.testHooks;
    if (hooks === undefined || hooks.pauseAfterChunk <= 0 || chunkNumber < hooks.pauseAfterChunk)
      return;
    hooks.logger.warn(
      { event: 'test-hook-paused', chunkNumber },
      'TEST HOOK: paused in the middle of a metadata change, waiting to be killed',
    );
    await new Promise<never>(() => {});
  }

  /** Compare on a key's last write, or its absence when it does not exist. */
  unchangedSince(key: string, modRevision: bigint | undefined): Compare {
    return modRevision === undefined
      ? { key, kind: 'absent' }
      : { key, kind: 'modRevision', equals: modRevision };
  }

  get metadataKeys(): MetadataKeys {
    return this.keys;
  }
}

/** The size one operation adds to a transaction, as the stores count it. */
export function operationBytes(operation: Operation): number {
  switch (operation.kind) {
    case 'put':
      return Buffer.byteLength(operation.key) + operation.value.length;
    case 'delete':
      return Buffer.byteLength(operation.key);
    case 'deletePrefix':
      return Buffer.byteLength(operation.prefix);
  }
}

/**
 * Splits items into runs of at most `operationsMax` whose operations add up to at most
 * `chunkBytesMax` (an item larger than that alone still gets a run of its own). Order is kept.
 */
export function splitIntoChunks<T>(
  items: readonly T[],
  operationsMax: number,
  operationOf: (item: T) => Operation,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let currentBytes = 0;
  for (const item of items) {
    const sizeBytes = operationBytes(operationOf(item));
    if (
      current.length > 0 &&
      (current.length >= operationsMax || currentBytes + sizeBytes > chunkBytesMax)
    ) {
      chunks.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += sizeBytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
