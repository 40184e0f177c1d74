// A slice is what a read of the log returns: a byte range of an open segment file, not the
// bytes themselves, so the fetch path can hand it to sendfile(2) and the bytes never enter
// JavaScript (Kafka's FileRecords.slice). A slice does not own its file: whoever opened the
// file keeps it open until every transfer of a slice of it has settled.
import fs from 'node:fs';
import { FileTruncatedError, SegmentStoreError } from './errors';

/** An open, readable segment file: the descriptor to read and the path to name in errors. */
export interface SegmentFileHandle {
  readonly fd: number;
  readonly path: string;
}

/** `sizeBytes` bytes of `file`, starting at byte `position`. */
export interface FileSlice {
  readonly file: SegmentFileHandle;
  readonly position: number;
  readonly sizeBytes: number;
  /**
   * The slice lies in the log's recent tail, so its pages are in the page cache (they were just
   * written): the sendfile path may move it on the event loop instead of the libuv pool.
   */
  readonly hot?: boolean;
}

/**
 * Throws FileTruncatedError when the file no longer reaches the end of the slice. The log may be
 * truncated (a follower's `truncateTo`, recovery's `trimToValidSize`) between the read that made
 * the slice and its transfer, so every transfer checks right before its first byte.
 */
export async function ensureSliceWithinFile(slice: FileSlice): Promise<void> {
  let fileSizeBytes: number;
  try {
    // fstat of an open descriptor reads the inode in memory; on the libuv pool it cost a thread
    // hand-off per transfer, an eighth of a busy leader's time on a 2-core machine (issue 11).
    fileSizeBytes = fs.fstatSync(slice.file.fd).size;
  } catch (error) {
    throw new SegmentStoreError(
      'KAFKA_STORAGE_ERROR',
      `Cannot stat segment file ${slice.file.path} (fd ${slice.file.fd}) before a transfer`,
      { cause: error, filePath: slice.file.path },
    );
  }
  if (fileSizeBytes < slice.position + slice.sizeBytes) {
    throw new FileTruncatedError(slice.file.path, slice, fileSizeBytes);
  }
}

/**
 * The error for a transfer that hit the end of the file at `position`, inside the slice. Almost
 * always the file was truncated during the transfer; if it has grown back past the slice end
 * since, the bytes can no longer be trusted to be the ones the slice was read from.
 */
export async function sliceEndedEarlyError(
  slice: FileSlice,
  position: number,
): Promise<SegmentStoreError> {
  try {
    await ensureSliceWithinFile(slice);
  } catch (error) {
    if (error instanceof SegmentStoreError) return error;
    throw error;
  }
  return new SegmentStoreError(
    'KAFKA_STORAGE_ERROR',
    `Segment file ${slice.file.path} ended at position ${position}, inside the slice at ` +
      `position ${slice.position} of ${slice.sizeBytes} bytes, but is long enough again`,
    { filePath: slice.file.path },
  );
}
