import { SpoolError, backoffMs, sleep } from '@spool/common';
import type { TopicMetadata } from '@spool/protocol';
import { ClientErrorCode, clientError, fromProtoError, toSpoolError } from './errors';
import type { GatewayConnection } from './gateway-connection';

/**
 * What the producer needs to know of a topic, its partition count and which partitions have a
 * leader, described through the gateway's DescribeTopics and cached for metadataMaxAgeMs. A
 * produce answered UNKNOWN_TOPIC_OR_PARTITION drops the entry, so the next send describes the
 * topic again (it may have been deleted, recreated, or grown partitions); one answered with a
 * stale route (a leader lost or moved) has it described again in the background, so the
 * partitioner learns which partitions have a leader. Concurrent sends to a topic not yet known
 * share one DescribeTopics call.
 */

export interface TopicPartitions {
  readonly topic: string;
  readonly partitionCount: number;
  /** Partitions with a live leader, ascending; the sticky partitioner prefers these. */
  readonly availablePartitions: readonly number[];
}

export interface TopicMetadataOptions {
  readonly metadataMaxAgeMs: number;
  readonly requestTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
}

export class TopicMetadataCache {
  private readonly entries = new Map<
    string,
    { partitions: TopicPartitions; fetchedAtMs: number }
  >();
  private readonly describing = new Map<string, Promise<TopicPartitions>>();

  constructor(
    private readonly connection: GatewayConnection,
    private readonly options: TopicMetadataOptions,
  ) {}

  /** The cached entry if it is younger than metadataMaxAgeMs. */
  cached(topic: string): TopicPartitions | undefined {
    const entry = this.entries.get(topic);
    if (entry === undefined) return undefined;
    if (Date.now() - entry.fetchedAtMs >= this.options.metadataMaxAgeMs) return undefined;
    return entry.partitions;
  }

  invalidate(topic: string): void {
    this.entries.delete(topic);
  }

  /**
   * Describes a known topic again in the background (Kafka's metadata.requestUpdate after a
   * stale route): sends go on with the cached entry, which the answer replaces. A failed
   * describe leaves the entry as it was; the next stale answer asks again.
   */
  requestUpdate(topic: string): void {
    if (!this.entries.has(topic) || this.describing.has(topic)) return;
    const pending = this.describeUntil(topic, Date.now() + this.options.requestTimeoutMs).finally(
      () => this.describing.delete(topic),
    );
    // A send that waits on it sees the failure; the background update itself ignores it.
    pending.catch(() => {});
    this.describing.set(topic, pending);
  }

  /**
   * The topic's partitions, described if not cached. A topic that does not exist yet is asked
   * for again with backoff until `deadlineMs` (a Date.now() value), as Kafka's producer waits
   * up to max.block.ms for a topic to appear in its metadata.
   */
  async partitions(topic: string, deadlineMs: number): Promise<TopicPartitions> {
    const cached = this.cached(topic);
    if (cached !== undefined) return cached;
    let pending = this.describing.get(topic);
    if (pending === undefined) {
      pending = this.describeUntil(topic, deadlineMs).finally(() => this.describing.delete(topic));
      this.describing.set(topic, pending);
    }
    return pending;
  }

  private async describeUntil(topic: string, deadlineMs: number): Promise<TopicPartitions> {
    // A late attempt may only time out; the answer that tells the user most is "no such topic".
    let sawUnknownTopic = false;
    for (let attempt = 1; ; attempt++) {
      const remainingMs = deadlineMs - Date.now();
      let failure: SpoolError;
      try {
        const partitions = await this.describe(
          topic,
          Math.max(1, Math.min(remainingMs, this.options.requestTimeoutMs)),
        );
        this.entries.set(topic, { partitions, fetchedAtMs: Date.now() });
        return partitions;
      } catch (error) {
        failure = toSpoolError(error, `topic ${topic}`);
      }
      if (!failure.retriable) throw failure;
      sawUnknownTopic ||= failure.code === ClientErrorCode.UnknownTopicOrPartition;
      const waitMs = backoffMs(attempt, {
        backoffInitialMs: this.options.retryBackoffMs,
        backoffMaxMs: this.options.retryBackoffMaxMs,
      });
      if (Date.now() + waitMs >= deadlineMs) {
        throw clientError(
          sawUnknownTopic
            ? ClientErrorCode.UnknownTopicOrPartition
            : ClientErrorCode.RequestTimedOut,
          `topic ${topic} is not in the metadata after ${attempt} attempts within maxBlockMs` +
            (sawUnknownTopic ? ': the gateway does not know the topic' : `: ${failure.message}`),
          { cause: failure },
        );
      }
      await sleep(waitMs);
    }
  }

  private async describe(topic: string, deadlineMs: number): Promise<TopicPartitions> {
    const response = await this.connection.callOnce(
      (client) => client.describeTopics,
      { names: [topic] },
      deadlineMs,
    );
    const description = response.topics.find(
      (candidate) => candidate.topic?.name === topic || candidate.topic === undefined,
    );
    if (description?.error !== undefined && description.error.code !== '') {
      throw fromProtoError(description.error, `topic ${topic}`);
    }
    if (description?.topic === undefined) {
      throw new SpoolError(
        ClientErrorCode.UnknownTopicOrPartition,
        `topic ${topic}: the gateway described no such topic`,
        { retriable: true },
      );
    }
    return topicPartitionsOf(description.topic);
  }
}

export function topicPartitionsOf(metadata: TopicMetadata): TopicPartitions {
  const partitionCount = metadata.partitions.length;
  const availablePartitions = metadata.partitions
    .filter((partition) => !partition.offline && partition.leaderId >= 0)
    .map((partition) => partition.partition)
    .sort((left, right) => left - right);
  return { topic: metadata.name, partitionCount, availablePartitions };
}
