/**
 * The local store's keys in memory, with etcd's bookkeeping: a store revision that every write
 * advances by one, and per key its create revision, mod revision, version and lease. It only
 * plans and applies changes; the store decides when a change is durable enough to apply.
 *
 * Transactions follow etcd's rules so that both backends accept and refuse the same requests:
 * at most `transactionOperationsMax` compares or operations per branch, no key written twice in
 * one branch (a put and a delete that overlap count), and a value compare on an absent key fails
 * while revision compares see an absent key as revision 0.
 */
import { assert, assertNever } from '@spool/common';
import { MetadataStoreError } from './errors';
import type { Compare, KeyValue, Operation, Transaction, WatchEvent } from './metadata-store';

/** etcd's default `--max-txn-ops`, so a transaction the local store accepts also fits etcd. */
export const transactionOperationsMax = 128;

/** etcd's default `--max-request-bytes` (1.5 MiB), for the same reason. */
export const transactionBytesMax = 1.5 * 1024 * 1024;

/** One write of a change, in the order the transaction listed it. */
export type KeyWrite =
  | { readonly kind: 'put'; readonly keyValue: KeyValue }
  | { readonly kind: 'delete'; readonly key: string };

/** Everything one revision changed: what the journal records and the watches deliver. */
export interface Change {
  readonly revision: bigint;
  readonly writes: readonly KeyWrite[];
}

export class KeySpace {
  private readonly keyValues = new Map<string, KeyValue>();
  private revisionValue: bigint;

  /** An empty store starts at revision 1, as etcd does. */
  constructor(revision = 1n, keyValues: readonly KeyValue[] = []) {
    assert(revision >= 1n, 'store revisions start at 1');
    this.revisionValue = revision;
    for (const keyValue of keyValues) {
      assert(keyValue.modRevision <= revision, 'a key cannot be newer than the store');
      this.keyValues.set(keyValue.key, keyValue);
    }
  }

  get revision(): bigint {
    return this.revisionValue;
  }

  get(key: string): KeyValue | undefined {
    return this.keyValues.get(key);
  }

  /** Every key under the prefix, sorted by the key's UTF-8 bytes as etcd sorts them. */
  range(prefix: string): KeyValue[] {
    const entries: KeyValue[] = [];
    for (const keyValue of this.keyValues.values()) {
      if (keyValue.key.startsWith(prefix)) entries.push(keyValue);
    }
    return entries.sort(compareKeyValues);
  }

  all(): KeyValue[] {
    return this.range('');
  }

  /** Keys bound to a lease: the given one, or any lease when `lease` is undefined. */
  keysBoundToLease(lease?: bigint): string[] {
    const keys: string[] = [];
    for (const keyValue of this.keyValues.values()) {
      if (keyValue.lease === 0n) continue;
      if (lease === undefined || keyValue.lease === lease) keys.push(keyValue.key);
    }
    return keys.sort(compareKeys);
  }

  compare(compare: Compare): boolean {
    const keyValue = this.keyValues.get(compare.key);
    switch (compare.kind) {
      case 'absent':
        return keyValue === undefined;
      case 'createRevision':
        return (keyValue?.createRevision ?? 0n) === compare.equals;
      case 'modRevision':
        return (keyValue?.modRevision ?? 0n) === compare.equals;
      case 'value':
        // etcd: "always fail if comparing a value on a key that doesn't exist".
        return keyValue !== undefined && keyValue.value.equals(compare.equals);
      default:
        return assertNever(compare, 'unknown compare kind');
    }
  }

  /**
   * The change the operations make at the next revision, or undefined when they write nothing
   * (only deletes of absent keys), which etcd does not count as a revision. `leaseIsAlive`
   * decides whether a put may bind a key to a lease.
   */
  planChange(
    operations: readonly Operation[],
    leaseIsAlive: (lease: bigint) => boolean,
  ): Change | undefined {
    const revision = this.revisionValue + 1n;
    const writes: KeyWrite[] = [];
    const deleted = new Set<string>();
    for (const operation of operations) {
      switch (operation.kind) {
        case 'put': {
          const lease = operation.lease ?? 0n;
          if (lease !== 0n && !leaseIsAlive(lease)) {
            throw new MetadataStoreError(
              'LEASE_LOST',
              `cannot bind key "${operation.key}" to lease ${lease}: the lease has ended`,
            );
          }
          const existing = this.keyValues.get(operation.key);
          writes.push({
            kind: 'put',
            keyValue: {
              key: operation.key,
              value: Buffer.from(operation.value),
              createRevision: existing?.createRevision ?? revision,
              modRevision: revision,
              version: (existing?.version ?? 0n) + 1n,
              lease,
            },
          });
          break;
        }
        case 'delete':
          if (this.keyValues.has(operation.key) && !deleted.has(operation.key)) {
            deleted.add(operation.key);
            writes.push({ kind: 'delete', key: operation.key });
          }
          break;
        case 'deletePrefix':
          for (const keyValue of this.range(operation.prefix)) {
            if (deleted.has(keyValue.key)) continue;
            deleted.add(keyValue.key);
            writes.push({ kind: 'delete', key: keyValue.key });
          }
          break;
        default:
          assertNever(operation, 'unknown operation kind');
      }
    }
    return writes.length === 0 ? undefined : { revision, writes };
  }

