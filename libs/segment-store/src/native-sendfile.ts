// Types the sendfile(2) part of the native addon (native/sendfile.c; its header explains the
// design) and checks that the loaded addon has it. A missing or broken addon is not an error: the
// caller falls back to the copy path and reports why, once.
import { loadNativeAddon } from './native-addon';

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
  /**
   * The same move on this thread, without waiting: the bytes the socket takes now (0 when it is
   * full or the file ended). Only for bytes in the page cache (native/sendfile.c says why).
   * Absent from an addon built before it; the caller then uses sendfileChunk alone.
   */
  sendfileNow?(socketFd: number, fileFd: number, position: number, count: number): number;
  /**
   * Sends `bytes` (a response header) on this thread with MSG_MORE: the kernel holds them until
   * the sendfile that follows, and sends both in one segment. Returns the bytes the socket took
   * (0 when it is full). Absent from an addon built before it; the header then goes through
   * Node's queue.
   */
  sendMoreNow?(socketFd: number, bytes: Buffer): number;
}

export type SendfileBindingLoad =
  | { readonly binding: SendfileBinding; readonly addonPath: string }
  | { readonly binding: undefined; readonly reason: string };

export function loadSendfileBinding(): SendfileBindingLoad {
  const load = loadNativeAddon();
  if (load.addon === undefined) return { binding: undefined, reason: load.reason };
  if (!isSendfileBinding(load.addon)) {
    return { binding: undefined, reason: `the addon at ${load.addonPath} has no sendfileChunk` };
  }
  return { binding: load.addon, addonPath: load.addonPath };
}

function isSendfileBinding(loaded: object): loaded is SendfileBinding {
  return typeof (loaded as { sendfileChunk?: unknown }).sendfileChunk === 'function';
}
