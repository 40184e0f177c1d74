// The log cleaner's benchmark: `npx nx run segment-store:bench-compaction [-- --size-mb 256]`.
//
// Against the built package (dist/), on one compacted log of --size-mb of keyed 1 KiB records
// over --keys keys, in 16 MiB segments, 16 records a batch:
//   1. raw bandwidth: every closed segment read in 1 MiB asynchronous reads and written to a new
//      file the same way, then fdatasynced: the most a pass that reads and writes each byte once
//      could do on this disk, with the same files, equally hot in the page cache;
//   2. cleaning: one LogCleaner pass over the same log (offset map, rewrite, swap), as MB/s of
//      the log's size, beside the raw figure; with the CPU time it took (every thread of the
//      process) and how much of the pass the event loop was busy (the rest ran in the cleaner's
//      thread or waited for I/O): figures a loaded machine moves less than latencies;
//   3. produce latency: a producer appends a 1 KiB batch every millisecond to another compacted
//      log for --produce-seconds, once alone and once while the cleaner cleans a fresh copy of
//      the big log; each append's latency counts from when it was due, so time the event loop
//      spent on cleaning shows. p50, p99 and max of both runs, and the event loop's delay.
// Prints the figures; everything lives in one temporary folder removed at the end.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeRecordBatch } from '@spool/record-batch';
import { CleanerCheckpoint, Log, LogCleaner, type LogConfig } from './package-under-test';

const mebibyte = 1024 * 1024;
const segmentBytes = 16 * mebibyte;
const recordsPerBatch = 16;
const valueSizeBytes = 1024;
const chunkBytes = mebibyte;

interface Options {
  readonly sizeMb: number;
  readonly keys: number;
  readonly produceSeconds: number;
}

