import { randomBytes } from 'node:crypto';
import type { Message, Producer, Spool } from '@spool/client';
import type { BenchSettings } from './bench-options';
import type { BenchTally } from './bench-report';

/**
 * The producing side of `spool bench produce` and `spool bench e2e`, as kafka-producer-perf-test:
 * each producer sends chunks of records and measures each chunk from `send` until its last
 * record is acknowledged; every record of the chunk is counted with that latency (an upper bound
 * of each record's own). Memory is bounded by the producer's buffer: a chunk waits for room, and
 * at most `outstandingChunksMax` chunks are between `send` and their acknowledgement.
 */

/** Records per `send`: enough to amortise the call, small enough for a fine latency figure. */
const recordsPerSendMax = 200;
/** Chunks sent and not yet acknowledged, per producer. */
const outstandingChunksMax = 512;

/** Holds a rate of `recordsPerSec` by sleeping whenever the records sent run ahead of it. */
export class Throttle {
  /** Set at the first admit, so connecting the producers does not count as falling behind. */
  private startedAtMs: number | undefined;
  constructor(private readonly recordsPerSec: number | undefined) {}

  /**
   * When record `index` was due at the fixed rate (now at the latest; now without a rate). The
   * e2e latency counts from here, so a producer that falls behind the rate shows its lag in the
   * latency instead of hiding it (coordinated omission: a record stamped when the loop finally
   * got to it would not count the time it should already have been on its way).
   */
  dueAtMs(index: number, nowMs = performance.now()): number {
    if (this.recordsPerSec === undefined || this.startedAtMs === undefined) return nowMs;
    return Math.min(nowMs, this.startedAtMs + (index / this.recordsPerSec) * 1000);
  }

  async admit(recordsSoFar: number): Promise<void> {
    if (this.recordsPerSec === undefined) return;
    this.startedAtMs ??= performance.now();
    const dueAtMs = this.startedAtMs + (recordsSoFar / this.recordsPerSec) * 1000;
    const waitMs = dueAtMs - performance.now();
    if (waitMs >= 1) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/** Records per send: at a fixed rate about a millisecond's worth, so sends spread evenly. */
export function recordsPerSend(settings: BenchSettings): number {
  if (settings.throughputRecordsPerSec === undefined) return recordsPerSendMax;
  const perMs = Math.floor(settings.throughputRecordsPerSec / settings.producers / 1000);
  return Math.max(1, Math.min(recordsPerSendMax, perMs));
}

export function makeProducer(spool: Spool, settings: BenchSettings): Producer {
  return spool.producer({
    acks: settings.acks,
    compression: settings.compression,
    maxInFlight: settings.maxInFlight,
    ...(settings.batchSizeBytes === undefined ? {} : { batchSizeBytes: settings.batchSizeBytes }),
    ...(settings.lingerMs === undefined ? {} : { lingerMs: settings.lingerMs }),
    // A 1 MiB batch must fit a request.
    ...(settings.batchSizeBytes === undefined || settings.batchSizeBytes < 1024 * 1024
      ? {}
      : { maxRequestSizeBytes: settings.batchSizeBytes * 2 + 1024 }),
  });
}

export interface ProduceWork {
  /** Hands out the next `count` records across producers: the index of the first, or -1. */
  claim(count: number): number;
  /** Records to send in all, across producers. */
  readonly total: number;
  readonly throttle: Throttle;
}

export function produceWork(total: number, throttle: Throttle): ProduceWork {
  let claimed = 0;
  return {
    throttle,
    total,
    claim(count) {
      if (claimed >= total) return -1;
      const first = claimed;
      claimed += Math.min(count, total - claimed);
      return first;
    },
  };
}

/**
 * One producer's loop. `valuesOf` makes the values of one send's records (the e2e mode writes the due time
 * into it); null means the same random value for every record (Kafka's perf tool does the same).
 */
export async function runProducer(
  producer: Producer,
  settings: BenchSettings,
  work: ProduceWork,
  tally: BenchTally | undefined,
  valuesOf: ((first: number, count: number) => readonly Buffer[]) | null,
): Promise<void> {
  const sharedValue = randomBytes(settings.recordSizeBytes);
  const chunkRecords = recordsPerSend(settings);
  let outstanding = 0;
  let wake: (() => void) | undefined;
  let failure: { error: unknown } | undefined;
  for (;;) {
    const first = work.claim(chunkRecords);
    if (first < 0 || failure !== undefined) break;
    const count = Math.min(chunkRecords, work.total - first);
    await work.throttle.admit(first);
    const messages: Message[] = new Array<Message>(count);
    const values = valuesOf?.(first, count);
    let bytes = 0;
    for (let index = 0; index < count; index++) {
      const key = settings.keys ? String(first + index) : null;
      messages[index] = { key, value: values === undefined ? sharedValue : values[index]! };
      bytes += settings.recordSizeBytes + (key?.length ?? 0);
    }
    const sentAtMs = performance.now();
    outstanding += 1;
    producer.send({ topic: settings.topic, messages }).then(
      () => {
        tally?.add(count, bytes, performance.now() - sentAtMs);
        outstanding -= 1;
        wake?.();
      },
      (error: unknown) => {
        failure ??= { error };
        outstanding -= 1;
        wake?.();
      },
    );
    while (outstanding >= outstandingChunksMax) {
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  }
  while (outstanding > 0) {
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  if (failure !== undefined) throw failure.error;
}

/** Runs `settings.producers` producers over `work` until it is all acknowledged. */
export async function produceAll(
  spool: Spool,
  settings: BenchSettings,
  work: ProduceWork,
  tally: BenchTally | undefined,
  valuesOf: ((first: number, count: number) => readonly Buffer[]) | null,
): Promise<void> {
  const producers = Array.from({ length: settings.producers }, () => makeProducer(spool, settings));
  try {
    await Promise.all(producers.map((producer) => producer.connect()));
    await Promise.all(
      producers.map((producer) => runProducer(producer, settings, work, tally, valuesOf)),
    );
  } finally {
    await Promise.all(producers.map((producer) => producer.disconnect().catch(() => {})));
  }
}
