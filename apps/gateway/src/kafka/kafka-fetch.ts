/**
 * Fetch: the Kafka request becomes the gateway's own fetch (fetch-handler.ts): the long poll
 * with max.wait.ms and min.bytes over every leader, max.bytes and each partition's max bytes, the
 * first batch whole (KIP-74), batches passed through as the leaders stored them, never decoded.
 *
 * 1. Fetch sessions (KIP-227, fetch-session-cache.ts): the request's session id and epoch make
 *    it a full fetch (the partitions it names), an incremental one (every partition of its
 *    session, as last updated) or a session error answered without fetching. A full fetch that
 *    asks for a session gets one when the cache has room; an incremental answer holds only the
 *    partitions with something new.
 * 2. From version 13 topics are named by id; an id the cluster does not know is UNKNOWN_TOPIC_ID.
 * 3. No transactions: the last stable offset is the high watermark and there are no aborted
 *    transactions (an empty list for read_committed, null otherwise, as Kafka sends them).
 * 4. The answer's topics follow its partitions' order, a new topic entry wherever the topic
 *    changes, as Kafka's FetchResponse.of builds them.
 */
import {
  type FetchRequest,
  type FetchRequestFetchPartition,
  type FetchResponse,
  type FetchableTopicResponse,
  type FetchResponsePartitionData,
  defaultFetchResponse,
  defaultFetchResponsePartitionData,
  readFetchRequest,
  writeFetchResponse,
} from '@spool/kafka-protocol';
import type { FetchedPartition, FetchPartition } from '@spool/protocol';
import { type FetchDependencies, handleFetch } from '../fetch-handler';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';
import {
  type FetchSessionCache,
  type SessionPartitionAnswer,
  type SessionPartitionRequest,
  invalidSessionId,
} from './fetch-session-cache';

const fetchApiKey = 1;
/** The first version that names topics by id (KIP-516). */
const topicIdsVersion = 13;
const readCommitted = 1;

/** What a session remembers of one partition of a request. */
export interface KafkaSessionFetch {
  /** The topic's name as the request gave it ('' from version 13). */
  readonly topic: string;
  readonly topicId: Buffer;
  readonly partition: FetchRequestFetchPartition;
}

export type KafkaFetchSessionCache = FetchSessionCache<KafkaSessionFetch>;

/** Counts fetches by how their session made them (a metric: proof that sessions are used). */
export type FetchKindCounter = (kind: 'full' | 'incremental' | 'session_error') => void;

type SessionFetch = SessionPartitionRequest<KafkaSessionFetch>;

export function fetchApi(
  view: KafkaClusterView,
  dependencies: FetchDependencies,
  sessions: KafkaFetchSessionCache,
  countFetch: FetchKindCounter = () => undefined,
): KafkaApi<FetchRequest, FetchResponse> {
  return {
    apiKey: fetchApiKey,
    minVersion: 4,
    maxVersion: 18,
    read: readFetchRequest,
    write: writeFetchResponse,
    serve: async (request, version) => {
      const usesTopicIds = version >= topicIdsVersion;
      // Point 1.
      const context = sessions.newContext(
        {
          sessionId: request.sessionId,
          sessionEpoch: request.sessionEpoch,
          usesTopicIds,
          partitions: sessionPartitionsOf(request, usesTopicIds),
          forgotten: request.forgottenTopicsData.flatMap((topic) =>
            topic.partitions.map((partition) => ({
              topicKey: usesTopicIds ? topic.topicId.toString('hex') : topic.topic,
              partition,
            })),
          ),
        },
        Date.now(),
      );
      if (context.kind === 'error') {
        countFetch('session_error');
        return {
          ...defaultFetchResponse(),
          errorCode: context.errorCode,
          sessionId: invalidSessionId,
        };
      }
      countFetch(context.kind);
      const fetched = await fetchPartitions(
        view,
        dependencies,
        request,
        usesTopicIds,
        context.partitions,
      );
      const answers = fetched.map(sessionAnswerOf);
      if (context.kind === 'full') {
        const sessionId = sessions.maybeCreateSession(context, answers, usesTopicIds, Date.now());
        return { ...defaultFetchResponse(), sessionId, responses: topicResponsesOf(fetched) };
      }
      const { errorCode, included } = sessions.completeIncremental(context, answers);
      return {
        ...defaultFetchResponse(),
        errorCode,
        sessionId: errorCode === 0 ? context.session.id : invalidSessionId,
        responses: topicResponsesOf(included.map((index) => fetched[index]!)),
      };
    },
  };
}

