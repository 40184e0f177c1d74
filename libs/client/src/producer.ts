import type { SpoolError } from '@spool/common';
import { recordBatchHeaderSizeBytes } from '@spool/record-batch';
import { BatchBufferPool } from './batch-buffer-pool';
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
  messageSubject,
  recordSizeUpperBoundBytes,
  toBytes,
  toHeaders,
  toTimestampMs,
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
  private readonly unregister: () => void;
  private closing: Promise<void> | undefined;

  constructor(spool: ResolvedSpoolConfig, options: ProducerOptions = {}) {
    this.config = resolveProducerConfig(options);
    const logger = spool.logger.child({ component: 'producer' });
    this.lifecycle = new ClientLifecycle('producer', logger);
    this.connection = new GatewayConnection(
      spool.brokers,
      spool.clientId,
      logger,
      spool.channelCredentials,
    );
    this.metadata = new TopicMetadataCache(this.connection, this.config);
    this.memory = new BufferMemory(this.config.bufferMemoryBytes, this.config.maxBlockMs, () =>
      this.sender.wake(),
    );
    this.accumulator = new RecordAccumulator(
      this.config,
      (batch) => this.partitioner.onBatchClosed(batch.topic, batch.partition),
      new BatchBufferPool(
        this.config.batchSizeBytes + recordBatchHeaderSizeBytes,
        this.config.bufferMemoryBytes,
      ),
    );
    this.sender = new ProducerSender(
      this.config,
      this.connection,
      this.accumulator,
      this.memory,
      this.metadata,
      logger,
    );
    this.unregister = spool.registry?.register(this) ?? (() => {});
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
   * buffer space), settled either way. Kafka's send() has appended when it returns, so flush()
   * covers every send made before it; here send is asynchronous, and flush waits for these first.
   */
  private readonly admitting = new Set<Promise<unknown>>();

  /**
   * Resolves with where each message landed once every batch it joined is acknowledged. The
   * records are written into their batches as they are admitted, and `record` is let go then:
   * waiting for the acknowledgement holds only the batches.
   */
  send(record: ProducerRecord): Promise<RecordMetadata[]> {
    try {
      this.lifecycle.ensureOpen('send');
    } catch (error) {
      return Promise.reject(error);
    }
    const admission = this.admit(record);
    const settled: Promise<void> = admission.then(
      () => void this.admitting.delete(settled),
      () => void this.admitting.delete(settled),
    );
    this.admitting.add(settled);
    return admission.then(landedRecords);
  }

  /**
   * send, answered message by message: where each message landed, or the error of the batch it
   * joined, in the order given (the gateway's record-level Publish, which answers per record).
   * Rejects only when the messages could not all be admitted (a bad message, no buffer space
   * within maxBlockMs); those admitted before it are still produced, so a caller that must not
   * half-write checks its messages first.
   */
  sendEach(record: ProducerRecord): Promise<RecordOutcome[]> {
    try {
      this.lifecycle.ensureOpen('send');
    } catch (error) {
      return Promise.reject(error);
    }
    const admission = this.admit(record);
    const settled: Promise<void> = admission.then(
      () => void this.admitting.delete(settled),
      () => void this.admitting.delete(settled),
    );
    this.admitting.add(settled);
    return admission.then(eachLandedRecord);
  }

  /** Appends the records of one send to their batches; resolves once all are in. */
  private async admit(record: ProducerRecord): Promise<BatchRun[]> {
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
    const messages = record.messages;
    let partitions = await this.metadata.partitions(topic, deadlineMs);
    // Consecutive records of one batch make one run: offset = base offset + index in the batch.
    const runs: BatchRun[] = [];
    // Kafka stamps a record without a timestamp at send(); one clock read per send, refreshed
    // after any wait.
    let nowMs = Date.now();
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (typeof message !== 'object' || message === null || !('value' in message)) {
        throw clientError(
          ClientErrorCode.InvalidRequest,
          `${messageSubject(topic, index)}: a message needs a value field`,
        );
      }
      const key = toBytes(message.key, 'key', topic, index);
      const value = toBytes(message.value, 'value', topic, index);
      const headers = toHeaders(message.headers, topic, index);
      const timestampMs = toTimestampMs(message.timestamp, nowMs, topic, index);
      const sizeBytes = this.checkRecordSize(
        recordSizeUpperBoundBytes(key, value, headers),
        topic,
        index,
      );
      // Only a partition past the cached count waits (for a describe): an await per record
      // would let concurrent sends interleave their records in a batch.
      if (message.partition !== undefined && !isCachedPartition(partitions, message.partition)) {
        partitions = await this.ensurePartitionExists(partitions, message.partition, deadlineMs);
      }
      const partition = message.partition ?? this.partitioner.partition(key, partitions);
      if (!this.memory.tryReserve(sizeBytes)) {
        try {
          await this.memory.reserve(sizeBytes, Math.max(0, deadlineMs - Date.now()));
        } catch (error) {
          throw toSpoolError(error, partitionName(topic, partition));
        }
        nowMs = Date.now();
      }
      // A send made before close is delivered (close waits for its admission, then flushes);
      // only a producer already closed has no sender left to take the record.
      if (this.lifecycle.state === ClientState.Closed) {
        this.memory.release(sizeBytes);
        this.lifecycle.ensureOpen('send');
      }
      const batch = this.accumulator.append(
        topic,
        partition,
        timestampMs,
        key,
        value,
        headers,
        sizeBytes,
      );
      const last = runs.length === 0 ? undefined : runs[runs.length - 1]!;
      // A run is contiguous in its batch: records of another send, admitted while this one
      // waited (for buffer space, say), start a new run.
      if (last?.batch === batch && last.firstIndex + last.count === batch.recordCount - 1) {
        last.count += 1;
      } else {
        runs.push({ batch, firstIndex: batch.recordCount - 1, count: 1 });
        this.sender.wake();
      }
    }
    this.sender.wake();
    return runs;
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

  /**
   * Flushes (every record sent so far is acknowledged or failed), then closes the connection;
   * sends waiting for buffer space fail CLIENT_CLOSED, later calls too. Kafka's close(); a
   * second call waits for the first.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  /** KafkaJS's name for `close`, kept as an alias. */
  disconnect(): Promise<void> {
    return this.close();
  }

  private async closeOnce(): Promise<void> {
    this.lifecycle.transitionTo([ClientState.Created, ClientState.Connected], ClientState.Closing);
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
    this.lifecycle.transitionTo([ClientState.Closing], ClientState.Closed);
    this.unregister();
  }

  private checkRecordSize(sizeBytes: number, topic: string, index: number): number {
    const batchSizeBytes = sizeBytes + recordBatchHeaderSizeBytes;
    if (
      sizeBytes > this.config.bufferMemoryBytes ||
      batchSizeBytes > this.config.maxRequestSizeBytes
    ) {
      throw clientError(
        ClientErrorCode.MessageTooLarge,
        `${messageSubject(topic, index)}: the record is up to ${sizeBytes} bytes when encoded, ` +
          `larger than bufferMemoryBytes=${this.config.bufferMemoryBytes} or ` +
          `maxRequestSizeBytes=${this.config.maxRequestSizeBytes} allow`,
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

/** A valid partition number below the cached partition count: no describe needed. */
function isCachedPartition(partitions: TopicPartitions, partition: number): boolean {
  return Number.isInteger(partition) && partition >= 0 && partition < partitions.partitionCount;
}

/** Where a message of sendEach landed, or (offset -1n) the error of the batch it joined. */
export interface RecordOutcome extends RecordMetadata {
  readonly error?: SpoolError;
}

/** Consecutive records of one send that joined the same batch. */
interface BatchRun {
  readonly batch: ProducerBatch;
  /** The index in the batch of the run's first record. */
  readonly firstIndex: number;
  count: number;
}

/** BigInt(index) for the indexes a batch usually has, made once rather than per record. */
const smallIndexes: bigint[] = [];
function bigIndex(index: number): bigint {
  if (index >= 65_536) return BigInt(index);
  return (smallIndexes[index] ??= BigInt(index));
}

/** Where each record landed or why not, in the order sent, once every batch is settled. */
async function eachLandedRecord(runs: readonly BatchRun[]): Promise<RecordOutcome[]> {
  const outcomes = await Promise.allSettled(runs.map((run) => run.batch.baseOffset));
  const landed: RecordOutcome[] = [];
  runs.forEach((run, runIndex) => {
    const { topic, partition } = run.batch;
    const outcome = outcomes[runIndex]!;
    for (let index = run.firstIndex; index < run.firstIndex + run.count; index++) {
      if (outcome.status === 'rejected') {
        const error = toSpoolError(outcome.reason, partitionName(topic, partition));
        landed.push({ topic, partition, offset: -1n, error });
        continue;
      }
      const baseOffset = outcome.value;
      landed.push({
        topic,
        partition,
        offset: baseOffset < 0n ? -1n : baseOffset + bigIndex(index),
      });
    }
  });
  return landed;
}

/**
 * Where each record landed, in the order sent, once every batch they joined is acknowledged;
 * the first batch to fail rejects with its error (as a Promise.all of the records would).
 */
async function landedRecords(runs: readonly BatchRun[]): Promise<RecordMetadata[]> {
  const baseOffsets =
    runs.length === 1
      ? [await runs[0]!.batch.baseOffset]
      : await Promise.all(runs.map((run) => run.batch.baseOffset));
  let total = 0;
  for (const run of runs) total += run.count;
  const landed = new Array<RecordMetadata>(total);
  let position = 0;
  runs.forEach((run, runIndex) => {
    const { topic, partition } = run.batch;
    const baseOffset = baseOffsets[runIndex]!;
    for (let index = run.firstIndex; index < run.firstIndex + run.count; index++) {
      landed[position++] = {
        topic,
        partition,
        offset: baseOffset < 0n ? -1n : baseOffset + bigIndex(index),
      };
    }
  });
  return landed;
}
