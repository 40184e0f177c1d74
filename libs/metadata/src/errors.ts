// Operating errors of the metadata store: the one place that lists which codes it reports. Each
// code is stable (the controller acts on it, the gRPC layer maps it, the CLI shows it) and comes
// from the error catalog, which says once whether the same call may succeed if simply retried.
// Programmer errors are not here: they are assertions and crash the process.
import { SpoolError } from '@spool/common';
import type { ErrorCode } from '@spool/errors';

/**
 * Every code the metadata store reports. What each means and whether a retry of the same call
 * can succeed is written once, in the error catalog (@spool/errors).
 */
export type MetadataStoreErrorCode = Extract<
  ErrorCode,
  | 'METADATA_STORE_UNAVAILABLE'
  | 'METADATA_STORE_CLOSED'
  | 'METADATA_STORE_INVALID_REQUEST'
  | 'WATCH_COMPACTED'
  | 'LEASE_LOST'
  | 'METADATA_STORE_LOCKED'
  | 'METADATA_STORE_CORRUPT'
  | 'METADATA_STORE_STORAGE_ERROR'
  | 'CAMPAIGN_ABORTED'
>;

/** The metadata store's errors; `retriable` follows from the code, never the caller. */
export class MetadataStoreError extends SpoolError {
  override readonly name: string = 'MetadataStoreError';
  declare readonly code: MetadataStoreErrorCode;

  constructor(code: MetadataStoreErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
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
