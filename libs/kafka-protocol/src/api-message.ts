import { apiMessages } from './generated/api-messages';
import type { KafkaReader } from './kafka-reader';
import type { KafkaWriter } from './kafka-writer';

/**
 * One API of Kafka's protocol as its schemas define it: the versions the schema ships (not what
 * Spool implements: a listener advertises the intersection), where flexible versions start, and
 * the request's and response's codecs. The generated table `apiMessages` holds one per API key.
 */
export interface ApiMessage<Request = unknown, Response = unknown> {
  readonly apiKey: number;
  /** ApiKeys' name without the Request suffix: Produce, Fetch, ApiVersions. */
  readonly name: string;
  /** The versions the schema ships (validVersions). */
  readonly validVersions: { readonly min: number; readonly max: number };
  /** The first flexible version, or null when no version is flexible. */
  readonly flexibleVersionsFrom: number | null;
  /** Whether the newest version is still under development (Kafka does not advertise it). */
  readonly latestVersionUnstable: boolean;
  /** Kafka's listeners that serve it: broker, controller. */
  readonly listeners: readonly string[];
  readRequest(reader: KafkaReader, version: number): Request;
  writeRequest(writer: KafkaWriter, message: Request, version: number): void;
  defaultRequest(): Request;
  readResponse(reader: KafkaReader, version: number): Response;
  writeResponse(writer: KafkaWriter, message: Response, version: number): void;
  defaultResponse(): Response;
}

const apiKeyControlledShutdown = 7;
const apiKeyApiVersions = 18;

/** Whether `version` of the API is flexible (compact encodings, tagged fields). */
export function isFlexibleVersion(api: ApiMessage, version: number): boolean {
  return api.flexibleVersionsFrom !== null && version >= api.flexibleVersionsFrom;
}

/**
 * The RequestHeader version a request of this API and version carries, as Kafka's ApiMessageType
 * decides: 2 for flexible versions, 1 otherwise, and 0 for ControlledShutdown v0 (which predates
 * the client id).
 */
export function requestHeaderVersion(api: ApiMessage, version: number): number {
  if (api.apiKey === apiKeyControlledShutdown && version === 0) return 0;
  return isFlexibleVersion(api, version) ? 2 : 1;
}

/**
 * The ResponseHeader version of the response: 1 for flexible versions, 0 otherwise, and always 0
 * for ApiVersions, so that a client can read the response of a broker that refused its version.
 */
export function responseHeaderVersion(api: ApiMessage, version: number): number {
  if (api.apiKey === apiKeyApiVersions) return 0;
  return isFlexibleVersion(api, version) ? 1 : 0;
}

const apiMessagesByKey = new Map<number, ApiMessage>(apiMessages.map((api) => [api.apiKey, api]));

/** The API with this key, or undefined for a key the schemas do not define. */
export function apiMessageOf(apiKey: number): ApiMessage | undefined {
  return apiMessagesByKey.get(apiKey);
}
