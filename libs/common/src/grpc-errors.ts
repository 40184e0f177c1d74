import {
  Metadata,
  status as GrpcStatus,
  type ServiceError,
  type StatusObject,
} from '@grpc/grpc-js';
import {
  CommonErrorCode,
  SpoolError,
  grpcStatusForCode,
  isCodedError,
  retriableGrpcStatuses,
} from './errors';
import { encodeStatusDetails, statusDetailsMetadataKey } from './grpc-status-details';

/**
 * Our typed errors on the wire. The gRPC status says what class of failure it was; the trailing
 * metadata carries the exact Kafka-style code and whether to retry, so a client rebuilds the
 * same SpoolError the server threw. The same facts travel in the standard status details too
 * (grpc-status-details-bin, a google.rpc.ErrorInfo), for clients in other languages.
 */
export const errorCodeMetadataKey = 'spool-error-code';
export const retriableMetadataKey = 'spool-retriable';
const detailMetadataPrefix = 'spool-detail-';

export function toGrpcStatus(error: unknown): Partial<StatusObject> {
  const metadata = new Metadata();
  if (isCodedError(error)) {
    metadata.set(errorCodeMetadataKey, error.code);
    metadata.set(retriableMetadataKey, String(error.retriable));
    const details = (error as Partial<SpoolError>).details ?? {};
    for (const [name, value] of Object.entries(details)) {
      metadata.set(
        `${detailMetadataPrefix}${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`,
        value,
      );
    }
    const code = grpcStatusForCode(error.code, error.retriable);
    const message = `${error.code}: ${error.message}`;
    metadata.set(
      statusDetailsMetadataKey,
      encodeStatusDetails(code, message, error.code, {
        retriable: String(error.retriable),
        ...details,
      }),
    );
    return { code, details: message, metadata };
  }
  metadata.set(errorCodeMetadataKey, CommonErrorCode.Unknown);
  metadata.set(retriableMetadataKey, 'false');
  const message = `${CommonErrorCode.Unknown}: ${error instanceof Error ? error.message : String(error)}`;
  metadata.set(
    statusDetailsMetadataKey,
    encodeStatusDetails(GrpcStatus.INTERNAL, message, CommonErrorCode.Unknown, {
      retriable: 'false',
    }),
  );
  return { code: GrpcStatus.INTERNAL, details: message, metadata };
}

/** Rebuilds a SpoolError from a failed call, whether or not the peer was a Spool server. */
export function fromGrpcError(error: ServiceError): SpoolError {
  const code = error.metadata?.get(errorCodeMetadataKey)[0];
  const retriable = error.metadata?.get(retriableMetadataKey)[0];
  if (typeof code === 'string') {
    const prefix = `${code}: `;
    const message = error.details.startsWith(prefix)
      ? error.details.slice(prefix.length)
      : error.details;
    const details: Record<string, string> = {};
    for (const [key, values] of Object.entries(error.metadata.getMap())) {
      if (!key.startsWith(detailMetadataPrefix) || typeof values !== 'string') continue;
      const name = key
        .slice(detailMetadataPrefix.length)
        .replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
      details[name] = values;
    }
    return new SpoolError(code, message, {
      retriable: retriable === 'true',
      cause: error,
      details,
    });
  }
  if (error.code === GrpcStatus.DEADLINE_EXCEEDED) {
    return new SpoolError(CommonErrorCode.RequestTimedOut, error.details || 'deadline exceeded', {
      retriable: true,
      cause: error,
    });
  }
  return new SpoolError(
    retriableGrpcStatuses.has(error.code) ? CommonErrorCode.Unavailable : CommonErrorCode.Unknown,
    `${GrpcStatus[error.code] ?? error.code}: ${error.details || error.message}`,
    { retriable: retriableGrpcStatuses.has(error.code), cause: error },
  );
}