function parseOptions(argv: readonly string[]): Options {
  const options = { sizeMb: 256, keys: 10_000, produceSeconds: 5 };
  for (let index = 0; index < argv.length; index += 2) {
    const [flag, value] = [argv[index], Number(argv[index + 1])];
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} needs a positive number`);
    if (flag === '--size-mb') options.sizeMb = value;
    else if (flag === '--keys') options.keys = value;
    else if (flag === '--produce-seconds') options.produceSeconds = value;
    else throw new Error(`unknown option ${flag}: --size-mb, --keys, --produce-seconds`);
  }
  return options;
}

const config: Partial<LogConfig> = {
  cleanupPolicy: ['compact'],
  minCleanableDirtyRatio: 0,
  segmentBytes,
};

async function buildLog(directory: string, options: Options): Promise<Log> {
  const { log } = await Log.open(directory, { config });
  const value = Buffer.alloc(valueSizeBytes, 120);
  let sequence = 0;
  while (log.sizeBytes < options.sizeMb * mebibyte) {
    const records = Array.from({ length: recordsPerBatch }, () => ({
      key: Buffer.from(`key-${(sequence++ * 7919) % options.keys}`),
      value,
      timestampMs: BigInt(Date.now()),
    }));
    log.append(encodeRecordBatch({ baseOffset: 0n, records }), {
      leaderEpoch: 0,
      assignOffsets: true,
    });
  }
  log.roll();
  await log.flush();
  log.updateHighWatermark(log.logEndOffset);
  return log;
}

/** 1. Every closed segment copied with 1 MiB asynchronous reads and writes; MB/s of input. */
async function rawCopy(log: Log, directory: string): Promise<{ bytes: number; seconds: number }> {
  const names = fs
    .readdirSync(log.directory)
    .filter((name) => name.endsWith('.log'))
    .sort();
  const closed = names.slice(0, -1);
  const buffer = Buffer.allocUnsafe(chunkBytes);
  let bytes = 0;
  const startedAt = performance.now();
  for (const name of closed) {
    const source = await fs.promises.open(path.join(log.directory, name), 'r');
    const target = await fs.promises.open(path.join(directory, `${name}.copy`), 'w');
    for (let position = 0; ;) {
      const { bytesRead } = await source.read(buffer, 0, chunkBytes, position);
      if (bytesRead === 0) break;
      await target.write(buffer, 0, bytesRead, position);
      position += bytesRead;
      bytes += bytesRead;
    }
    await target.datasync();
    await Promise.all([source.close(), target.close()]);
  }
  const seconds = (performance.now() - startedAt) / 1000;
  for (const name of closed) fs.rmSync(path.join(directory, `${name}.copy`));
  return { bytes, seconds };
}

/** 3. Appends due every millisecond; latency from when each was due, in ms. */
async function produceLatencies(log: Log, seconds: number): Promise<number[]> {
  const batch = encodeRecordBatch({
    baseOffset: 0n,
    records: [{ key: Buffer.from('k'), value: Buffer.alloc(1000, 1), timestampMs: 1n }],
  });
  const latencies: number[] = [];
  const startedAt = performance.now();
  for (let index = 0; ; index++) {
    const dueAt = startedAt + index;
    if (dueAt - startedAt > seconds * 1000) break;
    const waitMs = dueAt - performance.now();
    // Timers have millisecond granularity: sleep most of the wait, then yield until it is due.
    if (waitMs >= 1) await sleep(Math.floor(waitMs));
    do await new Promise<void>((resolve) => setImmediate(resolve));
    while (performance.now() < dueAt);
    log.append(Buffer.from(batch), { leaderEpoch: 0, assignOffsets: true });
    latencies.push(performance.now() - dueAt);
  }
  return latencies;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

function describeLatencies(label: string, latencies: number[], loopDelayP99Ms: number): string {
  const sorted = [...latencies].sort((left, right) => left - right);
  return (
    `${label.padEnd(28)} p50 ${percentile(sorted, 0.5).toFixed(2)} ms  p99 ` +
    `${percentile(sorted, 0.99).toFixed(2)} ms  max ${sorted.at(-1)!.toFixed(2)} ms  ` +
    `(event loop delay p99 ${loopDelayP99Ms.toFixed(2)} ms, ${sorted.length} appends)`
  );
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-compaction-bench-'));
  try {
    console.error(`building a ${options.sizeMb} MiB compacted log over ${options.keys} keys`);
    const log = await buildLog(path.join(root, 'big-0'), options);
    const logSizeBytes = log.sizeBytes;

    console.error('raw read and write of the same segment files');
    const raw = await rawCopy(log, root);

    console.error('one cleaner pass');
    const cleaner = new LogCleaner({
      dedupeBufferSizeBytes: 128 * mebibyte,
      ioMaxBytesPerSecond: Number.POSITIVE_INFINITY,
      chunkBytes,
    });
    const checkpoint = CleanerCheckpoint.load(root);
    // A node starts its cleaner's thread with itself; the pass is timed without the start.
    await cleaner.start();
    const cpuBefore = process.cpuUsage();
    const loopBefore = performance.eventLoopUtilization();
    const result = (await cleaner.cleanFilthiest([{ log, checkpoint }]))!;
    const loop = performance.eventLoopUtilization(loopBefore);
    const cpu = process.cpuUsage(cpuBefore);
    await cleaner.close();
    await log.close();

    console.error(`producing for ${options.produceSeconds} s alone, then beside a cleaner pass`);
    const { log: produced } = await Log.open(path.join(root, 'produced-0'), { config });
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const alone = await produceLatencies(produced, options.produceSeconds);
    const aloneDelayP99Ms = delay.percentile(99) / 1e6;
    delay.reset();
    const again = await buildLog(path.join(root, 'again-0'), options);
    const busyCleaner = new LogCleaner({
      dedupeBufferSizeBytes: 128 * mebibyte,
      ioMaxBytesPerSecond: Number.POSITIVE_INFINITY,
      chunkBytes,
    });
    await busyCleaner.start();
    delay.reset();
    let cleaningEndedAtMs: number | undefined;
    const producingStartedAtMs = performance.now();
    const cleaning = busyCleaner
      .cleanFilthiest([{ log: again, checkpoint }])
      .then(() => (cleaningEndedAtMs = performance.now()));
    const beside = await produceLatencies(produced, options.produceSeconds);
    const besideDelayP99Ms = delay.percentile(99) / 1e6;
    delay.disable();
    await cleaning;
    await busyCleaner.close();
    await Promise.all([again.close(), produced.close()]);

    const mbPerSecond = (bytes: number, seconds: number) => (bytes / mebibyte / seconds).toFixed(1);
    const cleanSeconds = result.durationMs / 1000;
    console.log(
      `log: ${(logSizeBytes / mebibyte).toFixed(0)} MiB, ${options.keys} keys, ${result.segmentsBefore} closed segments`,
    );
    console.log(
      `raw read+write of the closed segments: ${mbPerSecond(raw.bytes, raw.seconds)} MB/s ` +
        `(${(raw.bytes / mebibyte).toFixed(0)} MiB in ${raw.seconds.toFixed(2)} s)`,
    );
    console.log(
      `cleaning: ${mbPerSecond(raw.bytes, cleanSeconds)} MB/s of log ` +
        `(${(raw.bytes / mebibyte).toFixed(0)} MiB in ${cleanSeconds.toFixed(2)} s; read ` +
        `${(result.bytesRead / mebibyte).toFixed(0)} MiB, wrote ${(result.bytesWritten / mebibyte).toFixed(1)} MiB, ` +
        `${result.recordsRemoved} records removed, ${result.segmentsAfter} segments after)`,
    );
    console.log(
      `cleaning CPU: ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s; event loop busy ` +
        `${loop.active.toFixed(0)} ms of the pass's ${result.durationMs.toFixed(0)} ms`,
    );
    console.log(describeLatencies('produce, cleaner idle', alone, aloneDelayP99Ms));
    const overlapSeconds =
      cleaningEndedAtMs === undefined
        ? options.produceSeconds
        : Math.min(options.produceSeconds, (cleaningEndedAtMs - producingStartedAtMs) / 1000);
    console.log(
      describeLatencies('produce, cleaner running', beside, besideDelayP99Ms) +
        ` [cleaning overlapped ${overlapSeconds.toFixed(1)} s of it]`,
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
