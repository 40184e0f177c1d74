// API_VERSIONS (apiKey 0) v0 of the data port: which APIs and versions a server speaks, so a
// client can check before it sends (Kafka's ApiVersions). Byte layout in data-port-layout.ts.
import { type DataPortApiVersion, DataPortApiKey } from './data-port-layout';
import type { FrameReader } from './frame-reader';
import { startRequestFrame, startResponseFrame } from './frame-writer';

/** The version of API_VERSIONS this codec writes and reads. */
export const apiVersionsApiVersion = 0;

export interface DataPortApiVersionsResponse {
  readonly apis: readonly DataPortApiVersion[];
}

/** apiKey, minVersion, maxVersion. */
const apiVersionBytes = 2 + 2 + 2;
/** The apiKey space is a u16: a server cannot list more. */
const apisMax = 0x10000;

export function encodeApiVersionsRequest(correlationId: number): Buffer {
  return startRequestFrame(
    DataPortApiKey.ApiVersions,
    apiVersionsApiVersion,
    correlationId,
  ).finish();
}

export function readApiVersionsRequestBody(reader: FrameReader): void {
  reader.ensureEnd();
}

export function encodeApiVersionsResponse(
  correlationId: number,
  response: DataPortApiVersionsResponse,
): Buffer {
  const writer = startResponseFrame(correlationId, DataPortApiKey.ApiVersions).u32(
    response.apis.length,
  );
  for (const api of response.apis) {
    writer.u16(api.apiKey).u16(api.minVersion).u16(api.maxVersion);
  }
  return writer.finish();
}

export function readApiVersionsResponseBody(reader: FrameReader): DataPortApiVersionsResponse {
  const count = reader.count('apis', apiVersionBytes, apisMax);
  const apis: DataPortApiVersion[] = [];
  for (let index = 0; index < count; index++) {
    const field = `apis[${index}]`;
    const apiKey = reader.u16(`${field}.apiKey`);
    const minVersion = reader.u16(`${field}.minVersion`);
    const maxVersionPosition = reader.position;
    const maxVersion = reader.u16(`${field}.maxVersion`);
    if (maxVersion < minVersion) {
      reader.fail(
        `${field}.maxVersion`,
        maxVersionPosition,
        `is ${maxVersion}, below minVersion ${minVersion}`,
      );
    }
    apis.push({ apiKey, minVersion, maxVersion });
  }
  reader.ensureEnd();
  return { apis };
}
