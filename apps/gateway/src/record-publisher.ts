/**
 * The record-level Publish: records of one topic, appended by the gateway's own producers (the
 * TypeScript SDK's Producer, so the partitioner, batching into RecordBatch v2, retries and
 * idempotence are the SDK's, not a second copy), answered per record.
 *
 * 1. The request is checked as a whole before any record is queued (nothing half-written): a
 *    known topic, records present and at most the buffer's worth, every explicit partition in
 *    range, every record within the topic's max.message.bytes once in its batch, timestamps not
 *    negative, acks valid, the idempotency key well-formed. One bad record fails the call.
 * 2. With an idempotency key, the call goes through the IdempotencyWindow: a retry within the
 *    window is answered from the first call; only records the first call failed to append are
 *    sent again.
 * 3. The records go to the producer for the call's acks (acks=all: idempotent, so the producer's
 *    own retries never duplicate; acks=1 and acks=0: not, as Kafka requires), in one sendEach:
 *    keyed records land where Kafka's murmur2 partitioner puts them, keyless ones stick to a
 *    partition until its batch is sent (KIP-480). A record whose batch was not acknowledged
 *    within the call's timeout is answered REQUEST_TIMED_OUT (every record of the call then); its
 *    append goes on, and a retry with the same key waits for it rather than sending it twice.
 */
import { SpoolError, wireErrorOf } from '@spool/common';
import type { Message, MessageHeader, Producer, RecordOutcome, Spool } from '@spool/client';
import {
  Acks,
  type PublishRecord,
  type PublishRequest,
  type PublishResponse,
  type PublishResult,
} from '@spool/protocol';
import { recordBatchHeaderSizeBytes } from '@spool/record-batch';
import { Fingerprint, IdempotencyWindow, checkIdempotencyKey } from './idempotency-window';
import type { MetadataLink } from './metadata-link';

/** Kafka's request.timeout.ms default, for a call that names none. */
const publishTimeoutMsDefault = 30_000;
/** The longest a call may wait, whatever it asks. */
const publishTimeoutMsMax = 120_000;
/** Kafka's max.message.bytes default, for a topic whose config the metadata does not carry. */
const maxMessageBytesDefault = 1_048_588;
/** A record's varints at their widest (Kafka's DefaultRecord.MAX_RECORD_OVERHEAD). */
const recordOverheadBytesMax = 5 + 1 + 10 + 5 + 5 + 5 + 5;
const headerOverheadBytesMax = 5 + 5;
/**
 * The gateway producers' batch.size at most, as the raw path's benchmark producer uses. A bound,
 * not a wait (a batch leaves after lingerMs): a busy topic's records go in large batches, which
 * cost the gateway and the leader per batch, not per record.
 */
const publishBatchSizeBytesMax = 1024 * 1024;

export interface RecordPublisherOptions {
  readonly link: MetadataLink;
  /** The gateway's SDK, connected to this gateway; undefined until it listens. */
  readonly spool: () => Spool;
  /** Record bytes each producer may hold unsent (Kafka's buffer.memory); a call must fit. */
  readonly bufferMemoryBytes: number;
  readonly idempotencyWindowMs: number;
  readonly idempotencyKeysMax: number;
}

/**
 * The outcome of each record, in the request's order, kept for retries with the same key: one
 * promise per call, not per record (a promise per record cost the gateway more than a record's
 * bytes at 100 B).
 */
type Outcomes = Promise<readonly RecordOutcome[]>;

export class RecordPublisher {
  /** By acks and batch size (batchSizeBytesFor): few, made as calls first need them. */
  private readonly producers = new Map<string, Producer>();
  private readonly window: IdempotencyWindow<readonly RecordOutcome[]>;

  constructor(private readonly options: RecordPublisherOptions) {
    this.window = new IdempotencyWindow(options.idempotencyWindowMs, options.idempotencyKeysMax);
  }

