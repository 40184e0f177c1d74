/**
 * The metadata store: where the active controller keeps the cluster's state, and how controllers
 * elect one of themselves. It plays ZooKeeper's role in Kafka's original design: leases are
 * ephemeral nodes (a key bound to a lease vanishes when its owner stops renewing it), prefix
 * watches are watchers, and transactions are the compare-and-set every state change goes through.
 *
 * Two backends implement it: `etcd` (production: replicated, highly available) and `local` (one
 * process, one durable file: the embedded default for a single machine). One contract test suite
 * runs against both.
 *
 * Revisions are the store's logical clock: every successful write gets the next revision, every
 * key remembers the revision that created it and the one that last modified it, and a watch can
 * resume from any revision the store still remembers.
 */

export interface KeyValue {
  readonly key: string;
  readonly value: Buffer;
  /** The revision of the write that created the key (a delete and re-create gives a new one). */
  readonly createRevision: bigint;
  /** The revision of the last write to the key. */
  readonly modRevision: bigint;
  /** Number of writes since the key was created, 1 after the create. */
  readonly version: bigint;
  /** The lease the key is bound to, 0n when none. */
  readonly lease: bigint;
}

/** One condition of a transaction; all must hold for its success operations to run. */
export type Compare =
  | { readonly key: string; readonly kind: 'absent' }
  | { readonly key: string; readonly kind: 'modRevision'; readonly equals: bigint }
  | { readonly key: string; readonly kind: 'createRevision'; readonly equals: bigint }
  | { readonly key: string; readonly kind: 'value'; readonly equals: Buffer };

export type Operation =
  | { readonly kind: 'put'; readonly key: string; readonly value: Buffer; readonly lease?: bigint }
  | { readonly kind: 'delete'; readonly key: string }
  | { readonly kind: 'deletePrefix'; readonly prefix: string };

export interface Transaction {
  readonly compares: readonly Compare[];
  readonly success: readonly Operation[];
  readonly failure?: readonly Operation[];
}

export interface TransactionResult {
  readonly succeeded: boolean;
  /** The store's revision after the transaction (unchanged when nothing was written). */
  readonly revision: bigint;
}

export type WatchEvent =
  | { readonly kind: 'put'; readonly keyValue: KeyValue }
  | { readonly kind: 'delete'; readonly key: string; readonly modRevision: bigint };

export interface Watch {
  /** Stops delivering events. */
  cancel(): Promise<void>;
}

export interface WatchHandlers {
  /** Events of one revision arrive together, in revision order, never twice. */
  readonly onEvents: (events: readonly WatchEvent[], revision: bigint) => void;
  /**
   * The watch ended and will not resume: the store forgot revisions it had to replay
   * (compaction), or the connection was lost for good. The owner re-reads and watches again.
   */
  readonly onError: (error: Error) => void;
}

export interface Lease {
  readonly id: bigint;
  readonly ttlMs: number;
  /** Whether the lease is still believed alive by this process (suspended included). */
  readonly alive: boolean;
  /**
   * Called once when the lease is over: the store says it is gone, it was revoked, or it stayed
   * suspended too long. Keys bound to it are gone.
   */
  onLost(listener: () => void): void;
  /**
   * Whether renewals have gone unanswered past the TTL (etcd-lease.ts, step 5): the store may
   * have expired the lease, or may still hold it (etcd electing a leader renews nothing). Its
   * holder must act as if its keys were gone until the lease resumes or is lost.
   */
  readonly suspended: boolean;
  /** Called each time the lease becomes suspended. */
  onSuspended(listener: () => void): void;
  /** Called each time a renewal answered proves a suspended lease alive, with how long it was. */
  onResumed(listener: (suspendedMs: number) => void): void;
  revoke(): Promise<void>;
}

/**
 * Leadership won in an election. The fencing token is the creation revision of the candidate's
 * election key: a later leader always holds a larger one, and `guard` is the transaction
 * condition that holds only while this leadership is the current one, so a deposed leader (paused
 * past its lease, partitioned) cannot write.
 */
export interface Leadership {
  readonly fencingToken: bigint;
  readonly guard: Compare;
  readonly lease: Lease;
  resign(): Promise<void>;
}

export interface CampaignOptions {
  /** Identifies this candidate; stored as the election key's value (e.g. its address). */
  readonly candidate: string;
  readonly leaseTtlMs: number;
  /** Aborts waiting for leadership. */
  readonly signal?: AbortSignal;
}

export interface MetadataStore {
  get(key: string): Promise<KeyValue | undefined>;
  /** Every key under the prefix, sorted by key, and the revision they were read at. */
  getPrefix(
    prefix: string,
  ): Promise<{ readonly entries: readonly KeyValue[]; readonly revision: bigint }>;
  put(key: string, value: Buffer, options?: { lease?: bigint }): Promise<bigint>;
  delete(key: string): Promise<bigint>;
  transaction(transaction: Transaction): Promise<TransactionResult>;
  /** Delivers every change under the prefix after `afterRevision`. */
  watchPrefix(prefix: string, afterRevision: bigint, handlers: WatchHandlers): Promise<Watch>;
  grantLease(ttlMs: number): Promise<Lease>;
  /**
   * Waits until this candidate is the leader of the election named by `electionPrefix` (the
   * oldest live candidate wins, as etcd's election recipe), then resolves with the leadership.
   */
  campaign(electionPrefix: string, options: CampaignOptions): Promise<Leadership>;
  /** The candidate currently leading the election, if any. */
  leader(electionPrefix: string): Promise<{ candidate: string; fencingToken: bigint } | undefined>;
  close(): Promise<void>;
}
