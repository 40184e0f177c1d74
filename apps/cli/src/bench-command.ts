import type { Admin, Consumer, Spool } from '@spool/client';
import {
  benchHelp as modeBenchHelp,
  benchSubcommandHelps as modeSubcommandHelps,
  parseBenchArgs,
  type BenchSettings,
} from './bench-options';
import { runBenchPartitions } from './bench-partitions';
import { benchPartitionsHelp } from './bench-partitions-options';
import { benchEndToEnd } from './bench-e2e';
import { produceAll, produceWork, Throttle } from './bench-produce';
import { BenchTally, formatBenchResult, startProgress, type BenchResult } from './bench-report';
import { connectReachableSpool } from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';

/**
 * `spool bench produce|consume|e2e|seek|partitions`: Kafka's perf tools for Spool. Benchmarks print
 * figures; nothing here passes or fails on them.
 *
 * - produce: records/s, MB/s and the latency from `send` to acknowledgement;
 * - consume: records/s, MB/s from the first offset asked for, and the wait for each batch;
 * - e2e: records produced at --throughput R and consumed in this process (bench-e2e.ts); the latency is from
 *   the time each record was due at that rate to the consumer's hands (the time travels in the
 *   value), so a producer that cannot hold the rate shows it as latency;
 * - seek: read-by-offset latency: --reads random offsets, each the time from seek to its record;
 * - partitions: what partition count costs, on a spool dev cluster of its own (bench-partitions.ts).
 */
export const benchHelp: CommandHelp = {
  ...modeBenchHelp,
  usage: `${modeBenchHelp.usage}, or spool bench partitions [flags]`,
  examples: [...modeBenchHelp.examples, benchPartitionsHelp.examples[0]!],
};

export const benchSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  ...modeSubcommandHelps,
  partitions: benchPartitionsHelp,
};

/** How long the seek consumer may wait for a record before the run fails. */
const recordWaitMsMax = 30_000;

export async function runBenchCommand(context: CommandContext): Promise<number> {
  // partitions starts a cluster of its own; the other modes measure the one at --gateway.
  if (context.argv[0] === 'partitions') {
    return runBenchPartitions({ ...context, argv: context.argv.slice(1) });
  }
  const { settings, parsed } = parseBenchArgs(context.argv, context.env ?? process.env);
  const spool = await connectReachableSpool(parsed.global);
  if (settings.partitions !== undefined) await ensureTopic(spool, settings);
  const tally = new BenchTally();
  const stopProgress = startProgress(tally, context.stderr);
  let result: BenchResult;
  try {
    switch (settings.mode) {
      case 'produce':
        result = await benchProduce(spool, settings, tally);
        break;
      case 'consume':
        result = await benchConsume(spool, settings, tally);
        break;
      case 'e2e':
        result = await benchEndToEnd(
          spool,
          { gateway: parsed.global.gateway, ssl: parsed.global.ssl, sasl: parsed.global.sasl },
          settings,
          tally,
          producerSettings(settings),
        );
        break;
      case 'seek':
        result = await benchSeek(spool, settings, tally);
        break;
    }
  } finally {
    stopProgress();
  }
  context.stdout.write(formatBenchResult(result, parsed.global.json));
  return 0;
}

function producerSettings(settings: BenchSettings): BenchResult['settings'] {
  return {
    topic: settings.topic,
    recordSizeBytes: settings.recordSizeBytes,
    throughput: settings.throughputRecordsPerSec ?? -1,
    acks: String(settings.acks),
    batchSizeBytes: settings.batchSizeBytes ?? 16_384,
    lingerMs: settings.lingerMs ?? 5,
    compression: settings.compression,
    producers: settings.producers,
    maxInFlight: settings.maxInFlight,
    keys: settings.keys,
  };
}

/** --partitions: the topic is created if missing; an existing one is used as it is. */
async function ensureTopic(spool: Spool, settings: BenchSettings): Promise<void> {
  const admin = spool.admin();
  try {
    const existing = await admin.listTopics();
    if (existing.includes(settings.topic)) return;
    await admin.createTopics({
      topics: [
        {
          topic: settings.topic,
          numPartitions: settings.partitions!,
          replicationFactor: settings.replicationFactor,
        },
      ],
    });
  } finally {
    await admin.disconnect();
  }
}

async function benchProduce(
  spool: Spool,
  settings: BenchSettings,
  tally: BenchTally,
): Promise<BenchResult> {
  const work = produceWork(settings.records, new Throttle(settings.throughputRecordsPerSec));
  await produceAll(spool, settings, work, tally, null);
  return tally.result('produce', 'from send to acknowledgement', producerSettings(settings));
}

