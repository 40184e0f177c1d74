// Reads a slice's bytes into memory, synchronously: the inline copy of small slices (a tail
// fetch moves a few KiB; see file-records.ts). The log's read took the slice a moment ago and read
// the batch headers at its start synchronously too, so these are pages in the page cache.
//
// On disk: nothing of its own; it only reads a byte range of a `.log` segment file. A file that
// was truncated since the slice was taken reads short, and that is reported as FILE_TRUNCATED
// before anything was written anywhere.
import fs from 'node:fs';
import { FileTruncatedError, SegmentStoreError } from './errors';
import type { FileSlice } from './file-slice';

/** Copies the bytes of `slice` into `target` at `targetOffset`; FILE_TRUNCATED if short. */
export function readSliceInto(slice: FileSlice, target: Buffer, targetOffset: number): void {
  if (targetOffset < 0 || targetOffset + slice.sizeBytes > target.length) {
    throw new RangeError(
      `a slice of ${slice.sizeBytes} bytes does not fit a ${target.length}-byte buffer ` +
        `at ${targetOffset}`,
    );
  }
  let bytesRead = 0;
  while (bytesRead < slice.sizeBytes) {
    let read: number;
    try {
      read = fs.readSync(
        slice.file.fd,
        target,
        targetOffset + bytesRead,
        slice.sizeBytes - bytesRead,
        slice.position + bytesRead,
      );
    } catch (error) {
      throw new SegmentStoreError(
        'KAFKA_STORAGE_ERROR',
        `Read of ${slice.sizeBytes} bytes at position ${slice.position} of segment file ` +
          `${slice.file.path} failed`,
        { cause: error, filePath: slice.file.path },
      );
    }
    if (read === 0) throw shortReadError(slice, slice.position + bytesRead);
    bytesRead += read;
  }
}

function shortReadError(slice: FileSlice, position: number): SegmentStoreError {
  let fileSizeBytes: number;
  try {
    fileSizeBytes = fs.fstatSync(slice.file.fd).size;
  } catch (error) {
    return new SegmentStoreError(
      'KAFKA_STORAGE_ERROR',
      `Cannot stat segment file ${slice.file.path} (fd ${slice.file.fd}) after a short read`,
      { cause: error, filePath: slice.file.path },
    );
  }
  if (fileSizeBytes < slice.position + slice.sizeBytes) {
    return new FileTruncatedError(slice.file.path, slice, fileSizeBytes);
  }
  return new SegmentStoreError(
    'KAFKA_STORAGE_ERROR',
    `Segment file ${slice.file.path} ended at position ${position}, inside the slice at ` +
      `position ${slice.position} of ${slice.sizeBytes} bytes, but is long enough again`,
    { filePath: slice.file.path },
  );
}
