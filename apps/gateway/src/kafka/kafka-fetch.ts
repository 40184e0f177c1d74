/**
 * Fetch: the Kafka request becomes the gateway's own fetch (fetch-handler.ts): the long poll
 * with max.wait.ms and min.bytes over every leader, max.bytes and each partition's max bytes, the
 * first batch whole (KIP-74), batches passed through as the leaders stored them, never decoded.
 *
 * 1. Fetch sessions (KIP-227): the gateway keeps none, which the protocol allows. A full fetch
 *    (session id 0) is answered with session id 0, "no session created", so clients keep sending
 *    full fetches; a request in a session id the gateway never gave is FETCH_SESSION_ID_NOT_FOUND,
 *    after which clients start over with a full fetch.
 * 2. From version 13 topics are named by id; an id the cluster does not know is UNKNOWN_TOPIC_ID.
 * 3. No transactions: the last stable offset is the high watermark and there are no aborted
 *    transactions (an empty list for read_committed, null otherwise, as Kafka sends them).
 */
import {
  type FetchRequest,
  type FetchResponse,
  type FetchResponsePartitionData,
  defaultFetchResponse,
  defaultFetchResponsePartitionData,
  readFetchRequest,
  writeFetchResponse,
} from '@spool/kafka-protocol';
import type { FetchPartition } from '@spool/protocol';
import { type FetchDependencies, handleFetch } from '../fetch-handler';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';

const fetchApiKey = 1;
/** The first version that names topics by id (KIP-516). */
const topicIdsVersion = 13;
const readCommitted = 1;
/** KIP-227's "no session". */
const noSessionId = 0;

export function fetchApi(
  view: KafkaClusterView,
  dependencies: FetchDependencies,
): KafkaApi<FetchRequest, FetchResponse> {
  return {
    apiKey: fetchApiKey,
    minVersion: 4,
    maxVersion: 18,
    read: readFetchRequest,
    write: writeFetchResponse,
    serve: async (request, version) => {
      // Point 1.
      if (request.sessionId !== noSessionId) {
        return {
          ...defaultFetchResponse(),
          errorCode: KafkaErrorNumber.FetchSessionIdNotFound,
          sessionId: noSessionId,
        };
      }
      // Point 2.
      const wanted = request.topics.flatMap((topic) => {
        const name = version >= topicIdsVersion ? view.topicNameOf(topic.topicId) : topic.topic;
        return topic.partitions.map((partition) => ({ topic, partition, name }));
      });
      const fetchable = wanted.filter((entry) => entry.name !== undefined);
      const fetched = await handleFetch(
        {
          partitions: fetchable.map((entry): FetchPartition => ({
            topic: entry.name!,
            partition: entry.partition.partition,
            fetchOffset: entry.partition.fetchOffset,
            partitionMaxBytes: entry.partition.partitionMaxBytes,
          })),
          maxWaitMs: request.maxWaitMs,
          minBytes: request.minBytes,
          maxBytes: request.maxBytes,
        },
        dependencies,
      );
      const answers = new Map(fetchable.map((entry, index) => [entry, fetched.partitions[index]!]));
      const noAborted = request.isolationLevel === readCommitted ? [] : null;
      return {
        ...defaultFetchResponse(),
        sessionId: noSessionId,
        responses: request.topics.map((topic) => ({
          topic: topic.topic,
          topicId: topic.topicId,
          partitions: wanted
            .filter((entry) => entry.topic === topic)
            .map((entry): FetchResponsePartitionData => {
              const answer = answers.get(entry);
              const highWatermark = answer?.highWatermark ?? -1n;
              return {
                ...defaultFetchResponsePartitionData(),
                partitionIndex: entry.partition.partition,
                errorCode:
                  answer === undefined
                    ? KafkaErrorNumber.UnknownTopicId
                    : kafkaErrorNumberOf(answer.error?.code),
                highWatermark,
                // Point 3.
                lastStableOffset: highWatermark,
                logStartOffset: answer?.logStartOffset ?? -1n,
                abortedTransactions: noAborted,
                records: answer?.records ?? Buffer.alloc(0),
              };
            }),
        })),
      };
    },
  };
}
