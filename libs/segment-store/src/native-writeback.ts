// Types the write-out part of the native addon (native/writeback.c explains why it exists). A
// missing addon, or one built before this part, is not an error: the log then makes its recent
// writes durable with a flush instead (log.ts, writebackIntervalBytes).
import { loadNativeAddon } from './native-addon';

export interface WritebackBinding {
  /**
   * Starts the kernel's write-out of `count` bytes of `fileFd` from `position` (sync_file_range
   * with SYNC_FILE_RANGE_WRITE) on the libuv pool; resolves once started, not once on disk.
   */
  startWriteback(fileFd: number, position: number, count: number): Promise<void>;
}

export function loadWritebackBinding(): WritebackBinding | undefined {
  const load = loadNativeAddon();
  if (load.addon === undefined) return undefined;
  const candidate = load.addon as { startWriteback?: unknown };
  return typeof candidate.startWriteback === 'function'
    ? (load.addon as WritebackBinding)
    : undefined;
}
