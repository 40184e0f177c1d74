// Decodes a whole request frame of the data port (layout in data-port-layout.ts): the header,
// the check that this server speaks its apiKey and version, then the body of that API.
import assert from 'node:assert/strict';
import { ProtocolError, ProtocolErrorCode } from '../errors';
import { readApiVersionsRequestBody } from './api-versions-codec';
import {
  dataPortApiNames,
  DataPortApiKey,
  dataPortSupportedApiVersions,
  requestHeaderBytes,
} from './data-port-layout';
import { type DataPortFetchRequest, readFetchRequestBody } from './fetch-codec';
import { FrameReader } from './frame-reader';
import {
  type DataPortOffsetForLeaderEpochRequest,
  readOffsetForLeaderEpochRequestBody,
} from './offset-for-leader-epoch-codec';

export interface DataPortRequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
}

interface RequestOf<ApiKey extends DataPortApiKey, Body> extends DataPortRequestHeader {
  readonly apiKey: ApiKey;
  readonly body: Body;
}

/** A decoded request; narrow it by `apiKey`. */
export type DataPortRequest =
  | RequestOf<typeof DataPortApiKey.ApiVersions, undefined>
  | RequestOf<typeof DataPortApiKey.Fetch, DataPortFetchRequest>
  | RequestOf<typeof DataPortApiKey.OffsetForLeaderEpoch, DataPortOffsetForLeaderEpochRequest>;

/**
 * Reads only the header of a request frame (sizeBytes included), so a server can answer with
 * the request's correlationId even when its body turns out to be malformed.
 */
export function decodeDataPortRequestHeader(frame: Buffer): DataPortRequestHeader {
  return readHeader(new FrameReader(frame, 'request', 'request frame', requestHeaderBytes));
}

/**
 * Decodes a whole request frame (sizeBytes included). Throws a ProtocolError: INVALID_REQUEST
 * for bytes that do not follow the layout, UNSUPPORTED_VERSION for an apiKey or apiVersion
 * this code does not speak.
 */
export function decodeDataPortRequest(frame: Buffer): DataPortRequest {
  const reader = new FrameReader(frame, 'request', 'request frame', requestHeaderBytes);
  const header = readHeader(reader);
  const { apiKey, apiVersion, correlationId } = header;
  ensureSupported(header);
  reader.frameName = `${nameOf(apiKey)} v${apiVersion} request (correlationId ${correlationId})`;
  switch (apiKey) {
    case DataPortApiKey.ApiVersions:
      readApiVersionsRequestBody(reader);
      return { apiKey, apiVersion, correlationId, body: undefined };
    case DataPortApiKey.Fetch:
      return {
        apiKey,
        apiVersion,
        correlationId,
        body: readFetchRequestBody(reader, apiVersion),
      };
    case DataPortApiKey.OffsetForLeaderEpoch:
      return {
        apiKey,
        apiVersion,
        correlationId,
        body: readOffsetForLeaderEpochRequestBody(reader),
      };
    default:
      // ensureSupported lets through only the keys above.
      return assert.fail(`apiKey ${apiKey} passed the support check without a decoder`);
  }
}

function readHeader(reader: FrameReader): DataPortRequestHeader {
  const apiKey = reader.u16('apiKey');
  const apiVersion = reader.u16('apiVersion');
  const correlationId = reader.u32('correlationId');
  return { apiKey, apiVersion, correlationId };
}

function ensureSupported(header: DataPortRequestHeader): void {
  const supported = dataPortSupportedApiVersions.find((api) => api.apiKey === header.apiKey);
  if (supported === undefined) {
    throw new ProtocolError(
      ProtocolErrorCode.UnsupportedVersion,
      `apiKey ${header.apiKey} at byte 4 (correlationId ${header.correlationId}) is not an ` +
        'API of the data port; send API_VERSIONS (apiKey 0) to list them',
    );
  }
  if (header.apiVersion < supported.minVersion || header.apiVersion > supported.maxVersion) {
    throw new ProtocolError(
      ProtocolErrorCode.UnsupportedVersion,
      `${nameOf(header.apiKey)} version ${header.apiVersion} at byte 6 (correlationId ` +
        `${header.correlationId}) is not supported; this server speaks versions ` +
        `${supported.minVersion} to ${supported.maxVersion}`,
    );
  }
}

function nameOf(apiKey: number): string {
  return dataPortApiNames[apiKey as DataPortApiKey] ?? `apiKey ${apiKey}`;
}
