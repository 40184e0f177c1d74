// Decodes a whole response frame of the data port (layout in data-port-layout.ts): the header,
// then the body of the API it names, or of an ERROR response.
import {
  type DataPortApiVersionsResponse,
  readApiVersionsResponseBody,
} from './api-versions-codec';
import { DataPortApiKey, dataPortErrorApiKey, responseHeaderBytes } from './data-port-layout';
import { type DataPortErrorResponse, readErrorResponseBody } from './error-response-codec';
import {
  type DataPortFetchResponse,
  fetchApiVersionSessionless,
  readFetchResponseBody,
} from './fetch-codec';
import { FrameReader } from './frame-reader';
import {
  type DataPortOffsetForLeaderEpochResponse,
  readOffsetForLeaderEpochResponseBody,
} from './offset-for-leader-epoch-codec';

interface ResponseOf<ApiKey extends number, Body> {
  readonly correlationId: number;
  readonly apiKey: ApiKey;
  readonly body: Body;
}

/** A decoded response; narrow it by `apiKey` (0xFFFF for an ERROR response). */
export type DataPortResponse =
  | ResponseOf<typeof DataPortApiKey.ApiVersions, DataPortApiVersionsResponse>
  | ResponseOf<typeof DataPortApiKey.Fetch, DataPortFetchResponse>
  | ResponseOf<typeof DataPortApiKey.OffsetForLeaderEpoch, DataPortOffsetForLeaderEpochResponse>
  | ResponseOf<typeof dataPortErrorApiKey, DataPortErrorResponse>;

/**
 * Decodes a whole response frame (sizeBytes included); bytes that do not follow the layout
 * throw a ProtocolError CORRUPT_MESSAGE. Record bytes in the result are views into `frame`.
 * A FETCH response's layout depends on its request's version: `fetchApiVersion`.
 */
export function decodeDataPortResponse(
  frame: Buffer,
  fetchApiVersion = fetchApiVersionSessionless,
): DataPortResponse {
  const reader = new FrameReader(frame, 'response', 'response frame', responseHeaderBytes);
  const correlationId = reader.u32('correlationId');
  const apiKeyPosition = reader.position;
  const apiKey = reader.u16('apiKey');
  reader.frameName = `response (apiKey ${apiKey}, correlationId ${correlationId})`;
  switch (apiKey) {
    case DataPortApiKey.ApiVersions:
      return { correlationId, apiKey, body: readApiVersionsResponseBody(reader) };
    case DataPortApiKey.Fetch:
      return { correlationId, apiKey, body: readFetchResponseBody(reader, fetchApiVersion) };
    case DataPortApiKey.OffsetForLeaderEpoch:
      return { correlationId, apiKey, body: readOffsetForLeaderEpochResponseBody(reader) };
    case dataPortErrorApiKey:
      return { correlationId, apiKey, body: readErrorResponseBody(reader) };
    default:
      return reader.fail('apiKey', apiKeyPosition, 'is not an API of the data port');
  }
}