  async publish(request: PublishRequest): Promise<PublishResponse> {
    const acks = request.acks === Acks.ACKS_UNSPECIFIED ? Acks.ACKS_ALL : request.acks;
    // Point 1.
    const maxMessageBytes = this.check(request, acks);
    const timeoutMs =
      request.timeoutMs > 0
        ? Math.min(request.timeoutMs, publishTimeoutMsMax)
        : publishTimeoutMsDefault;
    const nowMs = BigInt(Date.now());
    const messages = request.records.map((record) => toMessage(record, nowMs));
    const producer = this.producer(acks, batchSizeBytesFor(maxMessageBytes));
    const send = (indexes: readonly number[]): Outcomes =>
      this.send(
        producer,
        request.topic,
        indexes.map((index) => messages[index]!),
      );
    const everyRecord = messages.map((_, index) => index);
    // Point 2.
    const outcomes: Outcomes =
      request.idempotencyKey === ''
        ? send(everyRecord)
        : this.window.run(
            request.idempotencyKey,
            fingerprintOf(request, acks),
            () => send(everyRecord),
            async (previous) => {
              const failed = previous.flatMap((outcome, index) =>
                outcome.error === undefined ? [] : [index],
              );
              if (failed.length === 0) return previous;
              const resent = await send(failed);
              const merged = [...previous];
              failed.forEach((index, position) => (merged[index] = resent[position]!));
              return merged;
            },
          );
    return { results: await withinTimeout(outcomes, messages.length, timeoutMs) };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.producers.values()].map((producer) => producer.close()));
    this.producers.clear();
  }

  /** Point 3: one sendEach; a failure to admit at all (closing) fails every record. */
  private send(producer: Producer, topic: string, messages: readonly Message[]): Outcomes {
    return producer.sendEach({ topic, messages }).catch((error: unknown) => {
      const wire = wireErrorOf(error);
      const failure = new SpoolError(wire.code, wire.message, { retriable: wire.retriable });
      return messages.map((message) => ({
        topic,
        partition: message.partition ?? -1,
        offset: -1n,
        error: failure,
      }));
    });
  }

  private producer(acks: Acks, batchSizeBytes: number): Producer {
    const name = `${acks}/${batchSizeBytes}`;
    let producer = this.producers.get(name);
    if (producer === undefined) {
      producer = this.options.spool().producer({
        acks: acks === Acks.ACKS_ALL ? 'all' : acks === Acks.ACKS_LEADER ? 1 : 0,
        enableIdempotence: acks === Acks.ACKS_ALL,
        bufferMemoryBytes: this.options.bufferMemoryBytes,
        maxRequestSizeBytes: this.options.bufferMemoryBytes,
        batchSizeBytes,
      });
      this.producers.set(name, producer);
    }
    return producer;
  }

  /** Point 1; returns the topic's max.message.bytes. */
  private check(request: PublishRequest, acks: Acks): number {
    if (acks !== Acks.ACKS_NONE && acks !== Acks.ACKS_LEADER && acks !== Acks.ACKS_ALL) {
      throw new SpoolError(
        'INVALID_REQUIRED_ACKS',
        `acks is ${request.acks}; it must be ACKS_NONE, ACKS_LEADER or ACKS_ALL`,
      );
    }
    if (request.idempotencyKey !== '') checkIdempotencyKey(request.idempotencyKey);
    const topic = this.options.link.metadata.topics.get(request.topic);
    if (topic === undefined) {
      throw new SpoolError(
        'UNKNOWN_TOPIC_OR_PARTITION',
        `topic ${JSON.stringify(request.topic)} does not exist`,
      );
    }
    if (request.records.length === 0) {
      throw new SpoolError('INVALID_REQUEST', `no records to publish to topic ${request.topic}`);
    }
    const configured = Number(
      this.options.link.metadata.topicConfig(request.topic, 'max.message.bytes'),
    );
    const maxMessageBytes = Number.isSafeInteger(configured) ? configured : maxMessageBytesDefault;
    const partitionCount = topic.partitions.length;
    let totalBytes = 0;
    request.records.forEach((record, index) => {
      const subject = `topic ${request.topic} record ${index}`;
      if (
        record.partition !== undefined &&
        (record.partition < 0 || record.partition >= partitionCount)
      ) {
        throw new SpoolError(
          'UNKNOWN_TOPIC_OR_PARTITION',
          `${subject}: partition ${record.partition} does not exist; the topic has ` +
            `${partitionCount} partitions (0 to ${partitionCount - 1})`,
        );
      }
      if (record.timestampMs !== undefined && record.timestampMs < 0n) {
        throw new SpoolError(
          'INVALID_RECORD',
          `${subject}: timestamp_ms is ${record.timestampMs}; it must be 0 or more`,
        );
      }
      const sizeBytes = recordSizeUpperBoundBytes(record);
      if (sizeBytes + recordBatchHeaderSizeBytes > maxMessageBytes) {
        throw new SpoolError(
          'MESSAGE_TOO_LARGE',
          `${subject}: the record is up to ${sizeBytes} bytes when encoded, ${
            sizeBytes + recordBatchHeaderSizeBytes
          } in its batch, over the topic's max.message.bytes=${maxMessageBytes}`,
        );
      }
      totalBytes += sizeBytes;
    });
    if (totalBytes > this.options.bufferMemoryBytes) {
      throw new SpoolError(
        'RECORD_LIST_TOO_LARGE',
        `${request.records.length} records of up to ${totalBytes} bytes in one call, over the ` +
          `gateway's publish.buffer.memory.bytes=${this.options.bufferMemoryBytes}; split the call`,
      );
    }
    return maxMessageBytes;
  }
}

