// Writes through Node's own write queue of a socket, as promises that settle exactly once:
// on the write callback, or when the socket closes first. Both transfer paths use these, the
// copy path for its chunks and the sendfile path to wait until Node's queue is empty.
import type net from 'node:net';
import { SegmentStoreError } from './errors';

const emptyChunk = Buffer.alloc(0);

/** Names the socket by its peer for error messages; Node forgets the peer once it closes. */
export function describeSocket(socket: net.Socket): string {
  if (socket.remoteAddress === undefined) return 'a closed socket';
  return `the socket to ${socket.remoteAddress}:${socket.remotePort}`;
}

/**
 * Throws NETWORK_EXCEPTION unless the socket still accepts writes. Writing to an ended socket
 * would also emit 'error' on it, which crashes a process that has no listener for it.
 */
export function ensureSocketWritable(socket: net.Socket): void {
  if (socket.writable) return;
  throw new SegmentStoreError(
    'NETWORK_EXCEPTION',
    `Cannot write to ${describeSocket(socket)}: it is ended, destroyed or failed`,
  );
}

/** Resolves once Node has handed `chunk` to the kernel: honours backpressure, one chunk at a time. */
export function writeToSocket(socket: net.Socket, chunk: Buffer): Promise<void> {
  ensureSocketWritable(socket);
  return new Promise((resolve, reject) => {
    const onClose = (): void => {
      reject(
        new SegmentStoreError(
          'NETWORK_EXCEPTION',
          `Write to ${describeSocket(socket)} did not complete: the socket closed`,
        ),
      );
    };
    socket.once('close', onClose);
    socket.write(chunk, (error) => {
      socket.off('close', onClose);
      if (error === undefined || error === null) {
        resolve();
        return;
      }
      reject(
        new SegmentStoreError('NETWORK_EXCEPTION', `Write to ${describeSocket(socket)} failed`, {
          cause: error,
        }),
      );
    });
  });
}

/**
 * Resolves when Node's write queue of the socket is empty and the socket is connected, so bytes
 * written around Node (sendfile on its descriptor) cannot overtake bytes already queued.
 * 'drain' is not enough: Node emits it only after a write returned false, not whenever the
 * queue empties. The callback of an empty write runs after every earlier write completed.
 */
export async function waitForWriteQueueEmpty(socket: net.Socket): Promise<void> {
  while (socket.connecting || socket.writableLength > 0) {
    await writeToSocket(socket, emptyChunk);
  }
}
