// The ERROR response (apiKey 0xFFFF) of the data port: the server's answer to a frame it cannot
// serve (malformed, over its bound, an unknown apiKey or version), sent right before it closes
// that connection. Byte layout in data-port-layout.ts.
import { dataPortErrorApiKey, errorCodeBytesMax, errorMessageBytesMax } from './data-port-layout';
import type { FrameReader } from './frame-reader';
import { startResponseFrame, truncateUtf8 } from './frame-writer';

export interface DataPortErrorResponse {
  /** A ProtocolError code: INVALID_REQUEST, UNSUPPORTED_VERSION. */
  readonly errorCode: string;
  readonly errorMessage: string;
}

/** Error messages longer than errorMessageBytesMax are cut. */
export function encodeErrorResponse(correlationId: number, error: DataPortErrorResponse): Buffer {
  return startResponseFrame(correlationId, dataPortErrorApiKey)
    .string(error.errorCode, errorCodeBytesMax)
    .string(truncateUtf8(error.errorMessage, errorMessageBytesMax), errorMessageBytesMax)
    .finish();
}

export function readErrorResponseBody(reader: FrameReader): DataPortErrorResponse {
  const errorCode = reader.string('errorCode', errorCodeBytesMax);
  const errorMessage = reader.string('errorMessage', errorMessageBytesMax);
  reader.ensureEnd();
  return { errorCode, errorMessage };
}
