/**
 * The log cleaner's thread (Kafka's log.cleaner.threads = 1): the CPU work of a pass
 * (cleaner-compute.ts) in a worker thread (cleaner-worker.ts), so that produce and fetch on the
 * node's event loop never wait behind a chunk's decoding, CRC checks and recompression. The
 * pass itself stays on the event loop: asynchronous reads, the cleaned segment's appends, the
 * swap's renames and fsyncs, all of them short.
 *
 * Messages: one request at a time, from the pass to the thread, and its one answer (the pass
 * awaits each before it reads the next chunk; a request sent meanwhile, the node's start beside
 * a first pass, waits for the answer before it), so the queue each way holds one message.
 * Bytes never cross by copy: a chunk lies in a SharedArrayBuffer that the pass read into
 * (segment-batches.ts) and the thread reads in place; a filtered chunk comes back in a buffer
 * transferred from the thread, or as "kept whole" when the chunk's own bytes are the answer.
 * The offset map lives in the thread, allocated at the first pass and kept.
 *
 * Lifecycle: `idle` (no thread; the next request starts one) → `running` → back to `idle` when
 * the thread dies on its own (a crash: an uncaught error, out of memory), or `closed`. A crash
 * rejects the request in flight with CleanerThreadCrashedError and is counted; the pass fails,
 * its `.cleaned` files are removed and the log is marked uncleanable with the reason, while the
 * node goes on. The thread is unreferenced while idle, so it never keeps a process alive.
 *
 * Where the thread's script is: beside this file, `cleaner-worker.js` in dist/ (and so in the
 * image, which copies each project's dist/). Run from the TypeScript sources (the unit tests
 * resolve workspace packages to their sources with the `spool-source` condition), the thread
 * compiles its `.ts` modules with TypeScript's transpiler as it loads them.
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { assert } from '@spool/common';
import type {
  ChunkRetention,
  CleanerCompute,
  ComputeChunk,
  FilteredChunk,
  PassStart,
} from './cleaner-compute';
import type {
  CleanerThreadAnswer,
  CleanerThreadRequest,
  SharedChunk,
} from './cleaner-thread-messages';

/** The thread died with a request in flight; the pass that sent it is lost. */
export class CleanerThreadCrashedError extends Error {
  override readonly name = 'CleanerThreadCrashedError';
}

/** A request after `close`, or one in flight when it was called. */
export class CleanerThreadClosedError extends Error {
  override readonly name = 'CleanerThreadClosedError';
}

