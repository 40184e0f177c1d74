// The sendfile path: moves a slice from the page cache to the socket with sendfile(2) on the
// libuv pool, in chunks, so the bytes never enter JavaScript and the event loop never blocks. A
// slice of the log's recent tail (FileSlice.hot) first goes as far as the socket takes it on the
// event loop itself: its pages are cached, and a pool hand-off per fetch cost a busy leader more
// than the copy (native/sendfile.c).
//
// How a full socket (a slow reader, EAGAIN) is handled, in two tiers:
// 1. Inside one addon call, the pool thread waits in poll(2) for the socket to drain, for at
//    most `writableWaitMsMax` in total; a reader that catches up within that costs nothing more.
// 2. A call that returns having written nothing (the socket stayed full) makes this loop wait
//    on a timer, doubling from 1 ms up to `writableRetryDelayMsMax`, before the next call. While
//    it waits no pool thread is held, so a stalled reader cannot starve file-system work.
// The event-loop thread itself never waits in either tier.
//
// The caller (file-records.ts) holds the socket's transfer queue and has emptied Node's write
// queue first; nothing else may write to the socket until this returns.
import { assert } from '@spool/common';
import type net from 'node:net';
import { SegmentStoreError } from './errors';
import { type FileSlice, sliceEndedEarlyError } from './file-slice';
import type { SendfileBinding, SendfileChunkResult } from './native-sendfile';
import { describeSocket, ensureSocketWritable } from './socket-writes';
import type { TransferProgress } from './transfer-progress';

/**
 * Bytes per addon call: bounds how long one transfer holds a pool thread, and lets transfers
 * on other sockets take turns between chunks, so one 1 GiB slice cannot starve them.
 */
export const sendfileChunkBytesMax = 1024 * 1024;

/** Longest a pool thread waits in poll(2) for one full socket per call (tier 1 above). */
const writableWaitMsMax = 10;

/** Longest timer wait between calls to a full socket: the delay a resumed reader may see. */
const writableRetryDelayMsMax = 25;

/** errno names that mean the connection failed, not the file. */
const networkErrorCodes = new Set([
  'ECONNABORTED',
  'ECONNRESET',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'ENETUNREACH',
  'ENOTCONN',
  'EPIPE',
  'ESHUTDOWN',
  'ETIMEDOUT',
]);

export async function sendfileSlice(
  binding: SendfileBinding,
  socket: net.Socket,
  slice: FileSlice,
  progress: TransferProgress,
): Promise<void> {
  let position = slice.position;
  let bytesRemaining = slice.sizeBytes;
  let retryDelayMs = 0;
  if (slice.hot === true && binding.sendfileNow !== undefined) {
    // The recent tail is in the page cache: what the socket takes now goes without a pool
    // hand-off; the rest (a full socket, a file that ended) takes the pool path below.
    const socketFd = writableSocketFileDescriptor(socket);
    const count = Math.min(bytesRemaining, sendfileChunkBytesMax);
    progress.started = true;
    let written: number;
    try {
      written = binding.sendfileNow(socketFd, slice.file.fd, position, count);
    } catch (error) {
      throw sendfileError(error, socket, slice, position, count);
    }
    position += written;
    bytesRemaining -= written;
  }
  while (bytesRemaining > 0) {
    const socketFd = writableSocketFileDescriptor(socket);
    const count = Math.min(bytesRemaining, sendfileChunkBytesMax);
    progress.started = true;
    const result = await sendChunk(binding, socket, socketFd, slice, position, count);
    position += result.bytesWritten;
    bytesRemaining -= result.bytesWritten;
    if (result.bytesWritten > 0) {
      retryDelayMs = 0;
      continue;
    }
    if (result.endOfFile) throw await sliceEndedEarlyError(slice, position);
    retryDelayMs = Math.min(Math.max(1, retryDelayMs * 2), writableRetryDelayMsMax);
    await waitForRetry(socket, retryDelayMs);
  }
}

/**
 * The descriptor of a socket that still accepts writes, and that nobody else wrote to since
 * the transfer began.
 */
function writableSocketFileDescriptor(socket: net.Socket): number {
  ensureSocketWritable(socket);
  // Node's queue was empty when the transfer began, so bytes in it now came from another writer
  // and would be sent in the middle of the slice. This catches a write that found the kernel
  // buffer full; one the kernel took at once cannot be seen, hence the documented contract.
  assert(socket.writableLength === 0, 'Another writer used a socket during a sendfile transfer');
  const socketFd = socketFileDescriptor(socket);
  assert(socketFd !== undefined, 'A writable net.Socket has no file descriptor');
  return socketFd;
}

/**
 * The operating-system descriptor under a net.Socket, or undefined when it has none (not yet
 * connected, closed, or a platform where libuv reports -1).
 *
 * Node does not publish it. `socket._handle` is Node's internal libuv stream wrapper (TCPWrap
 * for TCP, Pipe for Unix sockets) and its `fd` getter is how Node itself reads it. This is the
 * only place that touches it, so a Node release that moves it breaks one function; the
 * sendfile tests over a real socket would catch that.
 */
export function socketFileDescriptor(socket: net.Socket): number | undefined {
  const handle = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle;
  const socketFd = handle?.fd;
  return typeof socketFd === 'number' && socketFd >= 0 ? socketFd : undefined;
}

async function sendChunk(
  binding: SendfileBinding,
  socket: net.Socket,
  socketFd: number,
  slice: FileSlice,
  position: number,
  count: number,
): Promise<SendfileChunkResult> {
  try {
    return await binding.sendfileChunk(socketFd, slice.file.fd, position, count, writableWaitMsMax);
  } catch (error) {
    throw sendfileError(error, socket, slice, position, count);
  }
}

/** A failed sendfile as the caller reports it: the connection's fault, or the file's. */
function sendfileError(
  error: unknown,
  socket: net.Socket,
  slice: FileSlice,
  position: number,
  count: number,
): SegmentStoreError {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && networkErrorCodes.has(code)) {
    return new SegmentStoreError(
      'NETWORK_EXCEPTION',
      `sendfile to ${describeSocket(socket)} failed: ${code}`,
      { cause: error },
    );
  }
  return new SegmentStoreError(
    'KAFKA_STORAGE_ERROR',
    `sendfile of ${count} bytes at position ${position} of segment file ${slice.file.path} ` +
      `failed: ${String(code)}`,
    { cause: error, filePath: slice.file.path },
  );
}

/** Waits `delayMs`, or less if the socket closes meanwhile (the next chunk then reports it). */
function waitForRetry(socket: net.Socket, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      socket.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, delayMs);
    socket.once('close', done);
  });
}
