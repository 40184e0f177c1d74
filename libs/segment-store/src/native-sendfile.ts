// Loads the sendfile(2) addon built from native/sendfile.c (its header explains the design) and
// gives it a type. A missing or broken addon is not an error: the caller falls back to the copy
// path and reports why, once.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface SendfileChunkResult {
  /** Bytes moved to the socket by this call; 0 when the socket stayed full for the whole wait. */
  readonly bytesWritten: number;
  /** The file ended before `count` bytes: it is shorter than the caller believed. */
  readonly endOfFile: boolean;
}

export interface SendfileBinding {
  /**
   * Moves up to `count` bytes of `fileFd` from `position` to `socketFd` on the libuv pool,
   * waiting at most `writableWaitMsMax` in total for a full socket to drain. Rejects with an
   * Error whose `code` is the errno name (`EPIPE`) and whose `syscall` names the failed call.
   */
  sendfileChunk(
    socketFd: number,
    fileFd: number,
    position: number,
    count: number,
    writableWaitMsMax: number,
  ): Promise<SendfileChunkResult>;
}

export type SendfileBindingLoad =
  | { readonly binding: SendfileBinding; readonly addonPath: string }
  | { readonly binding: undefined; readonly reason: string };

/** node-gyp's output, under the package root: one level above both src/ and dist/. */
const addonPath = path.join(__dirname, '..', 'build', 'Release', 'segment_store_sendfile.node');

export function loadSendfileBinding(): SendfileBindingLoad {
  if (process.platform !== 'linux') {
    return { binding: undefined, reason: `the addon is Linux-only, this is ${process.platform}` };
  }
  if (!fs.existsSync(addonPath)) {
    return {
      binding: undefined,
      reason: `no addon at ${addonPath} (build it: npm run build:native -w @spool/segment-store)`,
    };
  }
  let loaded: unknown;
  try {
    loaded = createRequire(__filename)(addonPath);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { binding: undefined, reason: `the addon at ${addonPath} failed to load: ${message}` };
  }
  if (!isSendfileBinding(loaded)) {
    return { binding: undefined, reason: `the addon at ${addonPath} has no sendfileChunk` };
  }
  return { binding: loaded, addonPath };
}

function isSendfileBinding(loaded: unknown): loaded is SendfileBinding {
  return (
    typeof loaded === 'object' &&
    loaded !== null &&
    typeof (loaded as { sendfileChunk?: unknown }).sendfileChunk === 'function'
  );
}
