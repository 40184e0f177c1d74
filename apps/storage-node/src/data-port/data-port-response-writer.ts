// Puts data-port responses on a connection's socket. A FETCH response is its header frame (every
// partition header) followed by each partition's slices moved with writeTo (sendfile), so record
// bytes never enter JavaScript; the header travels with the first slice (writeTo's `header`), so
// it leaves in that slice's first segment and the reader wakes once. A response whose records
// fit inlineCopyBytesMax (a tail fetch) is read into memory and written whole, in one write.
// writeTo's contract (segment-store file-records.ts) is kept by the caller: one response at a
// time per socket, nothing else written while a slice moves. Once the header is out, the frame
// can only be completed or the connection closed: a failure after it leaves the peer inside a
// frame it cannot finish.
import { assert, SpoolError } from '@spool/common';
import { dataPortPartitionsMax, encodeFetchResponseHeader } from '@spool/protocol';
import { inlineCopyBytesMax, readSliceInto, writeTo } from '@spool/segment-store';
import type net from 'node:net';
import type { FetchResult } from './data-port-handlers';

const int32Max = 0x7fffffff;
/** sizeBytes is a u32: header and records of one frame must fit in it. */
const frameSizeBytesMax = 0xffffffff;

/** Called after each partition's records were handed to the kernel. */
export type PartitionSentCallback = (topic: string, sizeBytes: number) => void;

/**
 * Resolves once Node handed `frame` to the kernel, so a peer that does not read stops the
 * connection's next response instead of growing Node's write queue. Rejects with
 * NETWORK_EXCEPTION when the socket fails or closes first.
 */
export function writeFrame(socket: net.Socket, frame: Buffer): Promise<void> {
  ensureWritable(socket);
  return new Promise((resolve, reject) => {
    const onClose = (): void => {
      reject(networkError('the socket closed before a response was written'));
    };
    socket.once('close', onClose);
    socket.write(frame, (error) => {
      socket.off('close', onClose);
      if (error === undefined || error === null) resolve();
      else reject(networkError('a response write failed', error));
    });
  });
}

/**
 * Writes a whole FETCH response: the header frame, then every slice in partition order. Rejects
 * with the transfer's error (NETWORK_EXCEPTION, FILE_TRUNCATED, KAFKA_STORAGE_ERROR); the caller
 * must then close the connection, and releases the result either way.
 */
export async function sendFetchResponse(
  socket: net.Socket,
  correlationId: number,
  result: FetchResult,
  onPartitionSent: PartitionSentCallback,
): Promise<void> {
  ensureFetchResultValid(result);
  const header = encodeFetchResponseHeader(
    correlationId,
    result.partitions.map(({ slices: _slices, sizeBytes, ...fields }) => ({
      ...fields,
      recordsSizeBytes: sizeBytes,
    })),
    result.session,
  );
  if (result.partitions.every((partition) => partition.sizeBytes === 0)) {
    await writeFrame(socket, header);
    return;
  }
  const recordsSizeBytes = result.partitions.reduce((sum, { sizeBytes }) => sum + sizeBytes, 0);
  if (recordsSizeBytes <= inlineCopyBytesMax) {
    await sendInlineFetchResponse(socket, header, recordsSizeBytes, result, onPartitionSent);
    return;
  }
  ensureWritable(socket);
  let unsentHeader: Buffer | undefined = header;
  for (const partition of result.partitions) {
    if (partition.sizeBytes === 0) continue;
    let sentBytes = 0;
    for (const slice of partition.slices) {
      sentBytes += await writeTo(socket, slice, unsentHeader === undefined ? {} : { header });
      unsentHeader = undefined;
    }
    assert(sentBytes === partition.sizeBytes, 'writeTo moved a whole partition');
    onPartitionSent(partition.topic, sentBytes);
  }
}

/**
 * A small response (a tail fetch: a follower's, or a caught-up consumer's) as one frame in one
 * write: the records are read into it synchronously (segment-store readSliceInto), so the peer
 * wakes once for the whole response, not for its header and then for each slice. A truncated
 * file is found before anything is written.
 */
async function sendInlineFetchResponse(
  socket: net.Socket,
  header: Buffer,
  recordsSizeBytes: number,
  result: FetchResult,
  onPartitionSent: PartitionSentCallback,
): Promise<void> {
  const frame = Buffer.allocUnsafe(header.length + recordsSizeBytes);
  header.copy(frame, 0);
  let position = header.length;
  for (const partition of result.partitions) {
    for (const slice of partition.slices) {
      readSliceInto(slice, frame, position);
      position += slice.sizeBytes;
    }
  }
  assert(position === frame.length, 'an inline response holds every slice');
  await writeFrame(socket, frame);
  for (const partition of result.partitions) {
    if (partition.sizeBytes > 0) onPartitionSent(partition.topic, partition.sizeBytes);
  }
}

/** A handler's result must describe the bytes it points at: a mismatch is a handler bug. */
function ensureFetchResultValid(result: FetchResult): void {
  assert(result.partitions.length <= dataPortPartitionsMax, 'fetch result has too many partitions');
  let recordsSizeBytes = 0;
  for (const partition of result.partitions) {
    let slicesSizeBytes = 0;
    for (const slice of partition.slices) slicesSizeBytes += slice.sizeBytes;
    assert(slicesSizeBytes === partition.sizeBytes, 'partition sizeBytes must sum its slices');
    assert(partition.sizeBytes <= int32Max, 'partition records must fit recordsSizeBytes (i32)');
    recordsSizeBytes += partition.sizeBytes;
  }
  assert(recordsSizeBytes < frameSizeBytesMax, 'fetch response records must fit one frame');
}

function ensureWritable(socket: net.Socket): void {
  if (!socket.writable) throw networkError('the socket is ended, destroyed or failed');
}

function networkError(problem: string, cause?: unknown): SpoolError {
  return new SpoolError('NETWORK_EXCEPTION', `Cannot answer on the data port: ${problem}`, {
    retriable: true,
    cause,
  });
}
