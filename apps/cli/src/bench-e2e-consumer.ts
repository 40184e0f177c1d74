/**
 * The consuming half of `spool bench e2e`, run in a worker thread of the bench process (see
 * bench-e2e.ts for why): it reads the topic from the offsets it is given and posts, for each
 * batch, the end-to-end latency of every record in it. The latency is the receive time minus the
 * time the record was due, which the producer wrote into the value; both are read on one clock
 * (benchClockMs), so two threads can subtract them.
 *
 * Value layout, written by bench-e2e.ts:
 *   bytes 0..7  float64 LE  when the record was due, on the bench clock, in ms
 *   byte  8     0 or 1      1 for a warm-up record (sent and consumed, not measured)
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Spool, type SpoolConfig } from '@spool/client';
import { BenchClock } from './bench-clock';

/** What the producing thread hands over. */
export interface EndToEndConsumerInput {
  readonly gateway: string;
  /** TLS as the producing thread connects (--command-config); PEM contents cross to the worker. */
  readonly ssl: SpoolConfig['ssl'];
  /** The user and password the producing thread connects with, if any. */
  readonly sasl: SpoolConfig['sasl'];
  readonly topic: string;
  /** Where each partition's log ended before the first send: every record past it is ours. */
  readonly assignments: readonly { readonly partition: number; readonly offset: bigint }[];
  /** Records to consume in all, warm-up ones included; the worker ends after the last. */
  readonly records: number;
  /** The producing thread's clock offset (BenchClock.offsetMs), so both read the same clock. */
  readonly producerClockOffsetMs: number;
}

/** One batch, as posted to the producing thread. */
export interface EndToEndBatchMessage {
  readonly type: 'batch';
  /** Latency in ms of each measured record of the batch (warm-up records are left out). */
  readonly latenciesMs: Float64Array;
  /** Warm-up records in the batch. */
  readonly warmupRecords: number;
  /** Value bytes of the measured records. */
  readonly measuredBytes: number;
}

export type EndToEndWorkerMessage =
  | EndToEndBatchMessage
  | { readonly type: 'assigned' }
  | { readonly type: 'done' }
  | { readonly type: 'failed'; readonly message: string };

export const warmupFlagPosition = 8;
/** The smallest value that holds the due time and the warm-up flag. */
export const endToEndValueBytesMin = warmupFlagPosition + 1;

async function consume(input: EndToEndConsumerInput): Promise<void> {
  const port = parentPort!;
  const clock = new BenchClock(input.producerClockOffsetMs);
  const spool = new Spool({
    brokers: [input.gateway],
    clientId: 'spool-cli',
    logLevel: 'silent',
    ...(input.ssl === undefined ? {} : { ssl: input.ssl }),
    ...(input.sasl === undefined ? {} : { sasl: input.sasl }),
  });
  const consumer = spool.consumer({ autoOffsetReset: 'latest' });
  let consumed = 0;
  try {
    consumer.assign(
      input.assignments.map(({ partition, offset }) => ({ topic: input.topic, partition, offset })),
    );
    port.postMessage({ type: 'assigned' } satisfies EndToEndWorkerMessage);
    await new Promise<void>((resolve, reject) => {
      consumer.on('crash', reject);
      consumer
        .run({
          eachBatch: async ({ batch }) => {
            if (consumed >= input.records) return;
            const nowMs = clock.nowMs();
            const count = Math.min(batch.messages.length, input.records - consumed);
            const latenciesMs = new Float64Array(count);
            let measured = 0;
            let measuredBytes = 0;
            for (let index = 0; index < count; index++) {
              const value = batch.messages[index]!.value!;
              if (value[warmupFlagPosition] === 1) continue;
              latenciesMs[measured++] = nowMs - value.readDoubleLE(0);
              measuredBytes += value.length;
            }
            consumed += count;
            const message: EndToEndBatchMessage = {
              type: 'batch',
              latenciesMs: latenciesMs.subarray(0, measured),
              warmupRecords: count - measured,
              measuredBytes,
            };
            port.postMessage(message, [latenciesMs.buffer]);
            if (consumed >= input.records) resolve();
          },
        })
        .catch(reject);
    });
    port.postMessage({ type: 'done' } satisfies EndToEndWorkerMessage);
  } finally {
    await consumer.disconnect().catch(() => {});
  }
}

if (!isMainThread && parentPort !== null) {
  consume(workerData as EndToEndConsumerInput).catch((error: unknown) => {
    parentPort!.postMessage({
      type: 'failed',
      message: error instanceof Error ? error.message : String(error),
    } satisfies EndToEndWorkerMessage);
  });
}
