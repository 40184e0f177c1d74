/**
 * Leader election, etcd's recipe (clientv3/concurrency.Election), written once on top of the
 * `MetadataStore` primitives so both backends elect the same way:
 *
 *   1. A candidate grants a lease and creates `<electionPrefix><lease id in hex>`, bound to it,
 *      holding the candidate's name. The key's create revision is the candidate's place in line.
 *   2. The candidate with the lowest create revision leads. Any other waits for the key just
 *      before its own (the largest lower create revision) to be deleted, then looks again: a
 *      deleted predecessor may not have been the leader, and waiting only on it (not on the
 *      leader) avoids a herd waking at every change.
 *   3. A key vanishes when its lease ends (resign, revoke, expiry, close), so a dead leader's
 *      place frees itself.
 *   4. The fencing token is the leader's create revision: later leaders hold larger ones, and
 *      the guard `createRevision(key) == token` stops holding the moment the key is deleted, so
 *      a deposed leader's guarded transactions fail even if it does not know it was deposed.
 */
import { MetadataStoreError, isMetadataStoreError } from './errors';
import type {
  CampaignOptions,
  Compare,
  KeyValue,
  Lease,
  Leadership,
  MetadataStore,
} from './metadata-store';

export async function campaign(
  store: MetadataStore,
  electionPrefix: string,
  options: CampaignOptions,
): Promise<Leadership> {
  if (!Number.isSafeInteger(options.leaseTtlMs) || options.leaseTtlMs <= 0) {
    throw new MetadataStoreError(
      'METADATA_STORE_INVALID_REQUEST',
      `leaseTtlMs must be a positive integer, got ${options.leaseTtlMs}`,
    );
  }
  throwIfAborted(options.signal);
  const lease = await store.grantLease(options.leaseTtlMs);
  try {
    const key = `${electionPrefix}${lease.id.toString(16)}`;
    const created = await store.transaction({
      compares: [{ key, kind: 'absent' }],
      success: [{ kind: 'put', key, value: Buffer.from(options.candidate), lease: lease.id }],
    });
    if (!created.succeeded) {
      throw new MetadataStoreError(
        'METADATA_STORE_INVALID_REQUEST',
        `election key ${key} already exists: a campaign's transaction sent again after its ` +
          `first attempt applied unanswered (etcd-metadata-store.ts), or a foreign write; the ` +
          `lease is revoked and the campaign may start again`,
      );
    }
    // The transaction created the key, so the key's create revision is the transaction's.
    const fencingToken = created.revision;
    await waitUntilFirstInLine(store, electionPrefix, key, fencingToken, lease, options.signal);
    return new ElectionLeadership(key, fencingToken, lease);
  } catch (error) {
    await lease.revoke().catch(() => undefined);
    throw error;
  }
}

/** The candidate with the lowest create revision under the prefix, if any. */
export async function readLeader(
  store: MetadataStore,
  electionPrefix: string,
): Promise<{ candidate: string; fencingToken: bigint } | undefined> {
  const { entries } = await store.getPrefix(electionPrefix);
  let leader: KeyValue | undefined;
  for (const entry of entries) {
    if (leader === undefined || entry.createRevision < leader.createRevision) leader = entry;
  }
  return leader === undefined
    ? undefined
    : { candidate: leader.value.toString('utf8'), fencingToken: leader.createRevision };
}

class ElectionLeadership implements Leadership {
  readonly guard: Compare;

  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    readonly lease: Lease,
  ) {
    this.guard = { kind: 'createRevision', key, equals: fencingToken };
  }

  /** Ends the campaign's lease: the election key (and any key bound to the lease) goes with it. */
  resign(): Promise<void> {
    return this.lease.revoke();
  }
}

/** Step 2 of the recipe: returns once no live candidate has a lower create revision. */
async function waitUntilFirstInLine(
  store: MetadataStore,
  electionPrefix: string,
  key: string,
  fencingToken: bigint,
  lease: Lease,
  signal: AbortSignal | undefined,
): Promise<void> {
  const interruption = new Interruption();
  lease.onLost(() => interruption.fire(leaseLost(key)));
  const onAbort = (): void => interruption.fire(aborted(signal));
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted === true) onAbort();
  try {
    for (;;) {
      interruption.throwIfFired();
      const { entries, revision } = await store.getPrefix(electionPrefix);
      const own = entries.find((entry) => entry.key === key);
      if (own === undefined || own.createRevision !== fencingToken) throw leaseLost(key);
      let predecessor: KeyValue | undefined;
      for (const entry of entries) {
        if (entry.createRevision >= fencingToken) continue;
        if (predecessor === undefined || entry.createRevision > predecessor.createRevision) {
          predecessor = entry;
        }
      }
      if (predecessor === undefined) return;
      await waitForDelete(store, predecessor.key, revision, interruption.fired);
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Resolves when the key is deleted after `afterRevision`, or when the store forgot the
 * revisions needed to tell (the caller re-reads either way); rejects when interrupted.
 */
async function waitForDelete(
  store: MetadataStore,
  key: string,
  afterRevision: bigint,
  interrupted: Promise<never>,
): Promise<void> {
  let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const deleted = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  deleted.catch(() => undefined);
  const watch = await store.watchPrefix(key, afterRevision, {
    onEvents: (events) => {
      if (events.some((event) => event.kind === 'delete' && event.key === key)) settle?.resolve();
    },
    onError: (error) =>
      isMetadataStoreError(error, 'WATCH_COMPACTED') ? settle?.resolve() : settle?.reject(error),
  });
  try {
    await Promise.race([deleted, interrupted]);
  } finally {
    await watch.cancel();
  }
}

/** The first reason a wait must stop (lease lost, aborted), as a value and as a rejection. */
class Interruption {
  private reason: Error | undefined;
  private rejectFired: ((error: Error) => void) | undefined;
  readonly fired: Promise<never>;

  constructor() {
    this.fired = new Promise<never>((_resolve, reject) => (this.rejectFired = reject));
    this.fired.catch(() => undefined);
  }

  fire(reason: Error): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.rejectFired?.(reason);
  }

  throwIfFired(): void {
    if (this.reason !== undefined) throw this.reason;
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw aborted(signal);
}

function aborted(signal: AbortSignal | undefined): MetadataStoreError {
  return new MetadataStoreError('CAMPAIGN_ABORTED', 'the campaign was aborted before it won', {
    cause: signal?.reason,
  });
}

function leaseLost(key: string): MetadataStoreError {
  return new MetadataStoreError(
    'LEASE_LOST',
    `the campaign's lease ended while waiting, so its election key ${key} is gone`,
  );
}