function sessionPartitionsOf(request: FetchRequest, usesTopicIds: boolean): SessionFetch[] {
  return request.topics.flatMap((topic) =>
    topic.partitions.map((partition) => ({
      topicKey: usesTopicIds ? topic.topicId.toString('hex') : topic.topic,
      partition: partition.partition,
      fetch: { topic: topic.topic, topicId: topic.topicId, partition },
    })),
  );
}

/** One partition's answer in the Kafka response, with the topic it goes under. */
interface KafkaFetched {
  readonly topicKey: string;
  readonly fetch: KafkaSessionFetch;
  readonly data: FetchResponsePartitionData;
}

/** Fetches the partitions (point 2) and answers each in order (point 3). */
async function fetchPartitions(
  view: KafkaClusterView,
  dependencies: FetchDependencies,
  request: FetchRequest,
  usesTopicIds: boolean,
  partitions: ReadonlyArray<{ readonly topicKey: string; readonly fetch: KafkaSessionFetch }>,
): Promise<KafkaFetched[]> {
  // Point 2.
  // Each partition's request state as it is now: a later request may replace a session's.
  const named = partitions.map(({ topicKey, fetch }) => ({
    topicKey,
    fetch,
    name: usesTopicIds ? view.topicNameOf(fetch.topicId) : fetch.topic,
  }));
  const fetchable = named.filter((entry) => entry.name !== undefined);
  const fetched = await handleFetch(
    {
      partitions: fetchable.map(({ fetch, name }): FetchPartition => ({
        topic: name!,
        partition: fetch.partition.partition,
        fetchOffset: fetch.partition.fetchOffset,
        partitionMaxBytes: fetch.partition.partitionMaxBytes,
      })),
      maxWaitMs: request.maxWaitMs,
      minBytes: request.minBytes,
      maxBytes: request.maxBytes,
    },
    dependencies,
  );
  const answers = new Map<unknown, FetchedPartition>(
    fetchable.map((entry, index) => [entry, fetched.partitions[index]!]),
  );
  const noAborted = request.isolationLevel === readCommitted ? [] : null;
  return named.map((entry): KafkaFetched => {
    const answer = answers.get(entry);
    const highWatermark = answer?.highWatermark ?? -1n;
    return {
      topicKey: entry.topicKey,
      fetch: entry.fetch,
      data: {
        ...defaultFetchResponsePartitionData(),
        partitionIndex: entry.fetch.partition.partition,
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
      },
    };
  });
}

function sessionAnswerOf(fetched: KafkaFetched): SessionPartitionAnswer {
  return {
    errorCode: fetched.data.errorCode,
    highWatermark: fetched.data.highWatermark,
    logStartOffset: fetched.data.logStartOffset,
    recordsBytes: fetched.data.records?.length ?? 0,
  };
}

/** Point 4. */
function topicResponsesOf(fetched: readonly KafkaFetched[]): FetchableTopicResponse[] {
  const topics: Array<FetchableTopicResponse & { readonly key: string }> = [];
  for (const entry of fetched) {
    const last = topics.at(-1);
    if (last !== undefined && last.key === entry.topicKey) {
      last.partitions.push(entry.data);
    } else {
      topics.push({
        key: entry.topicKey,
        topic: entry.fetch.topic,
        topicId: entry.fetch.topicId,
        partitions: [entry.data],
      });
    }
  }
  return topics.map(({ topic, topicId, partitions }) => ({ topic, topicId, partitions }));
}
