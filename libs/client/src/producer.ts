import { recordBatchHeaderSizeBytes, type RecordInput } from '@spool/protocol';
import { BufferMemory } from './buffer-memory';
import { ClientLifecycle, ClientState } from './client-lifecycle';
import {
  resolveProducerConfig,
  type ProducerConfig,
  type ProducerOptions,
  type ResolvedSpoolConfig,
} from './config';
import { ClientErrorCode, clientError, partitionName, toSpoolError } from './errors';
import { GatewayConnection } from './gateway-connection';
import {
  recordSizeUpperBoundBytes,
  toRecordInput,
  type ProducerRecord,
  type RecordMetadata,
} from './message';
import { DefaultPartitioner } from './partitioner';
import type { ProducerBatch } from './producer-batch';
import { RecordAccumulator } from './record-accumulator';
import { ProducerSender } from './producer-sender';
import { TopicMetadataCache, type TopicPartitions } from './topic-metadata';

/**
 * The producer, used as KafkaJS's: `await producer.send({ topic, messages })` resolves with
 * where each message landed, `{ topic, partition, offset }`, in the order given. Underneath it
 * works as Kafka's Java producer: records join per-partition batches (record-accumulator.ts)
 * that a sender drains into Produce requests (producer-sender.ts) after lingerMs or once
 * batchSizeBytes are reached, holding at most bufferMemoryBytes (buffer-memory.ts).
 *
 * A `send` that fails part way (its buffer wait timed out at the fifth message) has already
 * queued the messages before the failing one; those are still produced.
 */
export class Producer {
  private readonly config: ProducerConfig;
  private readonly lifecycle: ClientLifecycle;
  private readonly connection: GatewayConnection;
  private readonly metadata: TopicMetadataCache;
  private readonly partitioner = new DefaultPartitioner();
  private readonly memory: BufferMemory;
  private readonly accumulator: RecordAccumulator;
  private readonly sender: ProducerSender;

  constructor(spool: ResolvedSpoolConfig, options: ProducerOptions = {}) {
    this.config = resolveProducerConfig(options);
    const logger = spool.logger.child({ component: 'producer' });
    this.lifecycle = new ClientLifecycle('producer', logger);
    this.connection = new GatewayConnection(spool.brokers, spool.clientId, logger);
    this.metadata = new TopicMetadataCache(this.connection, this.config);
    this.memory = new BufferMemory(this.config.bufferMemoryBytes, this.config.maxBlockMs, () =>
      this.sender.wake(),
    );
    this.accumulator = new RecordAccumulator(this.config, (batch) =>
      this.partitioner.onBatchClosed(batch.topic, batch.partition),
    );
    this.sender = new ProducerSender(
      this.config,
      this.connection,
      this.accumulator,
      this.memory,
      this.metadata,
      logger,
    );
  }

  /** Waits until a gateway accepts a connection; optional, `send` connects on first use. */
  async connect(): Promise<void> {
    this.lifecycle.ensureOpen('connect');
    await this.connection.waitForReady(this.config.requestTimeoutMs);
    if (this.lifecycle.state === ClientState.Created) {
      this.lifecycle.transitionTo([ClientState.Created], ClientState.Connected);
    }
  }

  /**
   * Sends whose records are still on their way into the accumulator (waiting for metadata or
   * buffer space). Kafka's send() has appended when it returns, so flush() covers every send
   * made before it; here send is asynchronous, and flush waits for these first.
   */
  private readonly admitting = new Set<Promise<unknown>>();

  async send(record: ProducerRecord): Promise<RecordMetadata[]> {
    this.lifecycle.ensureOpen('send');
    let admitted: () => void = () => undefined;
    const admission = new Promise<void>((resolve) => (admitted = resolve));
    this.admitting.add(admission);
    try {
      return await this.admit(record, () => {
        this.admitting.delete(admission);
        admitted();
      });
    } finally {
      this.admitting.delete(admission);
      admitted();
    }
  }

