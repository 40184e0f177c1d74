import { CatalogError, type ErrorCode } from '@spool/errors';

/**
 * Operating errors of Kafka's wire protocol: bytes that do not parse as the message they claim to
 * be, a message that cannot be written at the version asked for, a message over the writer's
 * bound. Each names the field (`Message.field`) and, when reading, the byte offset where it went
 * wrong. A listener answers them as Kafka does: a request that does not parse closes the
 * connection (Kafka's broker logs InvalidRequestException and does the same), a version the
 * schema lacks gets UNSUPPORTED_VERSION.
 */
export const KafkaProtocolErrorCode = {
  /** The bytes are truncated or malformed: a length past the end, a null where none is allowed. */
  InvalidRequest: 'INVALID_REQUEST',
  /** A version outside the schema's, or a field the version lacks holding a non-default value. */
  UnsupportedVersion: 'UNSUPPORTED_VERSION',
  /** The message would be larger than the writer's bound. */
  MessageTooLarge: 'MESSAGE_TOO_LARGE',
} as const satisfies Record<string, ErrorCode>;

export type KafkaProtocolErrorCode =
  (typeof KafkaProtocolErrorCode)[keyof typeof KafkaProtocolErrorCode];

export class KafkaProtocolError extends CatalogError<KafkaProtocolErrorCode> {
  /** The field being read or written, as `Message.field` (`ProduceRequest.topicData`). */
  readonly field: string;
  /** The byte offset in the input where reading failed; undefined for write errors. */
  readonly offset: number | undefined;

  constructor(
    code: KafkaProtocolErrorCode,
    field: string,
    message: string,
    offset?: number,
    options: { cause?: unknown } = {},
  ) {
    super(
      code,
      `${field}: ${message}${offset === undefined ? '' : ` (at byte ${offset})`}`,
      options,
    );
    this.field = field;
    this.offset = offset;
  }
}

/** The error a writer throws when a field the version lacks holds a non-default value. */
export function unsupportedFieldError(field: string, version: number): KafkaProtocolError {
  return new KafkaProtocolError(
    KafkaProtocolErrorCode.UnsupportedVersion,
    field,
    `holds a non-default value, which version ${version} cannot carry`,
  );
}

/** The error a writer throws when a field that is not nullable at this version holds null. */
export function nullFieldError(field: string, version: number): KafkaProtocolError {
  return new KafkaProtocolError(
    KafkaProtocolErrorCode.InvalidRequest,
    field,
    `is null, which version ${version} does not allow`,
  );
}

/** The error a read or write function throws for a version outside the schema's range. */
export function unsupportedVersionError(
  messageName: string,
  version: number,
  lowest: number,
  highest: number,
): KafkaProtocolError {
  return new KafkaProtocolError(
    KafkaProtocolErrorCode.UnsupportedVersion,
    messageName,
    `version ${version} is outside the schema's versions ${lowest} to ${highest}`,
  );
}

/**
 * `error` as a KafkaProtocolError: itself if it is one, else (a RangeError from a Buffer write of a
 * value that does not fit its field, a TypeError from a value of the wrong type) wrapped, so that
 * a codec never throws anything else.
 */
export function asKafkaProtocolError(error: unknown, messageName: string): KafkaProtocolError {
  if (error instanceof KafkaProtocolError) return error;
  return new KafkaProtocolError(
    KafkaProtocolErrorCode.InvalidRequest,
    messageName,
    `a value does not fit its field: ${error instanceof Error ? error.message : String(error)}`,
    undefined,
    { cause: error },
  );
}
