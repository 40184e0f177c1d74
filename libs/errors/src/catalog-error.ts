import { isRetriable, type ErrorCode } from './error-catalog';

/**
 * An operating error whose code is one of the catalog's: a stable `code`, whether the same request
 * may succeed if sent again (`retriable`, as the catalog classifies the code), and the `cause`.
 * The base libraries' own errors (the record format's, the data port's) extend it: they depend on
 * nothing of ours but the catalog, so they cannot extend `@spool/common`'s SpoolError, and
 * `libs/common` recognises any error with a string `code` and a boolean `retriable` and maps it to
 * a gRPC status.
 */
export class CatalogError<Code extends ErrorCode = ErrorCode> extends Error {
  readonly code: Code;
  readonly retriable: boolean;

  constructor(code: Code, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = isRetriable(code);
  }
}
