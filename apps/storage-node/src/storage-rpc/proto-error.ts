import type { SpoolError } from '@spool/common';
import { isAssertionFailure } from '@spool/common';
import type { ProtoError } from '@spool/protocol';

/**
 * The error a partition result carries: typed errors keep their code; anything else is named. A
 * failed assertion is no answer: it is rethrown, and the gRPC server's wrapper stops the process.
 */
export function protoError(error: unknown): ProtoError {
  if (isAssertionFailure(error)) throw error;
  // A file-system error that escaped the segment store's wrapping (its code is an errno name
  // such as ENOSPC) is still a storage error: retriable, as Kafka's KAFKA_STORAGE_ERROR.
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).errno === 'number') {
    return {
      code: 'KAFKA_STORAGE_ERROR',
      message: `${(error as NodeJS.ErrnoException).code}: ${error.message}`,
      retriable: true,
    };
  }
  if (error instanceof Error && typeof (error as SpoolError).code === 'string') {
    const coded = error as SpoolError;
    return { code: coded.code, message: coded.message, retriable: coded.retriable === true };
  }
  return { code: 'UNKNOWN_SERVER_ERROR', message: String(error), retriable: false };
}
