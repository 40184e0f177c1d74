import { CatalogError, type ErrorCode } from '@spool/errors';

/**
 * Operating errors of the data port's codecs and client: a frame that does not parse or breaks a
 * bound, a version this side does not speak, a connection that failed or timed out (the record
 * format's own errors are @spool/record-batch's RecordBatchError). Each carries a stable `code`
 * of the error catalog, whether the same request may succeed if sent again (`retriable`, as the
 * catalog classifies the code: CORRUPT_MESSAGE and the network failures are, the others describe
 * the request itself), and the `cause` (CatalogError, @spool/errors, says why it is not a
 * SpoolError).
 */
export const ProtocolErrorCode = {
  /** A response's bytes are damaged (a length that overruns the frame, a bad field). */
  CorruptMessage: 'CORRUPT_MESSAGE',
  /** A frame larger than the bound of its direction. */
  MessageTooLarge: 'MESSAGE_TOO_LARGE',
  /** An API key or version of the data port that this side does not speak. */
  UnsupportedVersion: 'UNSUPPORTED_VERSION',
  /** A data-port request that does not parse or breaks a bound (Kafka's InvalidRequestException). */
  InvalidRequest: 'INVALID_REQUEST',
  /** The connection to a data port failed or closed before the response arrived. */
  NetworkException: 'NETWORK_EXCEPTION',
  /** No response arrived within the request's timeout; the connection was closed. */
  RequestTimedOut: 'REQUEST_TIMED_OUT',
  /** A data-port client already has its bound of requests in flight on its connection. */
  InFlightRequestsFull: 'IN_FLIGHT_REQUESTS_FULL',
} as const satisfies Record<string, ErrorCode>;

export type ProtocolErrorCode = (typeof ProtocolErrorCode)[keyof typeof ProtocolErrorCode];

export class ProtocolError extends CatalogError<ProtocolErrorCode> {}
