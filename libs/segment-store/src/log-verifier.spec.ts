// Proves verifyLog finds bit rot that a clean open does not look at: a flipped byte in a closed
// segment and in the active segment of a cleanly closed log is reported with its file, byte
// position and the offset where the valid log ends; truncating there leaves a log that verifies
// and appends. An intact log verifies completely, also after DeleteRecords moved its start into
// the middle of a batch.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Log } from './log';
import { segmentFileName } from './log-segment';
import { verifyLog } from './log-verifier';
import { batchOf, temporaryDirectory } from './testing';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const leader = { leaderEpoch: 1, assignOffsets: true };
const batch = batchOf(10, { valueSizeBytes: 50 });
// Four batches a segment; a small chunk makes the walk take several reads.
const config = { segmentBytes: batch.length * 4, indexIntervalBytes: 0 };

async function cleanLog(batches: number): Promise<string> {
  const temporary = temporaryDirectory();
  cleanups.push(temporary.remove);
  const { log } = await Log.open(temporary.directory, { config });
  for (let index = 0; index < batches; index++) log.append(Buffer.from(batch), leader);
  await log.close();
  return temporary.directory;
}

async function open(directory: string): Promise<Log> {
  const { log, report } = await Log.open(directory, { config });
  // A clean open scans nothing: it cannot have seen the flipped byte.
  expect(report.segmentsScanned).toBe(0);
  cleanups.push(() => log.abandon());
  return log;
}

function flipByte(filePath: string, position: number): void {
  const fd = openSync(filePath, 'r+');
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, position);
  byte[0] = byte[0]! ^ 0x10;
  writeSync(fd, byte, 0, 1, position);
  closeSync(fd);
}

describe('verifyLog', () => {
  it('verifies every batch of an intact log, in bounded chunks', async () => {
    const log = await open(await cleanLog(10));
    const report = await verifyLog(log, { chunkBytes: batch.length * 3 });
    expect(report.corruption).toBeUndefined();
    expect(report.batchesVerified).toBe(10);
    expect(report.bytesVerified).toBe(10 * batch.length);
  });

  it('starts inside a batch after DeleteRecords', async () => {
    const log = await open(await cleanLog(6));
    log.deleteRecordsBefore(25n);
    const report = await verifyLog(log);
    expect(report.corruption).toBeUndefined();
    expect(report.batchesVerified).toBe(4);
  });

  it('reports a flipped byte in a closed segment with file, position and offset', async () => {
    const directory = await cleanLog(10);
    // Segment 0 holds offsets 0..39; its third batch starts at 2 × batch.length.
    const closedSegment = path.join(directory, segmentFileName(0n, '.log'));
    flipByte(closedSegment, 2 * batch.length + batch.length - 5);
    const log = await open(directory);
    const report = await verifyLog(log, { chunkBytes: batch.length });
    expect(report.corruption).toMatchObject({
      offset: 20n,
      filePath: closedSegment,
      position: 2 * batch.length,
    });
    expect(report.corruption!.problem).toMatch(/crc/);
    expect(report.batchesVerified).toBe(2);

    log.truncateTo(report.corruption!.offset);
    expect(log.logEndOffset).toBe(20n);
    expect((await verifyLog(log)).corruption).toBeUndefined();
    expect(log.append(Buffer.from(batch), leader).baseOffset).toBe(20n);
  });

  it('reports a flipped byte in the active segment of a cleanly closed log', async () => {
    const directory = await cleanLog(10);
    // Segment 80 is the active one, holding offsets 80..99; flip a byte in its second batch.
    const activeSegment = path.join(directory, segmentFileName(80n, '.log'));
    flipByte(activeSegment, batch.length + 70);
    const log = await open(directory);
    const report = await verifyLog(log);
    expect(report.corruption).toMatchObject({
      offset: 90n,
      filePath: activeSegment,
      position: batch.length,
    });
  });

  it('reports a damaged batch length as a framing problem at that batch', async () => {
    const directory = await cleanLog(5);
    const closedSegment = path.join(directory, segmentFileName(0n, '.log'));
    // batchLength is bytes 8..11 of a batch header: make the second batch claim to be huge.
    flipByte(closedSegment, batch.length + 8);
    const log = await open(directory);
    const report = await verifyLog(log);
    expect(report.corruption?.offset).toBe(10n);
    expect(report.corruption?.filePath).toBe(closedSegment);
  });
});
