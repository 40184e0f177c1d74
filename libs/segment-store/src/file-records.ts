// Moves a slice of a segment file to a socket: the fetch path of consumers and followers
// (Kafka's FileRecords.writeTo).
//
// On disk: nothing of its own. A slice is a byte range of a `.log` segment file (RecordBatch v2
// batches, written by the append path); this module reads it and never writes the file, so a
// crash during a transfer leaves the log as it was and only cuts the connection.
//
// Which calls may interleave, per socket (the contract, which callers must keep):
// 1. Bytes written with socket.write before writeTo is called go out before the slice: the
//    sendfile path waits until Node's write queue for the socket is empty.
// 2. From the call until its promise settles, nothing else may write to the socket: sendfile
//    writes around Node's queue, so another write would land inside the slice. Writes that
//    find the kernel buffer full are detected and fail the transfer; others cannot be seen.
// 3. writeTo calls on one socket are serialized in call order (socket-transfer-queue.ts), so a
//    caller may pipeline several slices without waiting for each.
// 4. A transfer that fails after its first byte may have reached the socket destroys the
//    socket: the peer holds part of a response and cannot find where the next one starts.
//    A failure before that (a truncated file, a closed socket) leaves the socket as it was.
// 5. The file handle must stay open until the promise settles; the slice does not own it.
//
// The path (sendfile or copy) is chosen once, when this module loads, and logged in one line.
// Whatever the path, a slice of at most `inlineCopyBytesMax` is read synchronously and written
// through Node's queue (the inline copy below): a tail fetch, a follower's or a caught-up
// consumer's, moves a few KiB, and for those the sendfile path's fixed cost (an fstat and a
// sendfile, each a round trip through the libuv pool, and four descriptor calls) was most of
// the leader's CPU and, on a busy machine, milliseconds of each replication round trip.
import { assert } from '@spool/common';
import type net from 'node:net';
import tls from 'node:tls';
import { copySlice } from './copy-transfer';
import { SegmentStoreError } from './errors';
import { ensureSliceWithinFile, type FileSlice } from './file-slice';
import { loadSendfileBinding, type SendfileBindingLoad } from './native-sendfile';
import { sendfileSlice, socketFileDescriptor } from './sendfile-transfer';
import { readSliceInto } from './slice-read';
import { enqueueTransfer } from './socket-transfer-queue';
import {
  describeSocket,
  ensureSocketWritable,
  waitForWriteQueueEmpty,
  writeToSocket,
} from './socket-writes';
import type { TransferProgress } from './transfer-progress';

/** `sendfile`: zero-copy through the native addon. `copy`: fs.read and socket.write. */
export type TransferPath = 'sendfile' | 'copy';

/**
 * Slices up to this size are copied inline unless a path is forced. The log's read already read
 * the batch headers of the slice synchronously (the same pages, in the page cache); copying 64
 * KiB costs microseconds, less than the calls the sendfile path makes to set itself up.
 */
export const inlineCopyBytesMax = 64 * 1024;

export interface WriteToOptions {
  /**
   * Bytes that go right before the slice, in the same transfer: a response's header. On the
   * sendfile path they are handed to the kernel with MSG_MORE (native-sendfile.ts), so they leave
   * in the slice's first segment and the reader wakes once; inline, they share the slice's write.
   */
  readonly header?: Buffer;
  /**
   * Forces a path, for tests and benchmarks. `sendfile` fails when the addon is not loaded or
   * the socket is TLS. Without it, the path chosen at load time is used (copy for TLS).
   */
  readonly path?: TransferPath;
}

const sendfileBindingLoad: SendfileBindingLoad = loadSendfileBinding();
const sendfileBinding = sendfileBindingLoad.binding;
logActiveTransferPath(sendfileBindingLoad);

/** The path writeTo uses unless told otherwise; fixed when this module loads. */
export function activeTransferPath(): TransferPath {
  return sendfileBinding === undefined ? 'copy' : 'sendfile';
}

/**
 * Writes the bytes of `slice` to `socket` and resolves with their count, once every byte has
 * been handed to the kernel. Rejects with a SegmentStoreError: FILE_TRUNCATED when the file no
 * longer covers the slice, NETWORK_EXCEPTION when the socket fails or closes,
 * KAFKA_STORAGE_ERROR when the file cannot be read. See the header for what callers must keep.
 */
export async function writeTo(
  socket: net.Socket,
  slice: FileSlice,
  options: WriteToOptions = {},
): Promise<number> {
  ensureSliceValid(slice);
  const path = chooseTransferPath(socket, options.path);
  const header = options.header;
  if (slice.sizeBytes === 0 && header === undefined) return 0;
  if (
    slice.sizeBytes === 0 ||
    (options.path === undefined && slice.sizeBytes <= inlineCopyBytesMax)
  ) {
    return enqueueTransfer(socket, () => copyInlineLocked(socket, slice, header));
  }
  return enqueueTransfer(socket, () => transferLocked(socket, slice, path, header));
}

