// Proves a partition log keeps every acknowledged batch and shows no partial batch across real
// process crashes: a child (support/log-crash-writer.mjs) appends and flushes batch after batch,
// acknowledging each flushed one on stdout, and is SIGKILLed at a seeded random moment, 25 times
// on one growing multi-segment log. After each kill this process reopens the log, reads it all
// back, checks every batch's CRC and framing, contiguous offsets, that each run's records are a
// gap-free prefix of what it wrote, the leader-epoch cache, that nothing torn is left on disk, and
// that every batch any run acknowledged is at its offset with the same bytes (sha256). It then
// closes the log cleanly or abandons it, so the writer's next open takes either path.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomInt } from 'node:crypto';
import { mkdtempSync, readdirSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { decodeRecordBatch, validateRecordBatch } from '@spool/record-batch';
import {
  Log,
  batchSizeBytesLimit,
  type LogConfig,
  type LogReadResult,
  type RecoveryReport,
} from '@spool/segment-store';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from './support/seeded-random';

/** iterationCount: writer runs, each killed once; bounded so the file stays well under 60 s. */
const iterationCount = 25;
/** killDelayMsMin and killDelayMsMax: how long a writer runs before its SIGKILL. */
const killDelayMsMin = 50;
const killDelayMsMax = 400;
/** One run in this many is killed counting from its spawn, so some kills land in start-up. */
const killFromSpawnEvery = 5;
/** writerOpenWaitMsMax: how long a writer may take to start and open (recover) the log. */
const writerOpenWaitMsMax = 15_000;
/** readBytesMax: how much one read of the log returns; many batches, few reads. */
const readBytesMax = 4 * 1024 * 1024;
/** writerBatchSizeBytesMax: the writer's largest batch, the most a torn tail can be. */
const writerBatchSizeBytesMax = 64 * 1024;

const writerPath = path.join(__dirname, 'support', 'log-crash-writer.mjs');
const segmentBytes = 256 * 1024;
/** Rotated by iteration: Kafka's index interval, an entry per batch, a tiny index that fills. */
const configVariants: ReadonlyArray<Partial<LogConfig>> = [
  { segmentBytes, flushMessages: 1 },
  { segmentBytes, flushMessages: 1, indexIntervalBytes: 0 },
  { segmentBytes, flushMessages: 1, indexIntervalBytes: 512, segmentIndexBytes: 4096 },
];

const seed = parseSeed(process.env['SPOOL_CRASH_SEED']);
const directory = mkdtempSync(path.join(tmpdir(), 'spool-crash-'));
let passed = false;
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

afterEach(async () => {
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(
    [...running].map((child) => new Promise((resolve) => child.once('close', resolve))),
  );
});
afterAll(() => {
  // A failed run keeps its log for a look at the files. The seed replays the same choices
  // (batches, kill delays, configs, closes); where exactly a kill lands still depends on timing.
  if (passed) rmSync(directory, { recursive: true, force: true });
  else console.log(`segment-store crash test: the log is kept in ${directory}`);
});

function parseSeed(text: string | undefined): number {
  if (text === undefined) return randomInt(2 ** 32);
  if (!/^\d+$/.test(text) || Number(text) >= 2 ** 32) {
    throw new Error(`SPOOL_CRASH_SEED must be an integer from 0 to 4294967295, got "${text}"`);
  }
  return Number(text);
}

interface Acknowledgement {
  readonly runId: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly sizeBytes: number;
  readonly sha256: string;
}

interface WriterRun {
  readonly child: ChildProcess;
  readonly stdout: string[];
  readonly stderr: string[];
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnWriter(runId: number, writerSeed: number, config: Partial<LogConfig>): WriterRun {
  const child = spawn(
    process.execPath,
    [writerPath, directory, String(writerSeed), String(runId), JSON.stringify(config)],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  running.add(child);
  const stdout: string[] = [];
  const stderr: string[] = [];
  readline.createInterface({ input: child.stdout! }).on('line', (line) => stdout.push(line));
  readline.createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout, stderr, closed };
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function describeExit(run: WriterRun): string {
  return `writer exited by itself (code ${run.child.exitCode}, signal ${run.child.signalCode}):\n${run.stderr.join('\n')}`;
}

const sleep = (durationMs: number) => new Promise((resolve) => setTimeout(resolve, durationMs));

/** Waits until the writer reports the log open; the kill delay counts from then. */
async function waitForOpen(run: WriterRun): Promise<void> {
  const deadline = Date.now() + writerOpenWaitMsMax;
  while (!run.stdout.some((line) => line.startsWith('{"event":"opened"'))) {
    if (!isRunning(run.child)) throw new Error(describeExit(run));
    if (Date.now() > deadline) throw new Error(`writer did not open the log within the bound`);
    await sleep(5);
  }
}

/** The writer's lines after its death: its open report (if it got that far) and its acks. */
function parseWriterOutput(
  run: WriterRun,
  runId: number,
): { opened: { clean: boolean } | undefined; acknowledgements: Acknowledgement[] } {
  let opened: { clean: boolean } | undefined;
  const acknowledgements: Acknowledgement[] = [];
  for (const line of run.stdout) {
    if (!line.startsWith('{')) continue; // The library's start-up notice on the transfer path.
    const fields = JSON.parse(line) as Record<string, string | number | boolean>;
    if (fields['event'] === 'opened') opened = { clean: fields['clean'] === true };
    if (fields['event'] === 'flushed') {
      acknowledgements.push({
        runId,
        baseOffset: BigInt(fields['baseOffset'] as string),
        lastOffset: BigInt(fields['lastOffset'] as string),
        sizeBytes: fields['sizeBytes'] as number,
        sha256: fields['sha256'] as string,
      });
    }
  }
  return { opened, acknowledgements };
}

interface StoredBatch {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly sizeBytes: number;
  readonly sha256: string;
  readonly runId: number;
}

/** Throws with `message` when `condition` fails; cheaper than expect() per record. */
function check(condition: boolean, message: () => string): void {
  if (!condition) throw new Error(message());
}

/** The bytes a read's slices point at, read through their descriptors as sendfile would. */
function bytesOf(result: LogReadResult): Buffer {
  return Buffer.concat(
    result.slices.map((slice) => {
      const bytes = Buffer.alloc(slice.sizeBytes);
      const readBytes = readSync(slice.file.fd, bytes, 0, slice.sizeBytes, slice.position);
      check(readBytes === slice.sizeBytes, () => `short read of ${slice.file.path}`);
      return bytes;
    }),
  );
}

/**
 * Reads the whole log from its start and checks each batch as it goes:
 *   1. it is a whole batch whose CRC and fields pass the checks for bytes from a log;
 *   2. it starts right after the previous one (no gap, no overlap), and its records have the
 *      offsets its header implies;
 *   3. its leader epoch is that of the run that wrote it, its records carry that run's next
 *      sequence numbers, and runs follow each other in order (each run's batches a prefix).
 */
function readWholeLog(log: Log): StoredBatch[] {
  const batches: StoredBatch[] = [];
  const nextSequenceByRun = new Map<number, number>();
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const result = log.read(offset, readBytesMax);
    let bytes: Buffer;
    try {
      bytes = bytesOf(result);
    } finally {
      result.release();
    }
    check(bytes.length > 0, () => `a read at offset ${offset} returned nothing`);
    let position = 0;
    while (position < bytes.length) {
      // 1.
      const header = validateRecordBatch(bytes, position, {
        maxBatchSizeBytes: batchSizeBytesLimit,
        origin: 'log',
      });
      const { records } = decodeRecordBatch(bytes, position);
      const where = () => `the batch at offset ${header.baseOffset} (read at ${offset})`;
      // 2.
      check(header.baseOffset === offset, () => `${where()}: expected offset ${offset}`);
      check(header.recordCount === Number(header.lastOffset - header.baseOffset) + 1, where);
      records.forEach((record, index) =>
        check(record.offset === header.baseOffset + BigInt(index), where),
      );
      // 3.
      const runId = header.partitionLeaderEpoch - 1;
      const previousRunId = batches.at(-1)?.runId ?? 0;
      check(runId >= previousRunId, () => `${where()}: run ${runId} after ${previousRunId}`);
      let sequence = nextSequenceByRun.get(runId) ?? 0;
      for (const record of records) {
        const [recordRun, recordSequence] = record.value!.subarray(0, 24).toString().split(':');
        const expected = `${runId}:${sequence++}`;
        check(
          `${recordRun}:${recordSequence}` === expected,
          () => `record ${record.offset} is ${recordRun}:${recordSequence}, expected ${expected}`,
        );
      }
      nextSequenceByRun.set(runId, sequence);
      batches.push({
        baseOffset: header.baseOffset,
        lastOffset: header.lastOffset,
        sizeBytes: header.sizeBytes,
        sha256: createHash('sha256')
          .update(bytes.subarray(position, position + header.sizeBytes))
          .digest('hex'),
        runId,
      });
      position += header.sizeBytes;
      offset = header.lastOffset + 1n;
    }
  }
  expect(offset).toBe(log.logEndOffset);
  return batches;
}

/** Bytes in the folder's .log files: equal to the log's size when nothing torn is left. */
function segmentFileBytes(): number {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.log'))
    .reduce((total, name) => total + statSync(path.join(directory, name)).size, 0);
}

/** Checks what the open reported, against what the killed writer acknowledged. */
function checkReport(report: RecoveryReport, acknowledged: readonly Acknowledgement[]): void {
  const highestAcknowledged = acknowledged.at(-1)?.lastOffset ?? -1n;
  expect(report.logStartOffset).toBe(0n);
  expect(report.logEndOffset).toBeGreaterThanOrEqual(highestAcknowledged + 1n);
  // A process crash loses no completed write, so at most the one write in flight is torn: one
  // problem, less than a batch cut, and no later segment to delete.
  expect(report.problems.length, report.problems.join('\n')).toBeLessThanOrEqual(1);
  expect(report.bytesTruncated).toBeLessThan(writerBatchSizeBytesMax);
  expect(report.segmentsDeleted).toBe(0);
}

/** Checks the log read back against every acknowledgement so far and the epoch cache. */
function checkContents(log: Log, acknowledged: readonly Acknowledgement[]): StoredBatch[] {
  const batches = readWholeLog(log);
  expect(batches[0]?.baseOffset ?? log.logEndOffset).toBe(log.logStartOffset);
  const storedBytes = batches.reduce((total, batch) => total + batch.sizeBytes, 0);
  expect(storedBytes).toBe(log.sizeBytes);
  expect(segmentFileBytes(), 'bytes left on disk past the last whole batch').toBe(storedBytes);

  const byBaseOffset = new Map(batches.map((batch) => [batch.baseOffset, batch]));
  for (const acknowledgement of acknowledged) {
    const stored = byBaseOffset.get(acknowledgement.baseOffset);
    expect(
      stored && { ...stored },
      `batch ${acknowledgement.baseOffset}-${acknowledgement.lastOffset} acknowledged by run ` +
        `${acknowledgement.runId}`,
    ).toEqual({ ...acknowledgement });
  }

  // Each run's epoch starts at its first surviving batch; a run with none left has no entry.
  const expectedEpochs: Array<{ epoch: number; startOffset: bigint }> = [];
  for (const batch of batches) {
    if (expectedEpochs.at(-1)?.epoch !== batch.runId + 1)
      expectedEpochs.push({ epoch: batch.runId + 1, startOffset: batch.baseOffset });
  }
  expect(log.leaderEpochEntries()).toEqual(expectedEpochs);
  return batches;
}

interface IterationPlan {
  readonly writerSeed: number;
  readonly killDelayMs: number;
  readonly killFromSpawn: boolean;
  readonly config: Partial<LogConfig>;
  readonly closeCleanly: boolean;
}

function planIteration(random: () => number, runId: number): IterationPlan {
  return {
    writerSeed: Math.floor(random() * 2 ** 32),
    killDelayMs: killDelayMsMin + Math.floor(random() * (killDelayMsMax - killDelayMsMin + 1)),
    killFromSpawn: runId % killFromSpawnEvery === killFromSpawnEvery - 1,
    config: configVariants[runId % configVariants.length]!,
    closeCleanly: random() < 0.5,
  };
}

describe('Log across SIGKILLed writer processes', () => {
  it('keeps every acknowledged batch intact and shows no partial batch', async () => {
    console.log(`segment-store crash test: seed ${seed} (replay with SPOOL_CRASH_SEED=${seed})`);
    const generator = new SeededRandom(seed);
    const random = () => generator.next();
    const acknowledged: Acknowledgement[] = [];
    let previousCloseClean: boolean | undefined;
    let runsWithAcknowledgements = 0;
    let recoveries = 0;
    const writerOpens = { clean: 0, unclean: 0 };
    let segmentCount = 0;

    for (let runId = 0; runId < iterationCount; runId++) {
      const plan = planIteration(random, runId);
      const run = spawnWriter(runId, plan.writerSeed, plan.config);
      if (!plan.killFromSpawn) await waitForOpen(run);
      await sleep(plan.killDelayMs);
      expect(isRunning(run.child), describeExit(run)).toBe(true);
      run.child.kill('SIGKILL');
      expect((await run.closed).signal).toBe('SIGKILL');

      const { opened, acknowledgements } = parseWriterOutput(run, runId);
      if (opened !== undefined && previousCloseClean !== undefined) {
        // The writer's open takes the clean path exactly when this process closed cleanly.
        expect(opened.clean, `run ${runId}'s open`).toBe(previousCloseClean);
        writerOpens[opened.clean ? 'clean' : 'unclean']++;
      }
      acknowledged.push(...acknowledgements);
      if (acknowledgements.length > 0) runsWithAcknowledgements++;

      const startedAtMs = Date.now();
      const { log, report } = await Log.open(directory, { config: plan.config });
      let checked = false;
      try {
        if (!report.clean) recoveries++;
        checkReport(report, acknowledged);
        const batches = checkContents(log, acknowledged);
        segmentCount = log.segmentCount;
        console.log(
          `run ${runId}: killed ${plan.killDelayMs} ms after ${plan.killFromSpawn ? 'spawn' : 'open'}` +
            `, ${acknowledgements.length} acks, writer open ${opened ? (opened.clean ? 'clean' : 'recovered') : 'never finished'}` +
            `; reopened ${report.clean ? 'clean' : 'by recovery'}, ${report.bytesTruncated} bytes cut, ` +
            `${batches.length} batches to offset ${report.logEndOffset} in ${segmentCount} ` +
            `segments, checked in ${Date.now() - startedAtMs} ms`,
        );
        checked = true;
      } finally {
        // A log that failed a check is left as the crash left it, for a look at its files.
        if (checked && plan.closeCleanly) await log.close();
        else log.abandon();
      }
      previousCloseClean = plan.closeCleanly;
    }

    // Without acknowledgements or recoveries the loop above would have proved nothing.
    expect(runsWithAcknowledgements).toBeGreaterThanOrEqual(Math.ceil(iterationCount * 0.6));
    expect(recoveries).toBeGreaterThanOrEqual(Math.ceil(iterationCount * 0.6));
    expect(writerOpens.clean).toBeGreaterThan(0);
    expect(writerOpens.unclean).toBeGreaterThan(0);
    expect(segmentCount).toBeGreaterThan(3);
    passed = true;
  });
});
