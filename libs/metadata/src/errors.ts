// Operating errors of the metadata store: the one place that lists their codes. Each code is
// stable (the controller acts on it, the gRPC layer maps it, the CLI shows it) and says once
// whether the same call may succeed if simply retried. Programmer errors are not here: they are
// assertions and crash the process.
import { SpoolError } from '@spool/common';

/**
 * Every code the metadata store reports, with whether a retry of the same call can succeed.
 * To add a code: add a line here with a one-line reason; the type below follows.
 */
const retriableByCode = {
  // etcd did not answer in time or no endpoint was reachable; the call may or may not have
  // taken effect (a write must be re-read before it is retried blindly).
  METADATA_STORE_UNAVAILABLE: true,
  // The store was closed by its owner; nothing on this instance will succeed again.
  METADATA_STORE_CLOSED: false,
  // The request breaks a rule of the store (duplicate key in a transaction, too many
  // operations, a value too large, a future revision); the same request fails again.
  METADATA_STORE_INVALID_REQUEST: false,
  // A watch asked for revisions the store no longer remembers; re-read, then watch again.
  WATCH_COMPACTED: false,
  // The lease ended (revoked, expired, or its owner closed); keys bound to it are gone.
  LEASE_LOST: false,
  // Another live process holds the local store's file.
  METADATA_STORE_LOCKED: false,
  // The local store's file holds bytes that pass their CRC but do not make sense, or its
  // header or snapshot is damaged; an operator must look at it.
  METADATA_STORE_CORRUPT: false,
  // Writing or syncing the local store's file failed; the store refuses further writes and
  // the process must reopen it (recovery cuts whatever half-written tail is left).
  METADATA_STORE_STORAGE_ERROR: false,
  // The caller's AbortSignal ended a campaign before it won.
  CAMPAIGN_ABORTED: false,
} as const satisfies Record<string, boolean>;

export type MetadataStoreErrorCode = keyof typeof retriableByCode;

/** The metadata store's errors; `retriable` follows from the code, never the caller. */
export class MetadataStoreError extends SpoolError {
  override readonly name: string = 'MetadataStoreError';
  declare readonly code: MetadataStoreErrorCode;

  constructor(code: MetadataStoreErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { retriable: retriableByCode[code], cause: options.cause });
  }
}

/** A watch from a revision older than the oldest one the store can replay. */
export class WatchCompactedError extends MetadataStoreError {
  override readonly name: string = 'WatchCompactedError';

  constructor(
    readonly afterRevision: bigint,
    /** The oldest revision the store can still replay; watch from it minus one or later. */
    readonly compactRevision: bigint,
    options: { cause?: unknown } = {},
  ) {
    super(
      'WATCH_COMPACTED',
      `cannot watch changes after revision ${afterRevision}: the store compacted its history ` +
        `up to revision ${compactRevision}; re-read and watch again`,
      options,
    );
  }
}

export function isMetadataStoreError(
  error: unknown,
  code?: MetadataStoreErrorCode,
): error is MetadataStoreError {
  return error instanceof MetadataStoreError && (code === undefined || error.code === code);
}