/**
 * The inline copy, with the socket's transfer queue held: read the whole slice synchronously,
 * then one socket.write. Bytes queued in Node before it (a response header) go out first, as
 * Node's queue keeps order; no sendfile runs on this socket meanwhile (the transfer queue). A
 * read that comes up short means the file was truncated since the slice was taken: nothing was
 * written yet, so the socket stays usable (contract point 4).
 */
async function copyInlineLocked(
  socket: net.Socket,
  slice: FileSlice,
  header: Buffer | undefined,
): Promise<number> {
  ensureSocketWritable(socket);
  const headerBytes = header?.length ?? 0;
  const bytes = Buffer.allocUnsafe(headerBytes + slice.sizeBytes);
  header?.copy(bytes, 0);
  readSliceInto(slice, bytes, headerBytes);
  try {
    await writeToSocket(socket, bytes);
  } catch (error) {
    // Contract point 4: the write may have put part of the slice on the wire.
    socket.destroy();
    throw error;
  }
  return slice.sizeBytes;
}

/** Runs with the socket's transfer queue held: nothing else of ours writes to it meanwhile. */
async function transferLocked(
  socket: net.Socket,
  slice: FileSlice,
  path: TransferPath,
  header: Buffer | undefined,
): Promise<number> {
  ensureSocketWritable(socket);
  if (path === 'sendfile') await waitForWriteQueueEmpty(socket);
  // After the wait, right before the first byte: the log may have been truncated meanwhile.
  await ensureSliceWithinFile(slice);
  const progress: TransferProgress = { started: false };
  try {
    if (header !== undefined) await sendHeader(socket, header, path, progress);
    if (path === 'sendfile') {
      assert(sendfileBinding !== undefined, 'The sendfile path was chosen without the addon');
      await sendfileSlice(sendfileBinding, socket, slice, progress);
    } else {
      await copySlice(socket, slice, progress);
    }
  } catch (error) {
    // Contract point 4. destroy() without an error: the rejection carries it, and an 'error'
    // event would crash a process that has no listener for it.
    if (progress.started) socket.destroy();
    throw error;
  }
  return slice.sizeBytes;
}

/**
 * The header before a slice. On the sendfile path it goes straight to the kernel with MSG_MORE
 * when Node's queue is empty (it is, after the wait above), so nothing of Node's can pass it; a
 * socket too full to take all of it gets the rest through Node's queue, which then drains
 * before the sendfile. On the copy path it joins Node's queue ahead of the slice's writes.
 */
async function sendHeader(
  socket: net.Socket,
  header: Buffer,
  path: TransferPath,
  progress: TransferProgress,
): Promise<void> {
  progress.started = true;
  let sentBytes = 0;
  const socketFd = socketFileDescriptor(socket);
  if (path === 'sendfile' && sendfileBinding?.sendMoreNow !== undefined && socketFd !== undefined) {
    try {
      sentBytes = sendfileBinding.sendMoreNow(socketFd, header);
    } catch (error) {
      const code = String((error as { code?: unknown }).code);
      throw new SegmentStoreError(
        'NETWORK_EXCEPTION',
        `sending a header to ${describeSocket(socket)} failed: ${code}`,
        { cause: error },
      );
    }
  }
  if (sentBytes === header.length) return;
  socket.write(sentBytes === 0 ? header : header.subarray(sentBytes));
  if (path === 'sendfile') await waitForWriteQueueEmpty(socket);
}

function chooseTransferPath(socket: net.Socket, requested: TransferPath | undefined): TransferPath {
  // sendfile writes to the descriptor under TLS and would send the slice unencrypted.
  const encrypted = socket instanceof tls.TLSSocket;
  if (requested === 'sendfile') {
    assert(sendfileBinding !== undefined, 'The sendfile path was requested without the addon');
    assert(!encrypted, 'The sendfile path was requested for a TLS socket');
    return 'sendfile';
  }
  if (requested === 'copy' || encrypted) return 'copy';
  return activeTransferPath();
}

function ensureSliceValid(slice: FileSlice): void {
  assert(Number.isSafeInteger(slice.file.fd), 'slice.file.fd must be an integer');
  assert(slice.file.fd >= 0, 'slice.file.fd must not be negative');
  assert(Number.isSafeInteger(slice.position), 'slice.position must be an integer');
  assert(slice.position >= 0, 'slice.position must not be negative');
  assert(Number.isSafeInteger(slice.sizeBytes), 'slice.sizeBytes must be an integer');
  assert(slice.sizeBytes >= 0, 'slice.sizeBytes must not be negative');
}

function logActiveTransferPath(load: SendfileBindingLoad): void {
  if (load.binding !== undefined) {
    console.info(`[segment-store] fetch transfer path: sendfile (addon ${load.addonPath})`);
  } else {
    console.warn(`[segment-store] fetch transfer path: copy, because ${load.reason}`);
  }
}
