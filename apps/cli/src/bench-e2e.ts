/**
 * `spool bench e2e`: records produced at a fixed rate and consumed by this process; the latency
 * of each record is from when the fixed rate made it due (the time travels in the value) until
 * the consumer has it, so a producer that cannot hold the rate shows it as latency.
 *
 * - The consumer runs in a worker thread with its own event loop and heap, as producers and
 *   consumers are separate applications in a real deployment (and separate workers in the
 *   OpenMessaging benchmark). On one thread, the producer's batching and the consumer's decoding
 *   queue behind each other, and each one's garbage collections pause the other: the benchmark
 *   would measure its own event loop. See bench-e2e-consumer.ts for the value layout.
 * - --warmup-seconds S first sends S seconds' worth of records at the same rate; they are
 *   consumed but not measured, and the figures count from the first measured record. A run
 *   otherwise measures the start-up: a topic just created (its followers join their first fetch
 *   up to replica.fetch.wait.max.ms later), connections being opened and code not yet optimised.
 */
import { Worker } from 'node:worker_threads';
import * as path from 'node:path';
import type { Spool, SpoolConfig } from '@spool/client';
import type { BenchSettings } from './bench-options';
import { produceAll, produceWork, Throttle } from './bench-produce';
import { BenchClock } from './bench-clock';
import { BenchTally, type BenchResult } from './bench-report';
import {
  warmupFlagPosition,
  type EndToEndConsumerInput,
  type EndToEndWorkerMessage,
} from './bench-e2e-consumer';

/** How long the consumer may go without a record before the run fails. */
const recordWaitMsMax = 30_000;

export async function benchEndToEnd(
  spool: Spool,
  connection: {
    readonly gateway: string;
    readonly ssl: SpoolConfig['ssl'];
    readonly sasl: SpoolConfig['sasl'];
  },
  settings: BenchSettings,
  tally: BenchTally,
  producerSettings: BenchResult['settings'],
): Promise<BenchResult> {
  const warmupRecords = Math.round(
    settings.warmupSeconds * (settings.throughputRecordsPerSec ?? 0),
  );
  const totalRecords = warmupRecords + settings.records;
  const admin = spool.admin();
  let assignments: EndToEndConsumerInput['assignments'];
  try {
    // The consumer starts where the log ends now, so every record it sees is one sent below.
    const offsets = await admin.fetchTopicOffsets(settings.topic);
    assignments = offsets.map(({ partition, high }) => ({ partition, offset: high }));
  } finally {
    await admin.disconnect().catch(() => {});
  }
  const clockOffsetMs = BenchClock.offsetMs();
  const consumer = startConsumer({
    ...connection,
    topic: settings.topic,
    assignments,
    records: totalRecords,
    producerClockOffsetMs: clockOffsetMs,
  });
  let measuring = warmupRecords === 0;
  // The OpenMessaging benchmark's publish latency: from send to acknowledgement, per send.
  const publish = new BenchTally();
  let endedAtMs = 0;
  consumer.onBatch = (batch) => {
    if (!measuring) {
      tally.add(batch.warmupRecords, 0);
      return;
    }
    const latencies = batch.latenciesMs;
    const bytesEach = latencies.length === 0 ? 0 : batch.measuredBytes / latencies.length;
    for (let index = 0; index < latencies.length; index++) {
      tally.add(1, bytesEach, latencies[index]!);
    }
    endedAtMs = performance.now();
  };
  try {
    await consumer.assigned;
    const work = produceWork(totalRecords, new Throttle(settings.throughputRecordsPerSec));
    const produced = produceAll(spool, settings, work, publish, (first, values) => {
      if (first + values.length > warmupRecords && !measuring) {
        // The chunk with the first measured record: the figures start now, on clean tallies.
        tally.restart();
        publish.restart();
        measuring = true;
      }
      const nowMs = performance.now();
      for (let index = 0; index < values.length; index++) {
        const value = values[index]!;
        value.writeDoubleLE(work.throttle.dueAtMs(first + index, nowMs), 0);
        value[warmupFlagPosition] = first + index < warmupRecords ? 1 : 0;
      }
    });
    await Promise.all([produced, consumer.finished]);
  } finally {
    await consumer.stop();
  }
  const result = tally.result(
    'e2e',
    'from when each record was due at the fixed rate to the consumer',
    { ...producerSettings, warmupRecords },
    endedAtMs,
  );
  const acknowledged = publish.result('produce', 'from send to acknowledgement', {});
  return {
    ...result,
    publishP50Ms: acknowledged.p50Ms,
    publishP99Ms: acknowledged.p99Ms,
    publishMaxMs: acknowledged.maxMs,
  };
}

interface ConsumerThread {
  /** Settles once the worker has its assignment (or failed). */
  readonly assigned: Promise<void>;
  /** Settles once every record was consumed; rejects on a failure or a stall. */
  readonly finished: Promise<void>;
  onBatch: (batch: Extract<EndToEndWorkerMessage, { type: 'batch' }>) => void;
  stop(): Promise<void>;
}

function startConsumer(input: EndToEndConsumerInput): ConsumerThread {
  const worker = new Worker(path.join(__dirname, 'bench-e2e-consumer.js'), { workerData: input });
  let recordsSeen = 0;
  let settleAssigned!: { resolve: () => void; reject: (error: Error) => void };
  let settleFinished!: { resolve: () => void; reject: (error: Error) => void };
  const assigned = new Promise<void>((resolve, reject) => (settleAssigned = { resolve, reject }));
  const finished = new Promise<void>((resolve, reject) => (settleFinished = { resolve, reject }));
  // Whichever of the two nobody awaits must not become an unhandled rejection.
  assigned.catch(() => {});
  finished.catch(() => {});
  const fail = (error: Error): void => {
    settleAssigned.reject(error);
    settleFinished.reject(error);
  };
  const thread: ConsumerThread = {
    assigned,
    finished,
    onBatch: () => {},
    async stop() {
      clearInterval(stallTimer);
      await worker.terminate();
    },
  };
  worker.on('message', (message: EndToEndWorkerMessage) => {
    switch (message.type) {
      case 'assigned':
        settleAssigned.resolve();
        break;
      case 'batch':
        recordsSeen += message.latenciesMs.length + message.warmupRecords;
        thread.onBatch(message);
        break;
      case 'done':
        settleFinished.resolve();
        break;
      case 'failed':
        fail(new Error(`the e2e consumer failed: ${message.message}`));
        break;
    }
  });
  worker.on('error', (error) => fail(error));
  worker.on('exit', (code) => fail(new Error(`the e2e consumer thread exited with code ${code}`)));
  let seenAtLastCheck = -1;
  const stallTimer = setInterval(() => {
    if (recordsSeen === seenAtLastCheck) {
      fail(
        new Error(
          `no record of ${input.topic} arrived for ${recordWaitMsMax} ms ` +
            `(${recordsSeen} of ${input.records} consumed)`,
        ),
      );
    }
    seenAtLastCheck = recordsSeen;
  }, recordWaitMsMax);
  return thread;
}
