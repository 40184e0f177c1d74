// The segment-store benchmark: `npx nx run segment-store:bench [-- --json] [-- --quick]`.
//
// Three measurements against the built package (dist/), each with wall time and CPU time:
//   1. log.append against plain fs.writeSync of the same batches (write-throughput.ts);
//   2. the latency of a read by offset in a small and a large log, from the same hot set of
//      bytes in both (the target) and from the whole of each (read-latency.ts);
//   3. the fetch path over loopback TCP, sendfile against copy (transfer-throughput.ts).
// Prints a table, and with --json a last line of JSON (bench-report.ts). Everything lives in one
// temporary folder that is removed at the end, also after a failure or Ctrl-C.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createBatchPool } from './batch-pool';
import { SegmentStoreBenchError } from './bench-error';
import { benchUsage, parseBenchOptions, type BenchOptions } from './bench-options';
import { formatTable, megabytes, summarize } from './bench-report';
import { buildLog, type BuiltLog } from './log-builder';
import { measureReadLatency } from './read-latency';
import { measureTransferThroughput } from './transfer-throughput';
import { measureWriteThroughput, writeRounds } from './write-throughput';

/** Free space to keep beyond what the benchmark writes, so it never fills the disk. */
const diskHeadroomBytes = 2 * 1024 * 1024 * 1024;

async function main(): Promise<void> {
  const options = parseBenchOptions(process.argv.slice(2));
  if (options.help) {
    console.log(benchUsage);
    return;
  }
  const directory = makeWorkDirectory(options);
  const removeWorkDirectory = (): void => fs.rmSync(directory, { recursive: true, force: true });
  const onSignal = (signal: NodeJS.Signals): void => {
    removeWorkDirectory();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const logs: BuiltLog[] = [];
  try {
    ensureDiskSpace(directory, options);
    const startedAt = process.hrtime.bigint();
    // Progress goes to stderr: stdout holds the table and, with --json, the JSON line last.
    const progress = (message: string): void => console.error(message);
    const pool = createBatchPool();

    progress(
      `writing ${megabytes(options.writeSizeBytes)} raw and through the log, ` +
        `${writeRounds} times each`,
    );
    const write = await measureWriteThroughput(directory, pool, options.writeSizeBytes);

    progress(
      `building a ${megabytes(options.smallLogSizeBytes)} and a ${megabytes(options.largeLogSizeBytes)} log`,
    );
    const small = await buildLog(directory, 'small-log', pool, options.smallLogSizeBytes);
    logs.push(small);
    const large = await buildLog(directory, 'large-log', pool, options.largeLogSizeBytes);
    logs.push(large);

    progress(
      `reading ${options.readCount} random offsets of each log three times: whole log in one ` +
        `pass, then in rounds from the hot set and from the whole log`,
    );
    const read = measureReadLatency(small.log, large.log, options.readCount);

    progress(`sending ${megabytes(options.transferSizeBytes)} per path over loopback TCP`);
    const transfer = await measureTransferThroughput(large.log, options.transferSizeBytes);

    const inputs = {
      options,
      pool,
      write,
      read,
      smallLogSizeBytes: small.sizeBytes,
      largeLogSizeBytes: large.sizeBytes,
      transfer,
      totalWallSeconds: Number(process.hrtime.bigint() - startedAt) / 1e9,
    };
    const summary = summarize(inputs);
    console.log(formatTable(inputs, summary));
    if (options.json) console.log(JSON.stringify(summary));
  } finally {
    for (const built of logs) await built.log.delete();
    removeWorkDirectory();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** A fresh folder of our own, inside --dir or the system's temporary folder. */
function makeWorkDirectory(options: BenchOptions): string {
  const parent = options.parentDirectory ?? os.tmpdir();
  if (!fs.existsSync(parent)) {
    throw new SegmentStoreBenchError(`--dir ${parent} does not exist`);
  }
  return fs.mkdtempSync(path.join(parent, 'spool-segment-store-bench-'));
}

/** The logs exist together, and one write run's file is deleted before the next starts. */
function ensureDiskSpace(directory: string, options: BenchOptions): void {
  const neededBytes =
    options.largeLogSizeBytes + options.smallLogSizeBytes + options.writeSizeBytes;
  const stats = fs.statfsSync(directory);
  const availableBytes = stats.bavail * stats.bsize;
  if (availableBytes < neededBytes + diskHeadroomBytes) {
    throw new SegmentStoreBenchError(
      `${directory} has ${megabytes(availableBytes)} free; the benchmark needs ` +
        `${megabytes(neededBytes)} and keeps ${megabytes(diskHeadroomBytes)} spare`,
    );
  }
}

main().catch((error: unknown) => {
  if (error instanceof SegmentStoreBenchError) {
    console.error(`segment-store-bench: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exitCode = 1;
});
