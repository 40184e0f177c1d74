// Measurement 1: appends through the log against plain sequential writes of the same bytes.
//
// Both sides write the same pre-encoded 16 KiB batches, one write call per batch, into the page
// cache, and neither fsyncs inside the timed region. After each run the file is fdatasynced (the
// log by log.flush) and that is timed apart, as "sync": the synced rate, write and fdatasync
// together, is what a disk-bound producer would see, and it says as much about the disk (and a
// virtual machine's host cache) as about the code. Then the file is deleted, so the dirty pages
// of one run are on disk before the next starts and background writeback does not steal the next
// run's CPU. Runs alternate raw, log, log, raw, ... for writeRounds rounds. Each round gives a ratio
// of the log's rate to the raw rate, of two runs a second apart, and the median of those ratios
// is the figure the target checks: a slow moment of the machine moves one round, not the median.
// The fastest run of each kind is reported too, as before, with the ratio of the two.
//
// Every leader append validates each batch (framing, CRC-32C, fields) before writing it, which a
// raw write does not; the same validation is timed alone, so the table can show how much of the
// gap between the two is that check, owned by @spool/protocol, rather than the log.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { splitRecordBatchPositions } from '@spool/protocol';
import { defaultLogConfig, Log } from './package-under-test';
import { resetForProduce, type BatchPool } from './batch-pool';
import { fastestOf, measureAsync, measureSync, median, type Measurement } from './measurement';

/** Rounds of (raw, log): odd, so the median ratio is one round's ratio. */
export const writeRounds = 5;

export interface WriteRun {
  /** The writes alone: no fsync. */
  readonly write: Measurement;
  /** The fdatasync after them. */
  readonly sync: Measurement;
}

export interface WriteThroughputResult {
  readonly sizeBytes: number;
  readonly recordCount: number;
  /** The raw run with the fastest writes. */
  readonly rawWrite: WriteRun;
  /** The log run with the fastest appends. */
  readonly append: WriteRun;
  /** The fastest write + fdatasync of each kind. */
  readonly rawWriteSynced: Measurement;
  readonly appendSynced: Measurement;
  /** splitRecordBatchPositions over the same batches, as log.append runs it: CRC and header checks. */
  readonly validation: Measurement;
  /** Each round's raw write wall time over its append wall time: append rate / raw rate. */
  readonly appendToRawWriteRatios: readonly number[];
  readonly appendToRawWriteRatioMedian: number;
}

export async function measureWriteThroughput(
  directory: string,
  pool: BatchPool,
  sizeBytesWanted: number,
): Promise<WriteThroughputResult> {
  const batchCount = Math.max(1, Math.floor(sizeBytesWanted / pool.batchSizeBytes));
  const raw: WriteRun[] = [];
  const log: WriteRun[] = [];
  const validations: Measurement[] = [];
  for (let round = 0; round < writeRounds; round++) {
    // Which kind goes first alternates, so that whatever the first run of a round pays (the
    // previous round's deletes, say) falls on both kinds alike.
    const rawRun = (): void => {
      raw.push(rawWriteRun(path.join(directory, `raw-${round}.bin`), pool, batchCount));
    };
    if (round % 2 === 0) rawRun();
    log.push(await appendRun(path.join(directory, `append-${round}`), pool, batchCount));
    if (round % 2 === 1) rawRun();
    validations.push(validationRun(pool, batchCount));
  }
  const appendToRawWriteRatios = raw.map(
    (rawRun, round) => rawRun.write.wallSeconds / log[round]!.write.wallSeconds,
  );
  return {
    sizeBytes: batchCount * pool.batchSizeBytes,
    recordCount: batchCount * pool.recordsPerBatch,
    rawWrite: fastestWrite(raw),
    append: fastestWrite(log),
    rawWriteSynced: fastestOf(raw.map(synced)),
    appendSynced: fastestOf(log.map(synced)),
    validation: fastestOf(validations),
    appendToRawWriteRatios,
    appendToRawWriteRatioMedian: median(appendToRawWriteRatios),
  };
}

function fastestWrite(runs: readonly WriteRun[]): WriteRun {
  const write = fastestOf(runs.map((run) => run.write));
  return runs.find((run) => run.write === write)!;
}

function synced(run: WriteRun): Measurement {
  return {
    wallSeconds: run.write.wallSeconds + run.sync.wallSeconds,
    cpuSeconds: run.write.cpuSeconds + run.sync.cpuSeconds,
  };
}

/** fs.writeSync of each batch at the next position of a plain file: the floor for an append. */
function rawWriteRun(filePath: string, pool: BatchPool, batchCount: number): WriteRun {
  const fd = fs.openSync(filePath, 'w');
  try {
    const write = measureSync(() => {
      let position = 0;
      for (let index = 0; index < batchCount; index++) {
        const batch = pool.batches[index % pool.batches.length]!;
        let written = 0;
        while (written < batch.length) {
          written += fs.writeSync(fd, batch, written, batch.length - written, position + written);
        }
        position += batch.length;
      }
    });
    const sync = measureSync(() => fs.fdatasyncSync(fd));
    return { write, sync };
  } finally {
    fs.closeSync(fd);
    fs.rmSync(filePath, { force: true });
  }
}

/** The same batches through a fresh log with the default config, one append per batch. */
async function appendRun(
  directory: string,
  pool: BatchPool,
  batchCount: number,
): Promise<WriteRun> {
  const { log } = await Log.open(directory);
  try {
    const write = measureSync(() => {
      for (let index = 0; index < batchCount; index++) {
        const batch = resetForProduce(pool.batches[index % pool.batches.length]!);
        log.append(batch, { leaderEpoch: 0, assignOffsets: true });
      }
    });
    const sync = await measureAsync(() => log.flush());
    return { write, sync };
  } finally {
    await log.close();
    fs.rmSync(directory, { recursive: true, force: true });
  }
}

/** The validation log.append does before it writes, alone: no offsets assigned, no writes. */
function validationRun(pool: BatchPool, batchCount: number): Measurement {
  return measureSync(() => {
    for (let index = 0; index < batchCount; index++) {
      const batch = resetForProduce(pool.batches[index % pool.batches.length]!);
      splitRecordBatchPositions(batch, {
        maxBatchSizeBytes: defaultLogConfig.maxMessageBytes,
        origin: 'client',
      });
    }
  });
}
