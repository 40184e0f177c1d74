/**
 * Produce: batches for many partitions in one request, each partition's batches appended at its
 * leader, one result per partition in the request's order.
 *
 * 1. The request's record bytes count against the client connection's in-flight bound first
 *    (ProduceAdmission); over it, the whole request is refused, retriably.
 * 2. Each partition is checked before anything is sent: named once, a known topic and partition,
 *    some record bytes. A partition that fails is answered with the error and not written; the
 *    other partitions of the request go on.
 *
 *    The record bytes themselves (framing, magic, CRC, header fields, max.message.bytes) and
 *    acks are checked by the leader alone, as Kafka checks them in the broker that writes the
 *    bytes (LogValidator, ReplicaManager.appendRecords): the leader has to check them anyway,
 *    since its own API takes appends from anyone and the bytes must be checked right before
 *    they are written, and it knows the topic's config as the log applies it. A check here too
 *    would compute every batch's CRC twice on the way to the disk. The gateway forwards the
 *    bytes unread; a bad batch or acks is answered with the leader's error, which names the
 *    partition, the batch's position and the field.
 * 3. The valid partitions go to their leaders (sendToLeaders: grouped, concurrent, re-routed
 *    after NOT_LEADER_OR_FOLLOWER once newer metadata arrives), within the request's timeout,
 *    each leader's share as one message on that leader's append stream (append-pipeline.ts).
 *    The Kafka listener has the batches of idempotent producers sent once (sentOnce): their
 *    clients resend them in sequence order themselves (leader-router.ts, point 6).
 */
import { SpoolError, wireErrorOf, type Logger } from '@spool/common';
import {
  type PartitionAppendResult,
  type PartitionBatches,
  type ProduceRequest,
  type ProduceResponse,
  type ProtoError,
} from '@spool/protocol';
import type { AppendPipeline } from './append-pipeline';
import { sendToLeaders } from './leader-router';
import type { MetadataLink } from './metadata-link';
import { duplicatePositions, partitionName } from './partition-routing';
import type { ProduceAdmission } from './produce-admission';

/** Kafka's request.timeout.ms default, for a request that names none. */
export const produceTimeoutMsDefault = 30_000;
/** The longest a produce may take, whatever it asks (the leaders bound acks=all waits alike). */
export const produceTimeoutMsMax = 120_000;
/** A leader's own REQUEST_TIMED_OUT answer should arrive before the call's deadline cuts it off. */
const appendCallSlackMs = 2_000;

export interface ProduceDependencies {
  readonly link: MetadataLink;
  /** The leader's append stream (append-pipeline.ts). */
  readonly appendPipeline: (brokerId: number) => AppendPipeline | undefined;
  readonly admission: ProduceAdmission;
  readonly logger: Logger;
}

export interface ProduceOptions {
  /** Partitions whose batches may reach a leader once only (leader-router.ts, point 6). */
  readonly sentOnce?: (partition: PartitionBatches) => boolean;
}

export function failedResult(
  partition: PartitionBatches,
  error: ProtoError,
): PartitionAppendResult {
  return {
    topic: partition.topic,
    partition: partition.partition,
    error,
    baseOffset: -1n,
    lastOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset: -1n,
  };
}

/** Point 2 for one partition: the error that keeps it from being sent, if any. */
function checkPartition(
  link: MetadataLink,
  partition: PartitionBatches,
  duplicate: boolean,
): ProtoError | undefined {
  const name = partitionName(partition);
  if (duplicate) {
    return wireErrorOf(
      new SpoolError('INVALID_REQUEST', `${name} appears more than once in the request`),
    );
  }
  const topic = link.metadata.topics.get(partition.topic);
  if (topic === undefined) {
    return wireErrorOf(
      new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${partition.topic}" does not exist`),
    );
  }
  if (!topic.partitions.some((candidate) => candidate.partition === partition.partition)) {
    return wireErrorOf(
      new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `partition ${partition.partition} of topic "${partition.topic}" does not exist; the ` +
          `topic has ${topic.partitions.length} partitions`,
      ),
    );
  }
  if (partition.records.length === 0) {
    return wireErrorOf(new SpoolError('INVALID_REQUEST', `records of ${name} are empty`));
  }
  return undefined;
}

export async function handleProduce(
  request: ProduceRequest,
  peer: string,
  dependencies: ProduceDependencies,
  options: ProduceOptions = {},
): Promise<ProduceResponse> {
  const { link, admission } = dependencies;
  // Point 1.
  const sizeBytes = request.partitions.reduce((sum, entry) => sum + entry.records.length, 0);
  const release = admission.admit(peer, sizeBytes);
  try {
    const timeoutMs =
      request.timeoutMs > 0
        ? Math.min(request.timeoutMs, produceTimeoutMsMax)
        : produceTimeoutMsDefault;
    const deadlineMs = Date.now() + timeoutMs;
    // Point 2.
    const duplicates = duplicatePositions(request.partitions);
    const results = new Array<PartitionAppendResult | undefined>(request.partitions.length);
    const valid: Array<{ position: number; batches: PartitionBatches }> = [];
    request.partitions.forEach((batches, position) => {
      const error = checkPartition(link, batches, duplicates.has(position));
      if (error === undefined) valid.push({ position, batches });
      else results[position] = failedResult(batches, error);
    });
    // Point 3.
    const appended = await sendToLeaders(
      link,
      valid.map((entry) => entry.batches),
      deadlineMs,
      {
        send: async (leaderId, partitions, remainingMs) => {
          const appends = dependencies.appendPipeline(leaderId);
          if (appends === undefined) {
            throw new SpoolError(
              'LEADER_NOT_AVAILABLE',
              `the gRPC endpoint of broker ${leaderId} is not in the metadata`,
            );
          }
          const response = await appends.append(
            { partitions, acks: request.acks, timeoutMs: remainingMs },
            remainingMs + appendCallSlackMs,
          );
          return response.results;
        },
        errorOf: (result) => result.error,
        failed: failedResult,
        sentOnce: options.sentOnce,
      },
    );
    valid.forEach((entry, index) => (results[entry.position] = appended[index]));
    return { results: results.map((result) => result!) };
  } finally {
    release();
  }
}
