import { randomBytes } from 'node:crypto';
import type { Producer, Spool } from '@spool/client';
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

/** A message whose fields the benchmark rewrites when its slot comes round again. */
interface ReusedMessage {
  key: string | null;
  value: Buffer;
}

/**
 * What one send hands the producer: its message objects and, when the values are written per
 * send, views of one slab, a value each. A slot is taken for a send and given back when that send
 * settles, which is after the producer copied its records into batches, so nothing a send may
 * still read is overwritten; there are as many slots as sends were ever unsettled at once (at most
 * `outstandingChunksMax`). The benchmark then allocates nothing per record: at 520 k records/s the
 * objects and views it made for each record were most of the sending thread's young garbage.
 */
class ChunkSlot {
  readonly messages: ReusedMessage[];
  readonly values: readonly Buffer[];

  constructor(chunkRecords: number, recordSizeBytes: number, sharedValue: Buffer | undefined) {
    if (sharedValue === undefined) {
      const slab = Buffer.alloc(chunkRecords * recordSizeBytes, 0x2e);
      this.values = Array.from({ length: chunkRecords }, (_, index) =>
        slab.subarray(index * recordSizeBytes, (index + 1) * recordSizeBytes),
      );
    } else {
      this.values = [];
    }
    this.messages = Array.from({ length: chunkRecords }, (_, index) => ({
      key: null,
      value: sharedValue ?? this.values[index]!,
    }));
  }
}

/**
 * Writes the values of records `first` to `first + values.length - 1` into `values` (the e2e
 * mode writes each one's due time). Each value is `recordSizeBytes` long and holds whatever the
 * slot's previous send left in it.
 */
export type ValueWriter = (first: number, values: readonly Buffer[]) => void;

/**
 * One producer's loop. `writeValues` fills the values of each send's records; null means the same
 * random value for every record (Kafka's perf tool does the same).
 */
export async function runProducer(
  producer: Producer,
  settings: BenchSettings,
  work: ProduceWork,
  tally: BenchTally | undefined,
  writeValues: ValueWriter | null,
): Promise<void> {
  const sharedValue = writeValues === null ? randomBytes(settings.recordSizeBytes) : undefined;
  const chunkRecords = recordsPerSend(settings);
  const freeSlots: ChunkSlot[] = [];
  let outstanding = 0;
  let wake: (() => void) | undefined;
  let failure: { error: unknown } | undefined;
  for (;;) {
    const first = work.claim(chunkRecords);
    if (first < 0 || failure !== undefined) break;
    const count = Math.min(chunkRecords, work.total - first);
    await work.throttle.admit(first);
    const slot =
      freeSlots.pop() ?? new ChunkSlot(chunkRecords, settings.recordSizeBytes, sharedValue);
    const messages = count === chunkRecords ? slot.messages : slot.messages.slice(0, count);
    if (writeValues !== null) {
      writeValues(first, count === chunkRecords ? slot.values : slot.values.slice(0, count));
    }
    let bytes = count * settings.recordSizeBytes;
    if (settings.keys) {
      for (let index = 0; index < count; index++) {
        const key = String(first + index);
        messages[index]!.key = key;
        bytes += key.length;
      }
    }
    const sentAtMs = performance.now();
    outstanding += 1;
    producer.send({ topic: settings.topic, messages }).then(
      () => {
        tally?.add(count, bytes, performance.now() - sentAtMs);
        freeSlots.push(slot);
        outstanding -= 1;
        wake?.();
      },
      (error: unknown) => {
        failure ??= { error };
        freeSlots.push(slot);
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
  writeValues: ValueWriter | null,
): Promise<void> {
  const producers = Array.from({ length: settings.producers }, () => makeProducer(spool, settings));
  try {
    await Promise.all(producers.map((producer) => producer.connect()));
    await Promise.all(
      producers.map((producer) => runProducer(producer, settings, work, tally, writeValues)),
    );
  } finally {
    await Promise.all(producers.map((producer) => producer.disconnect().catch(() => {})));
  }
}
