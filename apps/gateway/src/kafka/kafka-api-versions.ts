/**
 * ApiVersions: the APIs and versions this listener serves, exactly the dispatcher's table, so a
 * client never sends a request it will not get an answer to. A version of ApiVersions itself
 * that is not served is answered by the dispatcher (v0, UNSUPPORTED_VERSION).
 */
import {
  type ApiVersionsRequest,
  type ApiVersionsResponse,
  defaultApiVersionsResponse,
  readApiVersionsRequest,
  writeApiVersionsResponse,
} from '@spool/kafka-protocol';
import { apiVersionsApiKey, type KafkaApi, type KafkaApiDispatcher } from './kafka-api-dispatcher';

export function apiVersionsApi(
  dispatcher: KafkaApiDispatcher,
): KafkaApi<ApiVersionsRequest, ApiVersionsResponse> {
  return {
    apiKey: apiVersionsApiKey,
    minVersion: 0,
    maxVersion: 4,
    read: readApiVersionsRequest,
    write: writeApiVersionsResponse,
    serve: async () => ({
      ...defaultApiVersionsResponse(),
      errorCode: 0,
      apiKeys: dispatcher.servedVersions().map((served) => ({ ...served })),
    }),
  };
}