/**
 * The batch size for a topic: small enough that a full batch stays within its max.message.bytes
 * (the SDK does not split a batch the leader refuses as too large, as Kafka's producer does), and
 * a power of two up to publishBatchSizeBytesMax, so that a few producers serve every topic. A
 * record larger than the batch size still gets a batch of its own, within the limit by point 1.
 */
function batchSizeBytesFor(maxMessageBytes: number): number {
  const fitsBytes = maxMessageBytes - recordBatchHeaderSizeBytes;
  let batchSizeBytes = publishBatchSizeBytesMax;
  while (batchSizeBytes > fitsBytes && batchSizeBytes > 1) batchSizeBytes /= 2;
  return batchSizeBytes;
}

function toMessage(record: PublishRecord, nowMs: bigint): Message {
  return {
    key: record.key ?? null,
    value: record.value ?? null,
    headers: record.headers.length === 0 ? undefined : toHeaders(record),
    partition: record.partition,
    timestamp: record.timestampMs ?? nowMs,
  };
}

/** The SDK's ordered header list: every header in the order sent, repeated names included. */
function toHeaders(record: PublishRecord): MessageHeader[] {
  return record.headers.map((header) => ({ key: header.key, value: header.value ?? null }));
}

function recordSizeUpperBoundBytes(record: PublishRecord): number {
  let sizeBytes = recordOverheadBytesMax + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const header of record.headers) {
    sizeBytes +=
      headerOverheadBytesMax + Buffer.byteLength(header.key) + (header.value?.length ?? 0);
  }
  return sizeBytes;
}

function fingerprintOf(request: PublishRequest, acks: Acks): string {
  const fingerprint = new Fingerprint().add(request.topic).add(String(acks));
  for (const record of request.records) {
    fingerprint
      .add(record.key)
      .add(record.value)
      .add(record.partition === undefined ? undefined : String(record.partition))
      .add(record.timestampMs === undefined ? undefined : String(record.timestampMs));
    fingerprint.add(String(record.headers.length));
    for (const header of record.headers) fingerprint.add(header.key).add(header.value);
  }
  return fingerprint.digest();
}

/**
 * Each record's result, or REQUEST_TIMED_OUT for all of them when they were not all settled
 * within the call's timeout: which of them landed is then unknown, and a retry with the same
 * idempotency key waits for the appends still in flight rather than sending them twice.
 */
async function withinTimeout(
  outcomes: Outcomes,
  recordCount: number,
  timeoutMs: number,
): Promise<PublishResult[]> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed out'>((resolve) => {
    timer = setTimeout(() => resolve('timed out'), timeoutMs);
  });
  try {
    const settled = await Promise.race([outcomes, timedOut]);
    if (settled !== 'timed out') return settled.map(toResult);
    const error = {
      code: 'REQUEST_TIMED_OUT',
      message:
        `the records were not all acknowledged within ${timeoutMs} ms; they may still be ` +
        'appended (retry with the same idempotency_key to learn where)',
      retriable: true,
    };
    return Array.from({ length: recordCount }, () => ({ partition: -1, offset: -1n, error }));
  } finally {
    clearTimeout(timer);
  }
}

function toResult(outcome: RecordOutcome): PublishResult {
  if (outcome.error === undefined) {
    return { partition: outcome.partition, offset: outcome.offset, error: undefined };
  }
  return {
    partition: outcome.partition,
    offset: -1n,
    error: {
      code: outcome.error.code,
      message: outcome.error.message,
      retriable: outcome.error.retriable,
    },
  };
}
