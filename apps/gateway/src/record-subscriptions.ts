/**
 * The record-level Subscribe and Commit: each subscription is one of the SDK's Consumers inside
 * the gateway, so a group subscription joins its group on the same coordinators, with the same
 * protocol (KIP-848), as an SDK consumer does, and the two kinds of member share the group's
 * partitions and offsets.
 *
 * 1. The request is checked before anything starts: a known topic, one mode (group_id, or a
 *    partition in range), offsets and intervals in range, and room under subscribeStreamsMax.
 * 2. The first response carries the subscription's id; Commit finds the consumer by it.
 * 3. Each batch the consumer hands over is one response of decoded records. The consumer does
 *    not go on to the next batch before HTTP/2 has sent the response (the client's flow-control
 *    window took it): a subscriber that stops reading holds one batch in the gateway. One that reads nothing for max_poll_interval_ms is ended with
 *    REQUEST_TIMED_OUT and leaves its group, as Kafka's consumer does past max.poll.interval.ms.
 * 4. The stream ends when the client cancels it, the consumer fails (the status says why) or the
 *    gateway stops; the consumer is closed then: with auto-commit it commits what was delivered,
 *    and it leaves its group.
 */
import { randomUUID } from 'node:crypto';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { SpoolError, type Logger } from '@spool/common';
import type { ConsumedMessage, Consumer, Spool } from '@spool/client';
import {
  OffsetReset,
  type CommitRequest,
  type CommitResponse,
  type ConsumedRecord,
  type SubscribeRequest,
  type SubscribeResponse,
} from '@spool/protocol';
import type { MetadataLink } from './metadata-link';

/** Kafka's max.poll.interval.ms default. */
const maxPollIntervalMsDefault = 300_000;
/** Kafka's auto.commit.interval.ms default. */
const autoCommitIntervalMsDefault = 5_000;
/** A day: longer than any subscriber should go unread, short enough to be a bound. */
const intervalMsMax = 86_400_000;
/** Record bytes one fetch of a subscription brings, at most: the batch the gateway may hold. */
const subscriptionFetchBytesMax = 256 * 1024;

export interface RecordSubscriptionsOptions {
  readonly link: MetadataLink;
  readonly spool: () => Spool;
  readonly streamsMax: number;
  readonly logger: Logger;
}

interface Subscription {
  readonly consumer: Consumer;
  readonly groupId: string | undefined;
  readonly topic: string;
  /** Ends the stream (with an error, or cleanly when undefined). */
  readonly end: (error?: unknown) => void;
}

export class RecordSubscriptions {
  private readonly subscriptions = new Map<string, Subscription>();

  constructor(private readonly options: RecordSubscriptionsOptions) {}

  get count(): number {
    return this.subscriptions.size;
  }