  /** Appends the records of one send; calls `appended` once all are in the accumulator. */
  private async admit(record: ProducerRecord, appended: () => void): Promise<RecordMetadata[]> {
    if (typeof record?.topic !== 'string' || record.topic === '') {
      throw clientError(ClientErrorCode.InvalidRequest, 'send needs a topic name');
    }
    if (!Array.isArray(record.messages)) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `topic ${record.topic}: messages must be an array`,
      );
    }
    const deadlineMs = Date.now() + this.config.maxBlockMs;
    const topic = record.topic;
    let partitions = await this.metadata.partitions(topic, deadlineMs);
    // Each record's batch and index in it; its offset is the batch's base offset + the index.
    const batches: ProducerBatch[] = [];
    const indexes: number[] = [];
    for (const [index, message] of record.messages.entries()) {
      const subject = `topic ${topic} message ${index}`;
      const input = toRecordInput(message, subject);
      const sizeBytes = this.checkRecordSize(input, subject);
      if (message.partition !== undefined) {
        partitions = await this.ensurePartitionExists(partitions, message.partition, deadlineMs);
      }
      const partition = message.partition ?? this.partitioner.partition(input.key, partitions);
      if (!this.memory.tryReserve(sizeBytes)) {
        try {
          await this.memory.reserve(sizeBytes, Math.max(0, deadlineMs - Date.now()));
        } catch (error) {
          throw toSpoolError(error, partitionName(topic, partition));
        }
      }
      if (!this.lifecycle.isOpen) {
        this.memory.release(sizeBytes);
        this.lifecycle.ensureOpen('send');
      }
      const batch = this.accumulator.append(topic, partition, input, sizeBytes);
      batches.push(batch);
      indexes.push(batch.recordCount - 1);
      this.sender.wake();
    }
    appended();
    return recordMetadata(batches, indexes);
  }

  /** KafkaJS's sendBatch: several topics in one call; results in the order given. */
  async sendBatch(batch: { topicMessages: readonly ProducerRecord[] }): Promise<RecordMetadata[]> {
    const results = await Promise.all(batch.topicMessages.map((record) => this.send(record)));
    return results.flat();
  }

  /** Sends every queued record now and waits for their results (Kafka's flush). */
  async flush(): Promise<void> {
    this.lifecycle.ensureOpen('flush');
    await Promise.all(this.admitting);
    await this.sender.flush();
  }

  /** Flushes, then closes the connection; sends waiting for buffer space fail CLIENT_CLOSED. */
  async disconnect(): Promise<void> {
    if (!this.lifecycle.isOpen) return;
    this.lifecycle.transitionTo(
      [ClientState.Created, ClientState.Connected],
      ClientState.Disconnecting,
    );
    this.memory.failWaiters(
      clientError(
        ClientErrorCode.ClientClosed,
        'the producer disconnected while send waited for buffer space',
      ),
    );
    await Promise.all(this.admitting);
    await this.sender.flush();
    this.sender.stop();
    this.connection.close();
    this.lifecycle.transitionTo([ClientState.Disconnecting], ClientState.Disconnected);
  }

  private checkRecordSize(input: RecordInput, subject: string): number {
    const sizeBytes = recordSizeUpperBoundBytes(input);
    const batchSizeBytes = sizeBytes + recordBatchHeaderSizeBytes;
    if (
      sizeBytes > this.config.bufferMemoryBytes ||
      batchSizeBytes > this.config.maxRequestSizeBytes
    ) {
      throw clientError(
        ClientErrorCode.MessageTooLarge,
        `${subject}: the record is up to ${sizeBytes} bytes when encoded, larger than ` +
          `bufferMemoryBytes=${this.config.bufferMemoryBytes} or maxRequestSizeBytes=` +
          `${this.config.maxRequestSizeBytes} allow`,
      );
    }
    return sizeBytes;
  }

  /** An explicit partition beyond the cached count: describe the topic once more, then fail. */
  private async ensurePartitionExists(
    partitions: TopicPartitions,
    partition: number,
    deadlineMs: number,
  ): Promise<TopicPartitions> {
    if (!Number.isInteger(partition) || partition < 0) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `topic ${partitions.topic}: partition must be an integer of 0 or more, got ${partition}`,
      );
    }
    if (partition < partitions.partitionCount) return partitions;
    this.metadata.invalidate(partitions.topic);
    const refreshed = await this.metadata.partitions(partitions.topic, deadlineMs);
    if (partition < refreshed.partitionCount) return refreshed;
    throw clientError(
      ClientErrorCode.UnknownTopicOrPartition,
      `${partitionName(partitions.topic, partition)}: the topic has ${refreshed.partitionCount} ` +
        'partitions',
    );
  }
}

/**
 * Where each record landed, in the order sent, once every batch they joined is acknowledged;
 * the first batch to fail rejects with its error (as a Promise.all of the records would).
 */
async function recordMetadata(
  batches: readonly ProducerBatch[],
  indexes: readonly number[],
): Promise<RecordMetadata[]> {
  const distinct: ProducerBatch[] = [];
  for (const batch of batches) if (distinct.at(-1) !== batch) distinct.push(batch);
  const baseOffsets = new Map<ProducerBatch, bigint>();
  await Promise.all(
    [...new Set(distinct)].map((batch) =>
      batch.baseOffset.then((baseOffset) => baseOffsets.set(batch, baseOffset)),
    ),
  );
  return batches.map((batch, position) => {
    const baseOffset = baseOffsets.get(batch)!;
    return {
      topic: batch.topic,
      partition: batch.partition,
      offset: baseOffset < 0n ? -1n : baseOffset + BigInt(indexes[position]!),
    };
  });
}
