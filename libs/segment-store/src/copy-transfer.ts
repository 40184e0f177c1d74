// The copy path: reads the slice into a pooled buffer with fs.read and writes it with
// socket.write, one chunk at a time. It is the fallback where the sendfile addon is missing
// (not Linux, no compiler at install), the path for sockets sendfile must not touch (TLS), and
// the baseline a benchmark compares sendfile against.
import fs from 'node:fs';
import type net from 'node:net';
import { promisify } from 'node:util';
import { SegmentStoreError } from './errors';
import { type FileSlice, sliceEndedEarlyError } from './file-slice';
import { writeToSocket } from './socket-writes';
import type { TransferProgress } from './transfer-progress';

const read = promisify(fs.read);

/** Bytes per read and write: large enough to amortize the calls, small enough to pool many. */
export const copyBufferBytes = 256 * 1024;

/** Idle buffers kept for reuse: covers this many concurrent copies without allocating. */
const copyBuffersPooledMax = 16;

const idleCopyBuffers: Buffer[] = [];

export async function copySlice(
  socket: net.Socket,
  slice: FileSlice,
  progress: TransferProgress,
): Promise<void> {
  const buffer = idleCopyBuffers.pop() ?? Buffer.allocUnsafeSlow(copyBufferBytes);
  let position = slice.position;
  let bytesRemaining = slice.sizeBytes;
  while (bytesRemaining > 0) {
    const bytesRead = await readChunk(
      slice,
      buffer,
      Math.min(bytesRemaining, buffer.length),
      position,
    );
    if (bytesRead === 0) throw await sliceEndedEarlyError(slice, position);
    progress.started = true;
    // socket.write keeps a reference to the bytes until its callback, so the next read into the
    // same buffer waits for it.
    await writeToSocket(socket, buffer.subarray(0, bytesRead));
    position += bytesRead;
    bytesRemaining -= bytesRead;
  }
  // Only a buffer whose last write completed goes back: after a failure, a write that Node
  // still holds could read it while the next transfer fills it.
  if (idleCopyBuffers.length < copyBuffersPooledMax) idleCopyBuffers.push(buffer);
}

async function readChunk(
  slice: FileSlice,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<number> {
  try {
    return (await read(slice.file.fd, buffer, 0, length, position)).bytesRead;
  } catch (error) {
    throw new SegmentStoreError(
      'KAFKA_STORAGE_ERROR',
      `Read of ${length} bytes at position ${position} of segment file ${slice.file.path} failed`,
      { cause: error, filePath: slice.file.path },
    );
  }
}
