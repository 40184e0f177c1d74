// The child process of segment-store-crash.spec.ts: appends batches to a partition log as fast
// as it can, flushing after every one, and acknowledges each flushed batch with one JSON line on
// stdout, until the parent SIGKILLs it. Plain JavaScript so that `node` runs it without a build
// step; `@spool/*` resolve to the built dist (`nx run-many -t build` first).
//
//   node log-crash-writer.mjs <log directory> <seed> <run id> <log config as JSON>
//
// Lines on stdout, each written whole in one synchronous pipe write (well under PIPE_BUF, so a
// kill never leaves half a line):
//
//   {"event":"opened","clean":…,"logEndOffset":"…",…}   once the log is open (its RecoveryReport)
//   {"event":"flushed","baseOffset":"…","lastOffset":"…","sizeBytes":…,"sha256":"…"}
//                                                        after each append's flush resolved
//
// Every record value is `<run id>:<sequence>:` followed by random padding, the sequence counting
// records of this run from 0, so the parent can tell that a run's surviving records are a prefix
// of what it wrote. Batches hold 1 to 64 records and range from about 100 bytes to 64 KiB, drawn
// log-uniformly so small and large batches are both common.
import { createHash } from 'node:crypto';
import segmentStore from '@spool/segment-store';
import recordBatch from '@spool/record-batch';

const { Log } = segmentStore;
const { encodeRecordBatch } = recordBatch;

/** writerRunMsMax: the writer stops by itself after this long, should the parent never kill it. */
const writerRunMsMax = 60_000;
/** batchSizeBytesMax: the largest batch written; a quarter of the test's 256 KiB segments. */
const batchSizeBytesMax = 64 * 1024;
/** batchSizeBytesMin: roughly the smallest batch (header plus one short record). */
const batchSizeBytesMin = 100;
/** recordsPerBatchMax: batches of many small records exercise the record count fields. */
const recordsPerBatchMax = 64;
/** Bytes of a record besides its value: length, attributes, deltas, key and header counts. */
const recordOverheadBytes = 12;
/** Bytes of a batch besides its records (the RecordBatch v2 header). */
const batchHeaderBytes = 61;

const [directory, seedText, runIdText, configText] = process.argv.slice(2);
if (directory === undefined || configText === undefined) {
  process.stderr.write('usage: log-crash-writer.mjs <directory> <seed> <run id> <config JSON>\n');
  process.exit(2);
}
const runId = Number(runIdText);
const random = mulberry32(Number(seedText) >>> 0);

/** A small seeded generator (mulberry32): the same seed draws the same batches. */
function mulberry32(seed) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

function randomBytes(sizeBytes) {
  const bytes = Buffer.allocUnsafe(sizeBytes);
  for (let index = 0; index < sizeBytes; index++) bytes[index] = Math.floor(random() * 256);
  return bytes;
}

function writeLine(fields) {
  process.stdout.write(
    `${JSON.stringify(fields, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))}\n`,
  );
}

let nextSequence = 0;

/** A producer's batch (base offset 0) of a random size and record count. */
function nextBatch() {
  const targetSizeBytes = Math.round(
    batchSizeBytesMin * Math.pow(batchSizeBytesMax / batchSizeBytesMin, random()),
  );
  const recordCount = 1 + Math.floor(random() * recordsPerBatchMax);
  const recordSizeBytes = Math.floor((targetSizeBytes - batchHeaderBytes) / recordCount);
  const timestampMs = BigInt(Date.now());
  const records = [];
  for (let index = 0; index < recordCount; index++) {
    const prefix = Buffer.from(`${runId}:${nextSequence++}:`);
    const paddingBytes = Math.max(0, recordSizeBytes - recordOverheadBytes - prefix.length);
    records.push({
      key: null,
      value: Buffer.concat([prefix, randomBytes(paddingBytes)]),
      timestampMs,
    });
  }
  return encodeRecordBatch({ baseOffset: 0n, records });
}

async function main() {
  // The parent going away closes our stdin: stop rather than write on for a minute unobserved.
  process.stdin.on('close', () => process.exit(3));
  process.stdin.resume();
  setTimeout(() => process.exit(0), writerRunMsMax).unref();

  const { log, report } = await Log.open(directory, { config: JSON.parse(configText) });
  writeLine({ event: 'opened', ...report, problems: report.problems.length });
  // Each run is a new leader, so each stamps a higher epoch and records it in the epoch cache.
  const leader = { leaderEpoch: runId + 1, assignOffsets: true };
  for (;;) {
    const batch = nextBatch();
    const appended = log.append(batch, leader);
    // Append patched the base offset and the leader epoch into `batch`: these are the bytes
    // the log holds now.
    const sha256 = createHash('sha256').update(batch).digest('hex');
    await log.flush();
    writeLine({
      event: 'flushed',
      baseOffset: appended.baseOffset,
      lastOffset: appended.lastOffset,
      sizeBytes: batch.length,
      sha256,
    });
  }
}

main().catch((error) => {
  process.stderr.write(`log-crash-writer failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