  async serve(
    request: SubscribeRequest,
    call: ServerWritableStream<SubscribeRequest, SubscribeResponse>,
  ): Promise<void> {
    // Point 1.
    this.check(request);
    const groupId = request.groupId === '' ? undefined : request.groupId;
    const maxPollIntervalMs = request.maxPollIntervalMs || maxPollIntervalMsDefault;
    const consumer = this.options.spool().consumer({
      ...(groupId === undefined
        ? {}
        : {
            groupId,
            enableAutoCommit: request.autoCommit ?? true,
            autoCommitIntervalMs: request.autoCommitIntervalMs || autoCommitIntervalMsDefault,
          }),
      autoOffsetReset:
        request.offsetReset === OffsetReset.OFFSET_RESET_EARLIEST ? 'earliest' : 'latest',
      maxBytes: subscriptionFetchBytesMax,
      maxBytesPerPartition: subscriptionFetchBytesMax,
    });
    const id = randomUUID();
    let finish!: (error?: unknown) => void;
    const finished = new Promise<void>((resolve, reject) => {
      finish = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Awaited below; a failure before that point must not be reported as unhandled.
    finished.catch(() => {});
    this.subscriptions.set(id, { consumer, groupId, topic: request.topic, end: finish });
    const logger = this.options.logger.child({ subscription: id, groupId, topic: request.topic });
    call.on('cancelled', () => finish());
    consumer.on('crash', (error) => finish(error));
    try {
      if (groupId === undefined) {
        consumer.assign([
          { topic: request.topic, partition: request.partition!, offset: request.offset },
        ]);
      } else {
        await consumer.subscribe({ topic: request.topic });
      }
      // Point 2.
      call.write({ subscriptionId: id, records: [] });
      // Point 3.
      await consumer.run({
        eachBatch: ({ batch }) =>
          written(
            call,
            { subscriptionId: '', records: batch.messages.map(toRecord) },
            maxPollIntervalMs,
            finished,
          ),
      });
      logger.info('subscription started');
      await finished;
    } catch (error) {
      if (error instanceof PollIntervalExceeded) {
        throw new SpoolError(
          'REQUEST_TIMED_OUT',
          `the subscriber read nothing for ${maxPollIntervalMs} ms (max_poll_interval_ms)` +
            (groupId === undefined ? '' : `; it left group ${groupId}`),
        );
      }
      throw error;
    } finally {
      // Point 4.
      this.subscriptions.delete(id);
      await consumer.close().catch((error: unknown) => {
        logger.warn({ err: error }, 'closing the subscription consumer failed');
      });
      logger.info('subscription ended');
    }
  }

  async commit(request: CommitRequest): Promise<CommitResponse> {
    const subscription = this.subscriptions.get(request.subscriptionId);
    if (subscription === undefined) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `no subscription ${JSON.stringify(request.subscriptionId)} on this gateway; Commit ` +
          'goes to the gateway (the channel) that serves the Subscribe stream, while it is open',
      );
    }
    if (subscription.groupId === undefined) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `subscription ${request.subscriptionId} reads one partition without a group; only a ` +
          'group subscription (group_id) has offsets to commit',
      );
    }
    if (request.offsets.length === 0) {
      await subscription.consumer.commit();
    } else {
      await subscription.consumer.commitOffsets(
        request.offsets.map((entry) => ({
          topic: subscription.topic,
          partition: entry.partition,
          offset: entry.offset,
        })),
      );
    }
    return {};
  }

  /** Ends every subscription (the gateway is stopping); each consumer commits and leaves. */
  stopAll(): void {
    for (const subscription of this.subscriptions.values()) {
      subscription.end(
        new SpoolError('SHUTTING_DOWN', 'the gateway is shutting down', { retriable: true }),
      );
    }
  }

  private check(request: SubscribeRequest): void {
    const topic = this.options.link.metadata.topics.get(request.topic);
    if (topic === undefined) {
      throw new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `topic ${JSON.stringify(request.topic)} does not exist`,
      );
    }
    if (request.groupId !== '') {
      if (request.partition !== undefined || request.offset !== undefined) {
        throw new SpoolError(
          'INVALID_REQUEST',
          'a subscription takes group_id or partition (and offset), not both: the group ' +
            'assigns partitions and starts them at its committed offsets',
        );
      }
    } else {
      if (request.partition === undefined) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `subscribe to topic ${request.topic} needs group_id or partition`,
        );
      }
      const partitionCount = topic.partitions.length;
      if (request.partition < 0 || request.partition >= partitionCount) {
        throw new SpoolError(
          'UNKNOWN_TOPIC_OR_PARTITION',
          `partition ${request.partition} of topic ${request.topic} does not exist; the topic ` +
            `has ${partitionCount} partitions (0 to ${partitionCount - 1})`,
        );
      }
      if (request.offset !== undefined && request.offset < 0n) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `offset is ${request.offset}; it must be 0 or more (or absent, for offset_reset)`,
        );
      }
      if (request.autoCommit === true) {
        throw new SpoolError('INVALID_REQUEST', 'auto_commit needs a group_id');
      }
    }
    for (const [name, value] of [
      ['max_poll_interval_ms', request.maxPollIntervalMs],
      ['auto_commit_interval_ms', request.autoCommitIntervalMs],
    ] as const) {
      if (value < 0 || value > intervalMsMax) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `${name} is ${value}; it must be 0 (the default) to ${intervalMsMax}`,
        );
      }
    }
    if (
      request.offsetReset !== OffsetReset.OFFSET_RESET_UNSPECIFIED &&
      request.offsetReset !== OffsetReset.OFFSET_RESET_EARLIEST &&
      request.offsetReset !== OffsetReset.OFFSET_RESET_LATEST
    ) {
      throw new SpoolError('INVALID_REQUEST', `offset_reset ${request.offsetReset} is unknown`);
    }
    if (this.subscriptions.size >= this.options.streamsMax) {
      throw new SpoolError(
        'THROTTLING_QUOTA_EXCEEDED',
        `this gateway serves ${this.subscriptions.size} subscriptions, its ` +
          'subscribe.streams.max; try again later or another gateway',
        { retriable: true },
      );
    }
  }
}

class PollIntervalExceeded extends Error {}

/**
 * Writes one response and waits until HTTP/2 has sent it (the client's flow-control window took
 * it), at most maxPollIntervalMs: the consumer fetches no further batch meanwhile, so an unread
 * stream holds one batch in the gateway.
 */
function written(
  call: ServerWritableStream<SubscribeRequest, SubscribeResponse>,
  response: SubscribeResponse,
  maxPollIntervalMs: number,
  finished: Promise<void>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new PollIntervalExceeded()), maxPollIntervalMs);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    call.write(response, done);
    // A stream that ends while waiting (cancelled, gateway stopping) stops the wait too.
    finished.then(done, done);
  });
}

function toRecord(message: ConsumedMessage): ConsumedRecord {
  return {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset,
    timestampMs: message.timestamp,
    key: message.key === null ? undefined : message.key,
    value: message.value === null ? undefined : message.value,
    headers: message.headers.map((header) => ({
      key: header.key,
      value: header.value === null ? undefined : header.value,
    })),
  };
}
