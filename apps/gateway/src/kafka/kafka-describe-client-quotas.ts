/**
 * DescribeClientQuotas (API 48): Spool has no client quotas (Kafka's producer_byte_rate,
 * consumer_byte_rate, request_percentage), so no entity has any and the answer lists none. It is
 * served because `kafka-configs --describe --entity-type users` asks it before it asks
 * DescribeUserScramCredentials, and fails whole without it. AlterClientQuotas is not served: a
 * client setting a quota learns that it cannot instead of believing it set.
 *
 * The filter is checked as Kafka checks it: entity types user, client-id and ip; match type 0
 * (an exact name, not null), 1 (the default, match null) or 2 (any name, match null); one
 * component per entity type; ip not combined with user or client-id. A bad filter is
 * INVALID_REQUEST with a message naming what was wrong. DESCRIBE_CONFIGS on the cluster is needed
 * (kafka-authorization.ts).
 */
import {
  ApiKey,
  type DescribeClientQuotasRequest,
  type DescribeClientQuotasResponse,
  defaultDescribeClientQuotasResponse,
  readDescribeClientQuotasRequest,
  writeDescribeClientQuotasResponse,
} from '@spool/kafka-protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { KafkaErrorNumber } from './kafka-errors';

const quotaEntityTypes = new Set(['user', 'client-id', 'ip']);
const matchExact = 0;
const matchDefault = 1;
const matchSpecified = 2;

/** What is wrong with the filter, or undefined when Kafka would accept it. */
export function clientQuotaFilterProblem(
  components: DescribeClientQuotasRequest['components'],
): string | undefined {
  const seen = new Set<string>();
  for (const component of components) {
    const { entityType, matchType, match } = component;
    if (!quotaEntityTypes.has(entityType)) {
      return `Custom entity type ${JSON.stringify(entityType)} not supported`;
    }
    if (seen.has(entityType)) return `Duplicate ${entityType} filter component entity type`;
    seen.add(entityType);
    if (matchType === matchExact && match === null) {
      return `Missing match for an exact ${entityType} filter component`;
    }
    if ((matchType === matchDefault || matchType === matchSpecified) && match !== null) {
      return (
        `Unexpected match for a ${matchType === matchDefault ? 'default' : 'specified'} ` +
        `${entityType} filter component`
      );
    }
    if (matchType !== matchExact && matchType !== matchDefault && matchType !== matchSpecified) {
      return `Unknown match type ${matchType} of a ${entityType} filter component`;
    }
  }
  if (seen.has('ip') && (seen.has('user') || seen.has('client-id'))) {
    return 'Invalid entity filter component combination: ip with user or client-id';
  }
  return undefined;
}

export function describeClientQuotasApi(): KafkaApi<
  DescribeClientQuotasRequest,
  DescribeClientQuotasResponse
> {
  return {
    apiKey: ApiKey.DescribeClientQuotas,
    minVersion: 0,
    maxVersion: 1,
    read: readDescribeClientQuotasRequest,
    write: writeDescribeClientQuotasResponse,
    serve: async (request) => {
      const problem = clientQuotaFilterProblem(request.components);
      return problem === undefined
        ? { ...defaultDescribeClientQuotasResponse(), errorMessage: null, entries: [] }
        : {
            ...defaultDescribeClientQuotasResponse(),
            errorCode: KafkaErrorNumber.InvalidRequest,
            errorMessage: problem,
            entries: null,
          };
    },
  };
}
