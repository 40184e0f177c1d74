import { assert } from '@spool/common';
import { ClientErrorCode, clientError } from './errors';

/**
 * The producer's bound on records waiting to be sent (Kafka's buffer.memory). `send` reserves
 * each record's size before it joins a batch and the bytes come back when its batch is done,
 * acknowledged or failed. When the buffer is full, senders wait in arrival order for at most
 * maxBlockMs and then fail with BUFFER_EXHAUSTED; while anyone waits, the producer sends every
 * batch at once instead of lingering (`isExhausted`), as Kafka's accumulator does.
 */
interface Waiter {
  readonly sizeBytes: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export class BufferMemory {
  private availableBytes: number;
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly totalBytes: number,
    private readonly maxBlockMs: number,
    private readonly onExhausted: () => void = () => {},
  ) {
    this.availableBytes = totalBytes;
  }

  get freeBytes(): number {
    return this.availableBytes;
  }

  get isExhausted(): boolean {
    return this.waiters.length > 0;
  }

  /**
   * Resolves once `sizeBytes` are reserved, waiting at most `waitMs` (what is left of the
   * send's maxBlockMs); the caller must `release` them later.
   */
  reserve(sizeBytes: number, waitMs: number): Promise<void> {
    assert(sizeBytes <= this.totalBytes, 'a reservation larger than the whole buffer');
    if (this.waiters.length === 0 && this.availableBytes >= sizeBytes) {
      this.availableBytes -= sizeBytes;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        sizeBytes,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.removeWaiter(waiter);
          reject(
            clientError(
              ClientErrorCode.BufferExhausted,
              `the producer buffer (bufferMemoryBytes=${this.totalBytes}) had no room for a ` +
                `record of ${sizeBytes} bytes within maxBlockMs=${this.maxBlockMs}: records are ` +
                'produced faster than the gateway accepts them',
            ),
          );
          // The waiter ahead may have been the one blocking the others.
          this.grantWaiters();
        }, waitMs),
      };
      this.waiters.push(waiter);
      this.onExhausted();
    });
  }

  /**
   * Reserves `sizeBytes` at once if they are free and nobody waits, else returns false. `send`
   * takes this path first: awaiting `reserve` per record would yield to the event loop between
   * records, and concurrent sends would interleave their records across every batch.
   */
  tryReserve(sizeBytes: number): boolean {
    if (this.waiters.length > 0 || this.availableBytes < sizeBytes) return false;
    this.availableBytes -= sizeBytes;
    return true;
  }

  release(sizeBytes: number): void {
    this.availableBytes += sizeBytes;
    assert(this.availableBytes <= this.totalBytes, 'released more buffer memory than reserved');
    this.grantWaiters();
  }

  /** Fails every waiting sender, e.g. when the producer disconnects. */
  failWaiters(error: Error): void {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  private grantWaiters(): void {
    while (this.waiters.length > 0 && this.waiters[0]!.sizeBytes <= this.availableBytes) {
      const waiter = this.waiters.shift()!;
      clearTimeout(waiter.timer);
      this.availableBytes -= waiter.sizeBytes;
      waiter.resolve();
    }
  }

  private removeWaiter(waiter: Waiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index >= 0) this.waiters.splice(index, 1);
  }
}
