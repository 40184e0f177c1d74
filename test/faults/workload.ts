import { Spool, type Consumer, type Producer } from '@spool/client';
import pino from 'pino';
import { consecutiveRuns, type HistoryWriter } from './history';

/**
 * The workload of a fault run: producers with acks=all (idempotent when the profile says so)
 * writing unique, numbered records (`p<producer>-<seq>`), `recordsPerSend` at a time to one
 * partition, each send to the next partition (so a producer's records in a partition are in
 * increasing sequence), and consumers that
 * record every record delivered to them: members of one consumer group that process a batch
 * (record it) and then commit the offset after it (at-least-once) in the background, or, with no group members,
 * one consumer assigned every partition. Every send's invocation and completion, every delivery
 * and every acknowledged commit goes to the history. Each producer has one send in flight and a
 * pause between sends, so the rate is bounded (producers × recordsPerSend per round trip and
 * pause: thousands of records per second on a healthy cluster) and so is the history, which holds
 * one line per send and per delivered batch. A consumer that crashes is replaced by a new one (a
 * new member of the group). The SDK's own logs (debug: every produce retry and its backoff, every
 * consume stream restart, heartbeat failure and membership change) go to `clientLogPath`, the
 * client's side of the outage breakdown.
 */
export interface WorkloadOptions {
  readonly gatewayAddresses: readonly string[];
  readonly topic: string;
  readonly partitions: number;
  readonly producers: number;
  /** Pause between one producer's sends (with recordsPerSend, the workload's rate). */
  readonly producePauseMs: number;
  /** Records in one send, all to one partition. */
  readonly recordsPerSend: number;
  readonly idempotent: boolean;
  /** Members of the consumer group; 0 consumes without a group (one assigned consumer). */
  readonly groupMembers: number;
  /** Where the SDK's debug log goes (JSON lines). */
  readonly clientLogPath: string;
}

export const groupId = 'faults-group';

/** Bounds of one send: attempts and their timeout, so every send completes or fails. */
const sendRetries = 30;
const requestTimeoutMs = 5_000;

export class Workload {
  private running = true;
  private readonly producerLoops: Promise<void>[] = [];
  private readonly clients: Array<Producer | Consumer> = [];
  /** Next offset to deliver per partition, so a restarted consumer resumes where it was. */
  private readonly nextOffsets = new Map<number, bigint>();
  private readonly consumers = new Map<number, Consumer>();
  /** Consumer numbers in the history: a replacement gets a new one. */
  private nextConsumerNumber = 0;
  private readonly spool: Spool;
  private readonly clientLog: pino.DestinationStream & { end(): void };
  private clientLogClosed = false;

  constructor(
    private readonly options: WorkloadOptions,
    private readonly history: HistoryWriter,
  ) {
    this.clientLog = pino.destination({ dest: options.clientLogPath, sync: true });
    this.spool = new Spool({
      brokers: [...options.gatewayAddresses],
      clientId: 'faults',
      logger: pino({ level: 'debug', base: { service: 'faults-workload' } }, this.clientLog),
    });
  }

