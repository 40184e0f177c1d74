// Operating errors of the segment store: the one place that lists which codes it reports. Each
// code is stable (the gRPC layer maps it to a status, the client shows it) and comes from the
// error catalog, which says once whether the same request may succeed if simply retried.
// Programmer errors are not here: they are assertions and crash the process.
import { SpoolError } from '@spool/common';
import type { ErrorCode } from '@spool/errors';

/**
 * Every code the segment store reports. What each means and whether a retry of the same request
 * can succeed is written once, in the error catalog (@spool/errors).
 */
export type SegmentStoreErrorCode = Extract<
  ErrorCode,
  | 'KAFKA_STORAGE_ERROR'
  | 'CORRUPT_MESSAGE'
  | 'OFFSET_OUT_OF_RANGE'
  | 'FILE_TRUNCATED'
  | 'NETWORK_EXCEPTION'
  | 'TRANSFER_QUEUE_FULL'
  | 'INVALID_RECORD'
  | 'RECORD_BATCH_TOO_LARGE'
  | 'UNEXPECTED_APPEND_OFFSET'
  | 'INVALID_CONFIG'
>;

export interface SegmentStoreErrorOptions {
  readonly cause?: unknown;
  /** The file the error is about, when there is one; corruption errors must name it. */
  readonly filePath?: string;
}

/** The base of the segment store's errors; `retriable` follows from the code, never the caller. */
export class SegmentStoreError extends SpoolError {
  override readonly name: string = 'SegmentStoreError';
  declare readonly code: SegmentStoreErrorCode;
  readonly filePath: string | undefined;

  constructor(
    code: SegmentStoreErrorCode,
    message: string,
    options: SegmentStoreErrorOptions = {},
  ) {
    super(code, message, { cause: options.cause });
    this.filePath = options.filePath;
  }
}

/**
 * A segment file is shorter than the end of a slice read from it: it was truncated (for example
 * by a follower's `truncateTo`) between the read and the transfer, as Kafka's
 * `FileRecords.writeTo` reports it.
 */
export class FileTruncatedError extends SegmentStoreError {
  override readonly name: string = 'FileTruncatedError';
  override readonly filePath: string;
  readonly position: number;
  readonly sizeBytes: number;
  readonly fileSizeBytes: number;

  constructor(
    filePath: string,
    slice: { readonly position: number; readonly sizeBytes: number },
    fileSizeBytes: number,
  ) {
    const endPosition = slice.position + slice.sizeBytes;
    super(
      'FILE_TRUNCATED',
      `Segment file ${filePath} is ${fileSizeBytes} bytes, shorter than the end ${endPosition} ` +
        `of the slice at position ${slice.position} of ${slice.sizeBytes} bytes: ` +
        'it was truncated after the slice was read',
      { filePath },
    );
    this.filePath = filePath;
    this.position = slice.position;
    this.sizeBytes = slice.sizeBytes;
    this.fileSizeBytes = fileSizeBytes;
  }
}

/** A read or DeleteRecords outside [log start offset, log end offset] (Kafka's OFFSET_OUT_OF_RANGE). */
export class OffsetOutOfRangeError extends SegmentStoreError {
  override readonly name: string = 'OffsetOutOfRangeError';

  constructor(
    directory: string,
    readonly offset: bigint,
    readonly logStartOffset: bigint,
    readonly logEndOffset: bigint,
  ) {
    super(
      'OFFSET_OUT_OF_RANGE',
      `offset ${offset} is outside the log ${directory}, which holds offsets ${logStartOffset} ` +
        `up to (not including) ${logEndOffset}`,
    );
  }
}

/**
 * A file-system failure as Kafka reports it (KAFKA_STORAGE_ERROR, retriable): a full disk, an
 * I/O error. The cause keeps the errno.
 */
export function storageError(
  message: string,
  cause: unknown,
  filePath?: string,
): SegmentStoreError {
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new SegmentStoreError(
    'KAFKA_STORAGE_ERROR',
    errno === undefined ? message : `${message}: ${errno}`,
    { cause, ...(filePath === undefined ? {} : { filePath }) },
  );
}
