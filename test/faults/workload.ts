import { Spool, type Consumer, type Producer } from '@spool/client';
import { createLogger } from '@spool/common';
import type { HistoryWriter } from './history';

/**
 * The workload of a fault run: producers with acks=all writing unique, numbered records
 * (`p<producer>-<seq>`, each producer cycling over the partitions, so its records in a partition
 * are in increasing sequence) and a consumer that records every record delivered to it. Every
 * send's invocation and completion, and every delivery, goes to the history. Each producer has
 * at most one record in flight and a pause between records, to keep the history's size bounded
 * on a long run.
 */
export interface WorkloadOptions {
  readonly gatewayAddress: string;
  readonly topic: string;
  readonly partitions: number;
  readonly producers: number;
  /** Pause between one producer's records (the workload's rate). */
  readonly producePauseMs: number;
  readonly idempotent: boolean;
}

/** Bounds of one send: attempts and their timeout, so every send completes or fails. */
const sendRetries = 30;
const requestTimeoutMs = 5_000;

export class Workload {
  private running = true;
  private readonly producerLoops: Promise<void>[] = [];
  private readonly clients: Array<Producer | Consumer> = [];
  /** Next offset to deliver per partition, so a restarted consumer resumes where it was. */
  private readonly nextOffsets = new Map<number, bigint>();
  private consumer: Consumer | undefined;
  private consumerRestarts = 0;
  private readonly spool: Spool;

  constructor(
    private readonly options: WorkloadOptions,
    private readonly history: HistoryWriter,
  ) {
    this.spool = new Spool({
      brokers: [options.gatewayAddress],
      clientId: 'faults',
      logger: createLogger({ service: 'faults-workload', level: 'silent' }),
    });
  }

  start(): void {
    for (let producer = 0; producer < this.options.producers; producer++) {
      this.producerLoops.push(this.produceLoop(producer));
    }
    this.startConsumer();
  }

  private async produceLoop(index: number): Promise<void> {
    const producer = this.spool.producer({
      acks: 'all',
      lingerMs: 0,
      retries: sendRetries,
      requestTimeoutMs,
      retryBackoffMs: 100,
      retryBackoffMaxMs: 1_000,
      maxBlockMs: 10_000,
      ...(this.options.idempotent ? { idempotent: true } : {}),
    });
    this.clients.push(producer);
    for (let sequence = 0; this.running; sequence++) {
      const value = `p${index}-${sequence}`;
      const partition = sequence % this.options.partitions;
      this.history.append({ type: 'invoke', producer: index, value, partition });
      try {
        const [metadata] = await producer.send({
          topic: this.options.topic,
          messages: [{ value, partition }],
        });
        this.history.append({
          type: 'ok',
          producer: index,
          value,
          partition,
          offset: metadata!.offset.toString(),
        });
      } catch (error) {
        this.history.append({
          type: 'fail',
          producer: index,
          value,
          partition,
          error: String((error as Error).message).slice(0, 300),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.producePauseMs));
    }
  }

  /** A consumer of every partition without a group; restarted where it was if it crashes. */
  private startConsumer(): void {
    if (!this.running) return;
    const consumer = this.spool.consumer({
      autoOffsetReset: 'earliest',
      requestTimeoutMs,
      retries: 1_000,
      retryBackoffMaxMs: 1_000,
    });
    this.consumer = consumer;
    consumer.assign(
      Array.from({ length: this.options.partitions }, (_, partition) => ({
        topic: this.options.topic,
        partition,
        offset: this.nextOffsets.get(partition) ?? 0n,
      })),
    );
    consumer.on('crash', () => {
      this.consumerRestarts++;
      void consumer.disconnect().catch(() => undefined);
      setTimeout(() => this.startConsumer(), 500);
    });
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          this.history.append({
            type: 'deliver',
            consumer: this.consumerRestarts,
            partition,
            offset: message.offset.toString(),
            value: message.value?.toString() ?? '',
          });
          this.nextOffsets.set(partition, message.offset + 1n);
        },
      })
      .catch(() => {
        this.consumerRestarts++;
        setTimeout(() => this.startConsumer(), 500);
      });
  }

  /** Next offset the consumer will deliver in each partition. */
  deliveredUpTo(partition: number): bigint {
    return this.nextOffsets.get(partition) ?? 0n;
  }

  /** Stops the producers (each finishes its send in flight). */
  async stopProducers(): Promise<void> {
    this.running = false;
    await Promise.all(this.producerLoops);
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.producerLoops);
    await this.consumer?.disconnect().catch(() => undefined);
    await Promise.all(this.clients.map((client) => client.disconnect().catch(() => undefined)));
  }

  get spoolClient(): Spool {
    return this.spool;
  }
}
