/**
 * Kafka's BufferPool, for the producer's batch buffers: a batch writes its records into a
 * buffer of batchSizeBytes (plus the header) taken from here, and gives it back once the batch
 * is acknowledged or failed, so a steady producer reuses the same few buffers. Allocating a
 * fresh megabyte per batch made V8 count it as external memory and run a full mark-compact
 * every few dozen batches. The buffers the pool owns total at most `capacityBytesMax` (the
 * producer's bufferMemoryBytes); past that a batch starts in a small buffer of its own that
 * grows, as without a pool.
 */
export class BatchBufferPool {
  private readonly free: Buffer[] = [];
  /** Every buffer this pool made, free or lent; a buffer it did not make is never taken in. */
  private readonly owned = new Set<Buffer>();

  constructor(
    readonly bufferSizeBytes: number,
    private readonly capacityBytesMax: number,
  ) {}

  /** A buffer of bufferSizeBytes, or undefined when the pool has lent all it may make. */
  take(): Buffer | undefined {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    if ((this.owned.size + 1) * this.bufferSizeBytes > this.capacityBytesMax) return undefined;
    const buffer = Buffer.allocUnsafe(this.bufferSizeBytes);
    this.owned.add(buffer);
    return buffer;
  }

  /** Takes back a buffer `take` lent (anything else is left to the garbage collector). */
  give(buffer: Buffer): void {
    if (this.owned.has(buffer)) this.free.push(buffer);
  }

  get freeCount(): number {
    return this.free.length;
  }

  get ownedCount(): number {
    return this.owned.size;
  }
}