  start(): void {
    for (let producer = 0; producer < this.options.producers; producer++) {
      this.producerLoops.push(this.produceLoop(producer));
    }
    const members = Math.max(1, this.options.groupMembers);
    for (let slot = 0; slot < members; slot++) this.startConsumer(slot);
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
      ...(this.options.idempotent
        ? { enableIdempotence: true, maxInFlight: 1 }
        : { enableIdempotence: false }),
    });
    this.clients.push(producer);
    const { recordsPerSend } = this.options;
    for (let send = 0; this.running; send++) {
      const values = Array.from(
        { length: recordsPerSend },
        (_, record) => `p${index}-${send * recordsPerSend + record}`,
      );
      const partition = send % this.options.partitions;
      this.history.append({ type: 'invoke', producer: index, values, partition });
      try {
        const landed = await producer.send({
          topic: this.options.topic,
          messages: values.map((value) => ({ value, partition })),
        });
        // A send's records land at consecutive offsets unless they spanned batches that another
        // producer's records came between: one line per run at consecutive offsets.
        const records = landed.map((metadata, record) => ({
          offset: metadata.offset,
          value: values[record]!,
        }));
        for (const run of consecutiveRuns(records)) {
          this.history.append({
            type: 'ok',
            producer: index,
            values: run.values,
            partition,
            offset: run.offset.toString(),
          });
        }
      } catch (error) {
        this.history.append({
          type: 'fail',
          producer: index,
          values,
          partition,
          error: String((error as Error).message).slice(0, 300),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.producePauseMs));
    }
  }

  /** Starts the consumer of a slot; it records deliveries and (in a group) commits. */
  private startConsumer(slot: number): void {
    if (!this.running) return;
    const number = this.nextConsumerNumber++;
    const inGroup = this.options.groupMembers > 0;
    const consumer = this.spool.consumer({
      autoOffsetReset: 'earliest',
      requestTimeoutMs,
      retries: 1_000,
      retryBackoffMaxMs: 1_000,
      ...(inGroup
        ? { groupId, enableAutoCommit: false, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000 }
        : {}),
    });
    this.consumers.set(slot, consumer);
    const topic = this.options.topic;
    let replaced = false;
    const replace = (): void => {
      if (replaced) return;
      replaced = true;
      void consumer.disconnect().catch(() => undefined);
      setTimeout(() => this.startConsumer(slot), 500);
    };
    consumer.on('crash', replace);
    const commits = inGroup
      ? new BackgroundCommits(consumer, topic, (partition, offset) =>
          this.history.append({
            type: 'commit',
            consumer: number,
            partition,
            offset: offset.toString(),
          }),
        )
      : undefined;
    const started = async (): Promise<void> => {
      if (inGroup) {
        await consumer.subscribe({ topic, fromBeginning: true });
      } else {
        consumer.assign(
          Array.from({ length: this.options.partitions }, (_, partition) => ({
            topic,
            partition,
            offset: this.nextOffsets.get(partition) ?? 0n,
          })),
        );
      }
      await consumer.run({
        eachBatch: async ({ batch }) => {
          if (batch.messages.length === 0) return;
          const records = batch.messages.map((message) => ({
            offset: message.offset,
            value: message.value?.toString() ?? '',
          }));
          for (const run of consecutiveRuns(records)) {
            this.history.append({
              type: 'deliver',
              consumer: number,
              partition: batch.partition,
              offset: run.offset.toString(),
              values: run.values,
            });
          }
          const next = batch.messages.at(-1)!.offset + 1n;
          if (next > (this.nextOffsets.get(batch.partition) ?? 0n)) {
            this.nextOffsets.set(batch.partition, next);
          }
          // At-least-once: the batch is processed (recorded) before its offset is committed.
          commits?.add(batch.partition, next);
        },
      });
    };
    started().catch(replace);
  }

  /** The offset after the last record delivered in each partition, by any consumer. */
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
    await Promise.all(
      [...this.consumers.values()].map((consumer) => consumer.disconnect().catch(() => undefined)),
    );
    await Promise.all(this.clients.map((client) => client.disconnect().catch(() => undefined)));
    if (!this.clientLogClosed) this.clientLog.end();
    this.clientLogClosed = true;
  }

  get spoolClient(): Spool {
    return this.spool;
  }
}

/**
 * A member's commits in the background, as an application does with Kafka's commitAsync, so a
 * group coordinator that moves holds up the commits but not the deliveries: one commit in flight
 * per member (so its acknowledged commits of a partition never go backwards), carrying the latest
 * processed offset of every partition since the last one. A refused commit (the coordinator away,
 * the group moved on) is not an error: a later batch's commit carries a newer offset, and
 * records not committed are delivered again.
 */
class BackgroundCommits {
  private readonly pending = new Map<number, bigint>();
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly consumer: Consumer,
    private readonly topic: string,
    private readonly acknowledged: (partition: number, offset: bigint) => void,
  ) {}

  add(partition: number, offset: bigint): void {
    this.pending.set(partition, offset);
    this.inFlight ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.size > 0) {
        const offsets = [...this.pending];
        this.pending.clear();
        try {
          await this.consumer.commitOffsets(
            offsets.map(([partition, offset]) => ({ topic: this.topic, partition, offset })),
          );
        } catch {
          continue;
        }
        for (const [partition, offset] of offsets) this.acknowledged(partition, offset);
      }
    } finally {
      this.inFlight = undefined;
    }
  }
}
