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
import { assert } from '@spool/common';
import type net from 'node:net';
import tls from 'node:tls';
import { copySlice } from './copy-transfer';
import { ensureSliceWithinFile, type FileSlice } from './file-slice';
import { loadSendfileBinding, type SendfileBindingLoad } from './native-sendfile';
import { sendfileSlice } from './sendfile-transfer';
import { enqueueTransfer } from './socket-transfer-queue';
import { ensureSocketWritable, waitForWriteQueueEmpty } from './socket-writes';
import type { TransferProgress } from './transfer-progress';

/** `sendfile`: zero-copy through the native addon. `copy`: fs.read and socket.write. */
export type TransferPath = 'sendfile' | 'copy';

export interface WriteToOptions {
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
  if (slice.sizeBytes === 0) return 0;
  return enqueueTransfer(socket, () => transferLocked(socket, slice, path));
}

/** Runs with the socket's transfer queue held: nothing else of ours writes to it meanwhile. */
async function transferLocked(
  socket: net.Socket,
  slice: FileSlice,
  path: TransferPath,
): Promise<number> {
  ensureSocketWritable(socket);
  if (path === 'sendfile') await waitForWriteQueueEmpty(socket);
  // After the wait, right before the first byte: the log may have been truncated meanwhile.
  await ensureSliceWithinFile(slice);
  const progress: TransferProgress = { started: false };
  try {
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