  /** Applies a planned (or replayed) change and returns the events it makes. */
  apply(change: Change): WatchEvent[] {
    assert(change.revision === this.revisionValue + 1n, 'changes apply in revision order');
    assert(change.writes.length > 0, 'a change writes at least one key');
    const events: WatchEvent[] = [];
    for (const write of change.writes) {
      if (write.kind === 'put') {
        assert(write.keyValue.modRevision === change.revision, 'a put carries its revision');
        this.keyValues.set(write.keyValue.key, write.keyValue);
        events.push({ kind: 'put', keyValue: write.keyValue });
      } else {
        assert(this.keyValues.delete(write.key), 'a delete removes a present key');
        events.push({ kind: 'delete', key: write.key, modRevision: change.revision });
      }
    }
    this.revisionValue = change.revision;
    return events;
  }
}

/**
 * Refuses what etcd refuses: an empty key, too many compares or operations, a key written twice
 * in one branch, a request too large. Runs before anything is evaluated, so a bad request never half-applies.
 */
export function validateTransaction(transaction: Transaction): void {
  const branches = [transaction.success, transaction.failure ?? []];
  if (transaction.compares.length > transactionOperationsMax) {
    throw invalid(`${transaction.compares.length} compares`);
  }
  const keys = [
    ...transaction.compares.map((compare) => compare.key),
    ...branches
      .flat()
      .map((operation) => (operation.kind === 'deletePrefix' ? '-' : operation.key)),
  ];
  if (keys.includes('')) {
    throw new MetadataStoreError('METADATA_STORE_INVALID_REQUEST', 'a key must not be empty');
  }
  let sizeBytes = 0;
  for (const branch of branches) {
    if (branch.length > transactionOperationsMax) throw invalid(`${branch.length} operations`);
    const putKeys = new Set<string>();
    const deletePrefixes: string[] = [];
    for (const operation of branch) {
      if (operation.kind === 'put') {
        if (putKeys.has(operation.key)) throw duplicate(operation.key);
        putKeys.add(operation.key);
        sizeBytes += Buffer.byteLength(operation.key) + operation.value.length;
      } else if (operation.kind === 'delete') {
        deletePrefixes.push(operation.key);
        sizeBytes += Buffer.byteLength(operation.key);
      } else {
        deletePrefixes.push(operation.prefix);
        sizeBytes += Buffer.byteLength(operation.prefix);
      }
    }
    for (const operation of branch) {
      if (operation.kind === 'put') continue;
      const overlaps = (key: string): boolean =>
        operation.kind === 'delete' ? key === operation.key : key.startsWith(operation.prefix);
      const overlapping = [...putKeys].find(overlaps);
      if (overlapping !== undefined) throw duplicate(overlapping);
    }
  }
  for (const compare of transaction.compares) {
    sizeBytes += Buffer.byteLength(compare.key);
    if (compare.kind === 'value') sizeBytes += compare.equals.length;
  }
  if (sizeBytes > transactionBytesMax) {
    throw new MetadataStoreError(
      'METADATA_STORE_INVALID_REQUEST',
      `transaction of ${sizeBytes} bytes is larger than ${transactionBytesMax} bytes`,
    );
  }
}

function invalid(what: string): MetadataStoreError {
  return new MetadataStoreError(
    'METADATA_STORE_INVALID_REQUEST',
    `transaction has ${what}, more than ${transactionOperationsMax} per branch`,
  );
}

function duplicate(key: string): MetadataStoreError {
  return new MetadataStoreError(
    'METADATA_STORE_INVALID_REQUEST',
    `transaction writes key "${key}" twice in one branch`,
  );
}

/** Orders keys by their UTF-8 bytes, which is etcd's order (UTF-16 order differs above U+FFFF). */
export function compareKeys(left: string, right: string): number {
  return Buffer.compare(Buffer.from(left), Buffer.from(right));
}

function compareKeyValues(left: KeyValue, right: KeyValue): number {
  return compareKeys(left.key, right.key);
}