async function benchConsume(
  spool: Spool,
  settings: BenchSettings,
  tally: BenchTally,
): Promise<BenchResult> {
  const consumer = spool.consumer({
    ...(settings.group === undefined ? {} : { groupId: settings.group }),
    autoOffsetReset: settings.fromBeginning ? 'earliest' : 'latest',
  });
  let endedAtMs = 0;
  try {
    await consumer.subscribe({ topics: [settings.topic], fromBeginning: settings.fromBeginning });
    let lastBatchAtMs = performance.now();
    await untilConsumed(consumer, settings.records, (messages) => {
      const nowMs = performance.now();
      let bytes = 0;
      for (const message of messages) {
        bytes += (message.value?.length ?? 0) + (message.key?.length ?? 0);
      }
      tally.add(messages.length, bytes);
      tally.latency.recordMs(nowMs - lastBatchAtMs);
      lastBatchAtMs = nowMs;
    });
    endedAtMs = performance.now();
  } finally {
    await consumer.disconnect().catch(() => {});
  }
  return tally.result(
    'consume',
    'wait for each delivered batch',
    {
      topic: settings.topic,
      fromBeginning: settings.fromBeginning,
      group: settings.group ?? '',
    },
    endedAtMs,
  );
}

/**
 * Runs the consumer until `records` messages were handed to `onMessages` (the last batch is cut
 * at the limit), then stops it; a consumer crash rejects.
 */
async function untilConsumed(
  consumer: Consumer,
  records: number,
  onMessages: (messages: readonly { value: Buffer | null; key: Buffer | null }[]) => void,
): Promise<void> {
  let consumed = 0;
  await new Promise<void>((resolve, reject) => {
    consumer.on('crash', reject);
    consumer
      .run({
        eachBatch: async ({ batch }) => {
          if (consumed >= records) return;
          const messages =
            batch.messages.length <= records - consumed
              ? batch.messages
              : batch.messages.slice(0, records - consumed);
          consumed += messages.length;
          onMessages(messages);
          if (consumed >= records) resolve();
        },
      })
      .catch(reject);
  });
}

async function endOffsets(
  admin: Admin,
  topic: string,
): Promise<{ partition: number; low: bigint; high: bigint }[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.map(({ partition, low, high }) => ({ partition, low, high }));
}

/** Read-by-offset: each read seeks one partition to a random offset and waits for its record. */
async function benchSeek(
  spool: Spool,
  settings: BenchSettings,
  tally: BenchTally,
): Promise<BenchResult> {
  const admin = spool.admin();
  // A small window: a read wants one batch, not megabytes fetched ahead of it.
  const windowBytes = 64 * 1024;
  const consumer = spool.consumer({ maxBytes: windowBytes, maxBytesPerPartition: windowBytes });
  let logRecords = 0n;
  try {
    const offsets = (await endOffsets(admin, settings.topic)).filter(({ low, high }) => high > low);
    if (offsets.length === 0) throw new Error(`topic ${settings.topic} has no records to read`);
    for (const { low, high } of offsets) logRecords += high - low;
    const first = offsets[0]!;
    consumer.assign([{ topic: settings.topic, partition: first.partition, offset: first.low }]);
    let waiting: { target: bigint; partition: number; resolve: () => void } | undefined;
    consumer.on('crash', (error) => {
      throw error;
    });
    await consumer.run({
      eachBatch: async ({ batch, isStale }) => {
        if (waiting === undefined || isStale() || batch.partition !== waiting.partition) return;
        const hit = batch.messages.find((message) => message.offset === waiting!.target);
        if (hit !== undefined) waiting.resolve();
      },
    });
    for (let read = 0; read < settings.reads; read++) {
      const { partition, low, high } = offsets[Math.floor(Math.random() * offsets.length)]!;
      const target = low + BigInt(Math.floor(Math.random() * Number(high - low)));
      const startedAtMs = performance.now();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`offset ${target} of ${settings.topic}-${partition} never came`)),
          recordWaitMsMax,
        );
        waiting = {
          target,
          partition,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        if (consumer.assignment().some((entry) => entry.partition === partition)) {
          consumer.seek({ topic: settings.topic, partition, offset: target });
        } else {
          consumer.assign([{ topic: settings.topic, partition, offset: target }]);
        }
      });
      waiting = undefined;
      tally.add(1, settings.recordSizeBytes, performance.now() - startedAtMs);
    }
  } finally {
    await consumer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
  }
  return tally.result('seek', 'from seek to the record at that offset', {
    topic: settings.topic,
    reads: settings.reads,
    logRecords: Number(logRecords),
  });
}
