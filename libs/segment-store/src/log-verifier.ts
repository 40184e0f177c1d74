/**
 * Reads a whole log back and checks every batch: framing, magic and sizes, CRC-32C, and offsets
 * that follow on from each other. It finds what the open path by design does not look at:
 * after a clean shutdown nothing is scanned, and after a crash only what follows the recovery
 * point, so a bit flipped on disk in a closed segment (or in the active one while the node was
 * stopped) would otherwise be served as it is. The storage node verifies each replica's log once
 * per process start, before the replica serves reads or counts toward the ISR, and truncates a
 * follower at the first bad batch so that it fetches the rest again from its leader.
 *
 * The walk goes through `Log.read`, so it sees exactly the batches a fetch would send, one chunk
 * at a time (a bounded buffer, chunkBytes or one batch when a batch is larger), and yields to the
 * event loop on every read.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';
import { checkRecordBatchCrc, checkRecordBatchFraming } from '@spool/record-batch';
import { SegmentStoreError } from './errors';
import type { FileSlice } from './file-slice';
import type { Log } from './log';

const read = promisify(fs.read);

/** Bytes read per step: large enough to stream, small enough to bound memory per log. */
export const logVerificationChunkBytesDefault = 1024 * 1024;

/** The first bad batch of a log, named as an operator needs it to look at the file. */
export interface LogCorruption {
  /** The offset the bad batch should have started at: the log is valid below it. */
  readonly offset: bigint;
  readonly filePath: string;
  /** Byte position of the bad batch in that file. */
  readonly position: number;
  readonly problem: string;
}

export interface LogVerificationReport {
  readonly batchesVerified: number;
  readonly bytesVerified: number;
  readonly durationMs: number;
  /** Absent when every batch from the log start offset to the log end offset is intact. */
  readonly corruption?: LogCorruption;
}

export interface LogVerificationOptions {
  readonly chunkBytes?: number;
  /** Stops the walk between chunks; the report then covers what was read. */
  readonly signal?: AbortSignal;
}

export async function verifyLog(
  log: Log,
  options: LogVerificationOptions = {},
): Promise<LogVerificationReport> {
  const startedMs = Date.now();
  const chunkBytes = options.chunkBytes ?? logVerificationChunkBytesDefault;
  let batchesVerified = 0;
  let bytesVerified = 0;
  let expectedOffset = log.logStartOffset;
  const report = (corruption?: LogCorruption): LogVerificationReport => ({
    batchesVerified,
    bytesVerified,
    durationMs: Date.now() - startedMs,
    ...(corruption === undefined ? {} : { corruption }),
  });

  while (expectedOffset < log.logEndOffset && options.signal?.aborted !== true) {
    let result;
    try {
      result = log.read(expectedOffset, chunkBytes);
    } catch (error) {
      // The index entry did not match the batch header it points at, or the like.
      return report({
        offset: expectedOffset,
        filePath: filePathOf(error) ?? '(unknown segment)',
        position: -1,
        problem: error instanceof Error ? error.message : String(error),
      });
    }
    try {
      if (result.slices.length === 0) {
        return report({
          offset: expectedOffset,
          filePath: '(no segment)',
          position: -1,
          problem: `no batch holds offset ${expectedOffset} below the log end offset ${log.logEndOffset}`,
        });
      }
      for (const slice of result.slices) {
        const bytes = await readSlice(slice);
        for (let position = 0; position < bytes.length;) {
          const filePosition = slice.position + position;
          const corruption = (problem: string): LogCorruption => ({
            offset: expectedOffset,
            filePath: slice.file.path,
            position: filePosition,
            problem,
          });
          let header;
          try {
            header = checkRecordBatchFraming(bytes, position);
            checkRecordBatchCrc(header);
          } catch (error) {
            return report(corruption(error instanceof Error ? error.message : String(error)));
          }
          // The first batch may start below the log start offset (DeleteRecords moves it inside
          // a batch); every later one must start right after its predecessor.
          const contiguous =
            batchesVerified === 0
              ? header.baseOffset <= expectedOffset && expectedOffset <= header.lastOffset
              : header.baseOffset === expectedOffset;
          if (!contiguous || header.lastOffset < header.baseOffset) {
            return report(
              corruption(
                `batch covers offsets ${header.baseOffset}..${header.lastOffset}, ` +
                  `expected one starting at ${expectedOffset}`,
              ),
            );
          }
          batchesVerified++;
          bytesVerified += header.sizeBytes;
          expectedOffset = header.lastOffset + 1n;
          position += header.sizeBytes;
        }
      }
    } finally {
      result.release();
    }
  }
  return report();
}

async function readSlice(slice: FileSlice): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(slice.sizeBytes);
  let filled = 0;
  while (filled < bytes.length) {
    const { bytesRead } = await read(
      slice.file.fd,
      bytes,
      filled,
      bytes.length - filled,
      slice.position + filled,
    );
    // The file ends inside the slice: the rest reads as zeros, which framing refuses.
    if (bytesRead === 0) return bytes.subarray(0, filled);
    filled += bytesRead;
  }
  return bytes;
}

function filePathOf(error: unknown): string | undefined {
  return error instanceof SegmentStoreError ? error.filePath : undefined;
}
