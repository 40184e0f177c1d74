// Serializes transfers per socket. A transfer writes around Node's write queue (sendfile on the
// socket's descriptor), so two transfers on one socket would interleave their bytes; here each
// waits for the previous one to settle, in call order, as a fetch pipeline needs.
import type net from 'node:net';
import { SegmentStoreError } from './errors';

/**
 * Transfers queued or running on one socket. Each is a fetch response the peer pipelined; Kafka
 * brokers stop reading a connection with a response in flight, so a deep queue means a caller
 * that forgot its own bound, and refusing is better than holding slices (and files) open.
 */
export const socketTransfersPendingMax = 64;

interface SocketTransferQueue {
  /** Settles when the last transfer enqueued so far has settled; never rejects. */
  tail: Promise<void>;
  transfersPending: number;
}

const queuesBySocket = new WeakMap<net.Socket, SocketTransferQueue>();

/** Runs `transfer` once every transfer enqueued before it on `socket` has settled. */
export function enqueueTransfer<T>(socket: net.Socket, transfer: () => Promise<T>): Promise<T> {
  let queue = queuesBySocket.get(socket);
  if (queue === undefined) {
    queue = { tail: Promise.resolve(), transfersPending: 0 };
    queuesBySocket.set(socket, queue);
  }
  if (queue.transfersPending >= socketTransfersPendingMax) {
    return Promise.reject(
      new SegmentStoreError(
        'TRANSFER_QUEUE_FULL',
        `${queue.transfersPending} transfers are already pending on one socket ` +
          `(socketTransfersPendingMax = ${socketTransfersPendingMax})`,
      ),
    );
  }
  const ownQueue = queue;
  ownQueue.transfersPending += 1;
  const result = ownQueue.tail.then(transfer);
  ownQueue.tail = result.then(
    () => settled(socket, ownQueue),
    () => settled(socket, ownQueue),
  );
  return result;
}

/** True while a transfer is queued or running on `socket`: nothing else may write to it. */
export function isTransferPending(socket: net.Socket): boolean {
  return queuesBySocket.has(socket);
}

function settled(socket: net.Socket, queue: SocketTransferQueue): void {
  queue.transfersPending -= 1;
  if (queue.transfersPending === 0) queuesBySocket.delete(socket);
}
