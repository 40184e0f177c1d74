/**
 * Reads a closed segment's batches for the cleaner, asynchronously and in bounded chunks, so the
 * event loop that serves produce and fetch is never held for more than one chunk's work: each
 * chunk is one positional read (libuv's pool) of up to `chunkBytes`, grown only for a batch larger
 * than that. The segment's file is pinned while it is read (segment-file.ts), so a swap or a
 * retention that drops the segment meanwhile lets the read finish. Chunks are read into shared
 * memory, which the cleaner's thread reads in place (cleaner-thread.ts).
 */
import * as fs from 'node:fs';
import { logOverheadSizeBytes, recordBatchHeaderSizeBytes } from '@spool/record-batch';
import { SegmentStoreError } from '../errors';
import type { LogSegment } from '../log-segment';

/** One batch of a chunk: where it lies in the chunk's bytes and which offsets it holds. */
export interface ChunkBatch {
  /** Its position in `SegmentChunk.bytes`. */
  readonly at: number;
  readonly sizeBytes: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
}

export interface SegmentChunk {
  readonly bytes: Buffer;
  readonly batches: readonly ChunkBatch[];
}

/**
 * The segment left its log (a truncation, retention or DeleteRecords deleted it) before the cleaner
 * could pin it: the pass over that log is over, and the next one starts from its checkpoint.
 */
export class SegmentGoneError extends Error {
  override readonly name = 'SegmentGoneError';
}

/**
 * Whole batches of `segment` from `fromPosition` (a batch boundary) to its end. A chunk's bytes
 * are valid until the next chunk is asked for.
 */
export async function* readSegmentChunks(
  segment: LogSegment,
  fromPosition: number,
  chunkBytes: number,
): AsyncGenerator<SegmentChunk> {
  const endPosition = segment.sizeBytes;
  if (segment.logFile.isDeleted) throw new SegmentGoneError(`${segment.path} was deleted`);
  const file = segment.logFile.acquire();
  try {
    let position = fromPosition;
    let buffer = sharedBuffer(chunkBytes);
    while (position < endPosition) {
      const length = Math.min(buffer.length, endPosition - position);
      await readFully(file.fd, buffer, length, position, segment.path);
      const batches: ChunkBatch[] = [];
      let at = 0;
      while (at + recordBatchHeaderSizeBytes <= length) {
        const sizeBytes = buffer.readInt32BE(at + 8) + logOverheadSizeBytes;
        if (sizeBytes < recordBatchHeaderSizeBytes) {
          throw new SegmentStoreError(
            'CORRUPT_MESSAGE',
            `${segment.path} position ${position + at}: batch length ${sizeBytes - logOverheadSizeBytes}`,
            { filePath: segment.path },
          );
        }
        if (at + sizeBytes > length) break;
        const baseOffset = buffer.readBigInt64BE(at);
        const lastOffset = baseOffset + BigInt(buffer.readInt32BE(at + 23));
        batches.push({ at, sizeBytes, baseOffset, lastOffset });
        at += sizeBytes;
      }
      if (batches.length === 0) {
        // A batch larger than the chunk: read again with room for it.
        const sizeBytes =
          length >= 12 ? buffer.readInt32BE(8) + logOverheadSizeBytes : recordBatchHeaderSizeBytes;
        if (position + sizeBytes > endPosition || length === endPosition - position) {
          throw new SegmentStoreError(
            'CORRUPT_MESSAGE',
            `${segment.path} position ${position}: a batch runs past the segment's end`,
            { filePath: segment.path },
          );
        }
        buffer = sharedBuffer(Math.max(sizeBytes, chunkBytes));
        continue;
      }
      // The consumer is done with this chunk's bytes when it asks for the next: the buffer is
      // read into again (a new 1 MiB buffer per chunk was most of the cleaner's garbage).
      yield { bytes: buffer.subarray(0, at), batches };
      position += at;
    }
  } finally {
    file.release();
  }
}

/** A buffer over a SharedArrayBuffer of its own, so another thread can read it without a copy. */
function sharedBuffer(sizeBytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(sizeBytes));
}

function readFully(
  fd: number,
  buffer: Buffer,
  length: number,
  position: number,
  filePath: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = 0;
    const step = (): void => {
      fs.read(fd, buffer, done, length - done, position + done, (error, bytesRead) => {
        if (error !== null) {
          reject(error);
          return;
        }
        if (bytesRead === 0) {
          reject(
            new SegmentStoreError('FILE_TRUNCATED', `${filePath} ended at ${position + done}`, {
              filePath,
            }),
          );
          return;
        }
        done += bytesRead;
        if (done === length) resolve();
        else step();
      });
    };
    step();
  });
}
