/**
 * The messages between a log cleaner pass and the cleaner's thread (cleaner-thread.ts and
 * cleaner-worker.ts), on their own so that the thread's script loads nothing it does not run.
 */
import type { ChunkRetention, PassStart } from './cleaner-compute';
import type { ChunkBatch } from './segment-batches';

/** A chunk as it crosses to the thread: its shared memory, not its bytes. */
export interface SharedChunk {
  readonly shared: SharedArrayBuffer;
  readonly byteOffset: number;
  readonly length: number;
  readonly batches: readonly ChunkBatch[];
}

export type CleanerThreadRequest =
  | { readonly kind: 'start' }
  | { readonly kind: 'beginPass'; readonly start: PassStart }
  | { readonly kind: 'mapChunk'; readonly chunk: SharedChunk; readonly firstDirtyOffset: bigint }
  | {
      readonly kind: 'filterChunk';
      readonly chunk: SharedChunk;
      readonly retention: ChunkRetention;
    };

export type CleanerThreadAnswer =
  | { readonly kind: 'started' }
  | { readonly kind: 'passBegun'; readonly keyCountMax: number }
  | { readonly kind: 'mapped'; readonly mapFullAtOffset: bigint | undefined }
  | {
      readonly kind: 'filtered';
      /** Undefined when the chunk was kept whole; otherwise transferred. */
      readonly kept: ArrayBuffer | undefined;
      readonly recordsRemoved: number;
    }
  | {
      readonly kind: 'failed';
      readonly name: string;
      readonly message: string;
      readonly code: string | undefined;
    };

/**
 * TEST HOOK, off by default: tests alone set this environment variable (log-cleaner.spec.ts, and
 * test/compaction-thread-crash.spec.ts in a real storage node), to crash the cleaner's thread for
 * real. Set to a request's kind (`beginPass`, `mapChunk`, `filterChunk`), the thread throws,
 * uncaught, on every request of that kind, so the thread dies as on a bug or out of memory and
 * the pass in flight is lost. The thread reads it once, as it starts; unset, its cost is one
 * string comparison per request.
 */
export const cleanerThreadCrashEnvironmentVariable = 'SPOOL_TEST_CLEANER_THREAD_CRASH_AT';
