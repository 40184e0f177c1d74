/**
 * Operating errors of the wire formats: a batch that fails its CRC, a record that does not
 * parse, a batch over the size limit. Each carries a stable `code` in Kafka's vocabulary, whether
 * the same request may succeed if sent again (`retriable`), and the `cause`. This lib depends on
 * nothing of ours, so it does not extend `SpoolError`; `libs/common` recognises any error with a
 * string `code` and a boolean `retriable` and maps it to a gRPC status.
 */
export const ProtocolErrorCode = {
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
  /** A data-port request that does not parse or breaks a bound (Kafka's InvalidRequestException). */
  InvalidRequest: 'INVALID_REQUEST',
  /** The connection to a data port failed or closed before the response arrived. */
  NetworkException: 'NETWORK_EXCEPTION',
  /** No response arrived within the request's timeout; the connection was closed. */
  RequestTimedOut: 'REQUEST_TIMED_OUT',
  /** A data-port client already has its bound of requests in flight on its connection. */
  InFlightRequestsFull: 'IN_FLIGHT_REQUESTS_FULL',
} as const;

export type ProtocolErrorCode = (typeof ProtocolErrorCode)[keyof typeof ProtocolErrorCode];

/**
 * Kafka's classification: CorruptRecordException is a RetriableException, because bytes damaged
 * on the way may arrive intact when the producer sends them again. The others describe the
 * request itself, which will fail the same way every time.
 */
const retriableByCode: Readonly<Record<ProtocolErrorCode, boolean>> = {
  CORRUPT_MESSAGE: true,
  INVALID_RECORD: false,
  MESSAGE_TOO_LARGE: false,
  UNSUPPORTED_VERSION: false,
  UNSUPPORTED_COMPRESSION_TYPE: false,
  INVALID_REQUEST: false,
  // A new connection may reach the peer; Kafka's NetworkException is retriable.
  NETWORK_EXCEPTION: true,
  // As Kafka's RequestTimedOutException: the peer may answer in time on a new connection.
  REQUEST_TIMED_OUT: true,
  // The caller may send again once a response has arrived, or on another connection.
  IN_FLIGHT_REQUESTS_FULL: true,
};

export class ProtocolError extends Error {
  readonly code: ProtocolErrorCode;
  readonly retriable: boolean;

  constructor(code: ProtocolErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProtocolError';
    this.code = code;
    this.retriable = retriableByCode[code];
  }
}
