/**
 * Produce: the Kafka request becomes the gateway's own produce (produce-handler.ts): the same
 * admission bound, routing, leader append streams and retries after a leader change, the record
 * batches passed through unread; the leader checks them (CRC, sizes, idempotent sequence) and
 * writes them as they came.
 *
 * 1. acks 0, 1 and -1 are the gRPC path's none, leader and all; any other value is
 *    INVALID_REQUIRED_ACKS for every partition, nothing written.
 * 2. From version 13 topics are named by id; an id the cluster does not know is UNKNOWN_TOPIC_ID.
 * 3. With acks=0 no response is sent, as Kafka sends none; errors are only logged.
 * 4. A partition's batches from an idempotent producer (a producer id in the first batch's
 *    header, read without decoding the records) are sent to a leader once: after a stale route
 *    they are answered NOT_LEADER_OR_FOLLOWER and the client resends them in sequence order, as
 *    it would to a Kafka broker (leader-router.ts, point 6).
 * 5. A retriable error of Spool's own (UNAVAILABLE: a leader that could not be reached within
 *    the request's rounds), which has no Kafka number, goes out as REQUEST_TIMED_OUT, retriable
 *    for Kafka's producers, rather than UNKNOWN_SERVER_ERROR, which fails the batch for good.
 */
import type { Logger } from '@spool/common';
import {
  type PartitionProduceResponse,
  type ProduceRequest,
  type ProduceResponse,
  defaultPartitionProduceResponse,
  defaultProduceResponse,
  readProduceRequest,
  writeProduceResponse,
} from '@spool/kafka-protocol';
import { Acks, type PartitionBatches } from '@spool/protocol';
import {
  magicPosition,
  magicValueV2,
  producerIdPosition,
  recordBatchHeaderSizeBytes,
} from '@spool/record-batch';
import { type ProduceDependencies, handleProduce } from '../produce-handler';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { errorDefinitionOf } from '@spool/errors';
import { KafkaErrorNumber, kafkaErrorOf } from './kafka-errors';

const produceApiKey = 0;
/** The first version that names topics by id (KIP-516). */
const topicIdsVersion = 13;

const acksOf: ReadonlyMap<number, Acks> = new Map([
  [0, Acks.ACKS_NONE],
  [1, Acks.ACKS_LEADER],
  [-1, Acks.ACKS_ALL],
]);

export function produceApi(
  view: KafkaClusterView,
  dependencies: ProduceDependencies,
  logger: Logger,
): KafkaApi<ProduceRequest, ProduceResponse> {
  return {
    apiKey: produceApiKey,
    minVersion: 3,
    maxVersion: 13,
    read: readProduceRequest,
    write: writeProduceResponse,
    serve: async (request, version, context) => {
      const acks = acksOf.get(request.acks);
      // Point 2: each partition's topic name, or the error that keeps it from being sent.
      const partitions = request.topicData.flatMap((topic) => {
        const name = version >= topicIdsVersion ? view.topicNameOf(topic.topicId) : topic.name;
        return topic.partitionData.map((partition) => ({ topic, partition, name }));
      });
      const sendable = partitions.filter((entry) => acks !== undefined && entry.name !== undefined);
      const answered = await handleProduce(
        {
          partitions: sendable.map((entry): PartitionBatches => ({
            topic: entry.name!,
            partition: entry.partition.index,
            records: entry.partition.records ?? Buffer.alloc(0),
          })),
          acks: acks ?? Acks.ACKS_LEADER,
          timeoutMs: request.timeoutMs,
        },
        context.peer,
        dependencies,
        // Point 4.
        { sentOnce: (partition) => isIdempotentBatch(partition.records) },
      );
      const results = new Map(sendable.map((entry, index) => [entry, answered.results[index]!]));
      if (acks === Acks.ACKS_NONE) {
        // Point 3.
        for (const result of answered.results) {
          if (result.error !== undefined) {
            logger.debug(
              { topic: result.topic, partition: result.partition, error: result.error.code },
              'acks=0 produce failed',
            );
          }
        }
        return undefined;
      }
      return {
        ...defaultProduceResponse(),
        responses: request.topicData.map((topic) => ({
          name: topic.name,
          topicId: topic.topicId,
          partitionResponses: partitions
            .filter((entry) => entry.topic === topic)
            .map((entry): PartitionProduceResponse => {
              const result = results.get(entry);
              const base: PartitionProduceResponse = {
                ...defaultPartitionProduceResponse(),
                index: entry.partition.index,
                baseOffset: -1n,
              };
              if (acks === undefined) {
                return {
                  ...base,
                  errorCode: KafkaErrorNumber.InvalidRequiredAcks,
                  errorMessage: `acks ${request.acks} is not one of 0, 1, -1`,
                };
              }
              if (result === undefined) {
                return {
                  ...base,
                  errorCode: KafkaErrorNumber.UnknownTopicId,
                  errorMessage: `no topic has id ${entry.topic.topicId.toString('hex')}`,
                };
              }
              return {
                ...base,
                ...produceErrorOf(result.error),
                baseOffset: result.baseOffset,
                logAppendTimeMs: result.logAppendTimeMs,
                logStartOffset: result.logStartOffset,
              };
            }),
        })),
      };
    },
  };
}

/**
 * Point 4: whether records start with a RecordBatch v2 of an idempotent producer. Anything
 * else (too short, another magic) is the leader's to refuse, and is routed as usual.
 */
export function isIdempotentBatch(records: Buffer): boolean {
  return (
    records.length >= recordBatchHeaderSizeBytes &&
    records[magicPosition] === magicValueV2 &&
    records.readBigInt64BE(producerIdPosition) >= 0n
  );
}

/** Point 5: a partition's error as a Kafka producer should read it. */
export function produceErrorOf(
  error: { code: string; message: string; retriable: boolean } | undefined,
): { errorCode: number; errorMessage: string | null } {
  if (
    error !== undefined &&
    error.retriable &&
    errorDefinitionOf(error.code)?.kafkaCode === undefined
  ) {
    return { errorCode: KafkaErrorNumber.RequestTimedOut, errorMessage: error.message };
  }
  return kafkaErrorOf(error);
}
