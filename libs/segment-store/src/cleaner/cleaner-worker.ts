/**
 * The log cleaner thread's script (cleaner-thread.ts starts it): answers each request of a pass
 * with ChunkWork (cleaner-compute.ts), one at a time, reading chunks in the shared memory the
 * pass read them into and transferring each filtered chunk back. An error of the work (a corrupt
 * batch) is an answer; anything else is a crash the node survives.
 */
import { parentPort } from 'node:worker_threads';
import { ChunkWork, type FilteredChunk } from './cleaner-compute';
import {
  cleanerThreadCrashEnvironmentVariable,
  type CleanerThreadAnswer,
  type CleanerThreadRequest,
  type SharedChunk,
} from './cleaner-thread-messages';

const port = parentPort;
if (port === null) throw new Error('cleaner-worker.js runs as a worker thread of the log cleaner');

const work = new ChunkWork();
const crashAt = process.env[cleanerThreadCrashEnvironmentVariable];

port.on('message', (request: CleanerThreadRequest) => {
  if (request.kind === crashAt) throw new Error(`test hook: crash at ${crashAt}`);
  let answer: CleanerThreadAnswer;
  const transfer: ArrayBuffer[] = [];
  try {
    answer = answerTo(request, transfer);
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    const code = (failure as { code?: unknown }).code;
    answer = {
      kind: 'failed',
      name: failure.name,
      message: failure.message,
      code: typeof code === 'string' ? code : undefined,
    };
  }
  port.postMessage(answer, transfer);
});

function answerTo(request: CleanerThreadRequest, transfer: ArrayBuffer[]): CleanerThreadAnswer {
  switch (request.kind) {
    case 'start':
      return { kind: 'started' };
    case 'beginPass':
      return { kind: 'passBegun', keyCountMax: work.beginPass(request.start) };
    case 'mapChunk':
      return {
        kind: 'mapped',
        mapFullAtOffset: work.mapChunk(chunkOf(request.chunk), request.firstDirtyOffset),
      };
    case 'filterChunk': {
      const chunk = chunkOf(request.chunk);
      const filtered: FilteredChunk = work.filterChunk(chunk, request.retention);
      if (filtered.kept === chunk.bytes) {
        return { kind: 'filtered', kept: undefined, recordsRemoved: filtered.recordsRemoved };
      }
      // ChunkWork's own buffer, whole (never a slice of a pool): moved, not copied.
      const kept = filtered.kept.buffer as ArrayBuffer;
      transfer.push(kept);
      return { kind: 'filtered', kept, recordsRemoved: filtered.recordsRemoved };
    }
  }
}

function chunkOf(chunk: SharedChunk): { bytes: Buffer; batches: SharedChunk['batches'] } {
  return {
    bytes: Buffer.from(chunk.shared, chunk.byteOffset, chunk.length),
    batches: chunk.batches,
  };
}
