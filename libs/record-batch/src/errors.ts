import { CatalogError, type ErrorCode } from '@spool/errors';

/**
 * Operating errors of the RecordBatch format: a batch that fails its CRC, a record that does not
 * parse, a batch over the size limit, a codec this process does not have. Each carries a stable
 * `code` of the error catalog, whether the same request may succeed if sent again (`retriable`,
 * as the catalog classifies the code: CORRUPT_MESSAGE is, the others describe the batch itself),
 * and the `cause` (CatalogError, @spool/errors, says why it is not a SpoolError).
 */
export const RecordBatchErrorCode = {
  /** The bytes are damaged (CRC mismatch, a length that overruns the buffer, a bad magic). */
  CorruptMessage: 'CORRUPT_MESSAGE',
  /** The bytes are intact but break a rule of the format (record count, offsets, structure). */
  InvalidRecord: 'INVALID_RECORD',
  /** The batch is larger than the configured maximum. */
  MessageTooLarge: 'MESSAGE_TOO_LARGE',
  /** An older message format (magic 0 or 1) that Spool does not accept. */
  UnsupportedVersion: 'UNSUPPORTED_VERSION',
  /** A compression codec that is unknown or not registered in this process. */
  UnsupportedCompressionType: 'UNSUPPORTED_COMPRESSION_TYPE',
} as const satisfies Record<string, ErrorCode>;

export type RecordBatchErrorCode = (typeof RecordBatchErrorCode)[keyof typeof RecordBatchErrorCode];

export class RecordBatchError extends CatalogError<RecordBatchErrorCode> {}