/** An error the work threw in the thread (a corrupt batch), as the pass sees it. */
export class CleanerWorkError extends Error {
  constructor(
    override readonly name: string,
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

type ThreadState = 'idle' | 'running' | 'closed';

interface InFlight {
  readonly resolve: (answer: CleanerThreadAnswer) => void;
  readonly reject: (error: Error) => void;
}

export class CleanerThread implements CleanerCompute {
  private state: ThreadState = 'idle';
  private worker: Worker | undefined;
  private inFlight: InFlight | undefined;
  /** The error the thread reported before it exited, for the crash's reason. */
  private lastError: Error | undefined;
  private crashCount = 0;
  /** The last request's answer, settled either way: the next request goes after it. */
  private previous: Promise<unknown> = Promise.resolve();

  get crashes(): number {
    return this.crashCount;
  }

  async start(): Promise<void> {
    const answer = await this.request({ kind: 'start' });
    assert(answer.kind === 'started', `start answered ${answer.kind}`);
  }

  async beginPass(start: PassStart): Promise<number> {
    const answer = await this.request({ kind: 'beginPass', start });
    assert(answer.kind === 'passBegun', `beginPass answered ${answer.kind}`);
    return answer.keyCountMax;
  }

  async mapChunk(chunk: ComputeChunk, firstDirtyOffset: bigint): Promise<bigint | undefined> {
    const answer = await this.request({
      kind: 'mapChunk',
      chunk: sharedChunkOf(chunk),
      firstDirtyOffset,
    });
    assert(answer.kind === 'mapped', `mapChunk answered ${answer.kind}`);
    return answer.mapFullAtOffset;
  }

  async filterChunk(chunk: ComputeChunk, retention: ChunkRetention): Promise<FilteredChunk> {
    const answer = await this.request({
      kind: 'filterChunk',
      chunk: sharedChunkOf(chunk),
      retention,
    });
    assert(answer.kind === 'filtered', `filterChunk answered ${answer.kind}`);
    return {
      kept: answer.kept === undefined ? chunk.bytes : Buffer.from(answer.kept),
      recordsRemoved: answer.recordsRemoved,
    };
  }

  /** Terminates the thread, after the pass stopped (LogCleaner.close); idempotent. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.transitionTo(['idle', 'running', 'closed'], 'closed');
    this.worker = undefined;
    this.settle(new CleanerThreadClosedError('the log cleaner thread was closed'));
    if (worker !== undefined) await worker.terminate();
  }

  /** Sends `request` once the one before it (start's, beside a first pass) was answered. */
  private request(request: CleanerThreadRequest): Promise<CleanerThreadAnswer> {
    const answer = this.previous.then(() => this.send(request));
    this.previous = answer.catch(() => undefined);
    return answer;
  }

  private async send(request: CleanerThreadRequest): Promise<CleanerThreadAnswer> {
    if (this.state === 'closed') {
      throw new CleanerThreadClosedError('the log cleaner thread was closed');
    }
    assert(this.inFlight === undefined, 'one request in flight at a time');
    const worker = this.worker ?? this.startWorker();
    worker.ref();
    const answer = await new Promise<CleanerThreadAnswer>((resolve, reject) => {
      this.inFlight = { resolve, reject };
      worker.postMessage(request);
    });
    if (answer.kind === 'failed')
      throw new CleanerWorkError(answer.name, answer.message, answer.code);
    return answer;
  }

  private startWorker(): Worker {
    this.transitionTo(['idle'], 'running');
    const worker = newWorker();
    this.worker = worker;
    this.lastError = undefined;
    worker.unref();
    worker.on('message', (answer: CleanerThreadAnswer) => {
      if (this.worker !== worker) return;
      worker.unref();
      const inFlight = this.inFlight;
      this.inFlight = undefined;
      inFlight?.resolve(answer);
    });
    worker.on('messageerror', (error) => {
      // An answer that cannot be read is as lost as the thread: start afresh.
      this.lastError = error;
      void worker.terminate();
    });
    worker.on('error', (error) => {
      this.lastError = error;
    });
    worker.on('exit', (exitCode) => {
      if (this.worker !== worker) return; // closed: close() settled the request
      this.worker = undefined;
      this.crashCount++;
      this.transitionTo(['running'], 'idle');
      const reason = this.lastError?.message ?? `it exited with code ${exitCode}`;
      this.settle(new CleanerThreadCrashedError(`the log cleaner thread crashed: ${reason}`));
    });
    return worker;
  }

  private settle(error: Error): void {
    const inFlight = this.inFlight;
    this.inFlight = undefined;
    inFlight?.reject(error);
  }

  private transitionTo(allowedFrom: readonly ThreadState[], next: ThreadState): void {
    assert(allowedFrom.includes(this.state), `cleaner thread: ${this.state} → ${next}`);
    this.state = next;
  }
}

function sharedChunkOf(chunk: ComputeChunk): SharedChunk {
  const shared = chunk.bytes.buffer;
  assert(shared instanceof SharedArrayBuffer, 'a chunk crosses to the thread in shared memory');
  return {
    shared,
    byteOffset: chunk.bytes.byteOffset,
    length: chunk.bytes.length,
    batches: chunk.batches,
  };
}

/**
 * Loads `.ts` modules by transpiling them (types are not checked: the build and the typecheck
 * do that), and resolves workspace packages to their sources, as the unit tests do.
 */
const fromSourcesBootstrap = `
const fs = require('node:fs');
const ts = require('typescript');
require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  });
  module._compile(outputText, filename);
};
require(require('node:worker_threads').workerData.script);
`;

function newWorker(): Worker {
  // No flags of the process's own: a preload it was started with (`spool dev`'s orphan guard,
  // which stops the process when its stdin ends, as a thread's does at once) is not the thread's.
  if (!__filename.endsWith('.ts')) {
    return new Worker(path.join(__dirname, 'cleaner-worker.js'), { execArgv: [] });
  }
  return new Worker(fromSourcesBootstrap, {
    eval: true,
    workerData: { script: path.join(__dirname, 'cleaner-worker.ts') },
    execArgv: ['--conditions=spool-source'],
  });
}
