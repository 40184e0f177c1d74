/**
 * The CPU work of a cleaner pass, one chunk of a segment at a time (segment-batches.ts): step 2
 * puts a chunk's keys in the offset map, step 3 filters a chunk's batches (batch-filter.ts: CRC
 * checks, decompression, re-encoding and recompression). The pass (log-cleaner.ts) reads the
 * chunks, writes what is kept and swaps; this is everything between a read and a write.
 *
 * Two places run it, behind one interface:
 *   - `CleanerThread` (cleaner-thread.ts), a worker thread: what a node uses, so that produce and
 *     fetch never wait behind decoding (Kafka's cleaner threads);
 *   - `InlineCleanerCompute` here, on the caller's thread: for tests of the rules that change
 *     this process's codecs, and for many short passes where a thread's start costs more.
 * Both run `ChunkWork` below, so they differ only in where the work runs.
 */
import { filterBatch, putBatchInMap, type BatchRetention } from './batch-filter';
import { OffsetMap } from './offset-map';
import type { ChunkBatch } from './segment-batches';

/** What a pass tells the work before its first chunk. */
export interface PassStart {
  /** log.cleaner.dedupe.buffer.size: the offset map's memory. */
  readonly dedupeBufferSizeBytes: number;
  /** Each live producer's last batch, producer id → that batch's last offset (rule 5). */
  readonly producerLastOffsets: ReadonlyMap<bigint, bigint>;
}

/** The retention rules of one source segment's chunks, beside the pass's map. */
export interface ChunkRetention {
  /** The map knows every key's latest record below this offset. */
  readonly mapEndOffset: bigint;
  /** The chunk's segment is young enough that its tombstones stay. */
  readonly retainTombstones: boolean;
}

/** Step 3's answer for one chunk. */
export interface FilteredChunk {
  /**
   * The kept batches back to back, in offset order: the chunk's own bytes when every batch was
   * kept whole, otherwise a new buffer. Empty when none was kept.
   */
  readonly kept: Buffer;
  readonly recordsRemoved: number;
}

/** One chunk's bytes and where its batches lie in them (segment-batches.ts). */
export interface ComputeChunk {
  readonly bytes: Buffer;
  readonly batches: readonly ChunkBatch[];
}

export interface CleanerCompute {
  /** Readies the work (a thread started and its script loaded), so a pass does not wait for it. */
  start(): Promise<void>;
  /** Starts a pass: an empty offset map; resolves to the keys it takes before it is full. */
  beginPass(start: PassStart): Promise<number>;
  /**
   * Step 2 for one chunk: every batch ending at or past `firstDirtyOffset` into the map. Resolves
   * to the base offset of the batch the map filled in (the pass's map ends there), or undefined.
   */
  mapChunk(chunk: ComputeChunk, firstDirtyOffset: bigint): Promise<bigint | undefined>;
  /** Step 3 for one chunk. */
  filterChunk(chunk: ComputeChunk, retention: ChunkRetention): Promise<FilteredChunk>;
  /** Times the work was lost to a crash of its thread (0 for the inline work). */
  readonly crashes: number;
  /** Ends the work: a request in flight rejects; no request is taken afterwards. */
  close(): Promise<void>;
}

/** The state of a pass between chunks, and the work on each: the same on either thread. */
export class ChunkWork {
  private offsetMap: OffsetMap | undefined;
  private producerLastOffsets: ReadonlyMap<bigint, bigint> = new Map();

  beginPass(start: PassStart): number {
    // The map's memory is allocated once and kept between passes, as Kafka's cleaner thread does.
    if (this.offsetMap?.memoryBytes !== start.dedupeBufferSizeBytes) {
      this.offsetMap = new OffsetMap(start.dedupeBufferSizeBytes);
    }
    this.offsetMap.clear();
    this.producerLastOffsets = start.producerLastOffsets;
    return this.offsetMap.keyCountMax;
  }

  mapChunk(chunk: ComputeChunk, firstDirtyOffset: bigint): bigint | undefined {
    const offsetMap = this.map();
    for (const batch of chunk.batches) {
      if (batch.lastOffset < firstDirtyOffset) continue;
      if (!putBatchInMap(chunk.bytes, batch.at, offsetMap)) return batch.baseOffset;
    }
    return undefined;
  }

  filterChunk(chunk: ComputeChunk, rules: ChunkRetention): FilteredChunk {
    const producers = this.producerLastOffsets;
    const retention: BatchRetention = {
      offsetMap: this.map(),
      mapEndOffset: rules.mapEndOffset,
      retainTombstones: rules.retainTombstones,
      isLastBatchOfProducer: (producerId, lastOffset) => producers.get(producerId) === lastOffset,
    };
    const parts: Buffer[] = [];
    let keptWhole = true;
    let recordsRemoved = 0;
    for (const batch of chunk.batches) {
      const outcome = filterBatch(chunk.bytes, batch.at, retention);
      if (outcome.kind === 'copied') {
        parts.push(chunk.bytes.subarray(batch.at, batch.at + batch.sizeBytes));
        continue;
      }
      keptWhole = false;
      recordsRemoved += outcome.recordsRemoved;
      if (outcome.kind === 'rebuilt') parts.push(outcome.bytes);
    }
    if (keptWhole) return { kept: chunk.bytes, recordsRemoved: 0 };
    return { kept: concatUnpooled(parts), recordsRemoved };
  }

  private map(): OffsetMap {
    if (this.offsetMap === undefined) throw new Error('a chunk of a pass that has not begun');
    return this.offsetMap;
  }
}

/**
 * `parts` copied into one buffer that owns its whole ArrayBuffer (never a slice of Node's shared
 * pool), so a worker can hand it over by transfer instead of a copy.
 */
function concatUnpooled(parts: readonly Buffer[]): Buffer {
  let sizeBytes = 0;
  for (const part of parts) sizeBytes += part.length;
  const bytes = Buffer.allocUnsafeSlow(sizeBytes);
  let position = 0;
  for (const part of parts) position += part.copy(bytes, position);
  return bytes;
}

/** The work on the caller's thread: see the header for when. */
export class InlineCleanerCompute implements CleanerCompute {
  readonly crashes = 0;
  private readonly work = new ChunkWork();

  async start(): Promise<void> {}

  async beginPass(start: PassStart): Promise<number> {
    return this.work.beginPass(start);
  }

  async mapChunk(chunk: ComputeChunk, firstDirtyOffset: bigint): Promise<bigint | undefined> {
    return this.work.mapChunk(chunk, firstDirtyOffset);
  }

  async filterChunk(chunk: ComputeChunk, retention: ChunkRetention): Promise<FilteredChunk> {
    return this.work.filterChunk(chunk, retention);
  }

  async close(): Promise<void> {}
}
