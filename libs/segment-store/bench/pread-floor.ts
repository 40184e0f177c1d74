// The floor under a read by offset: the page-cache work of one, without the log. A log read
// reads batch headers at two places about readMaxBytes apart, where its range starts and where
// it ends. This reads one header's worth of bytes at a random position of the same segment
// files, and as much again readMaxBytes further on. How much its latency grows from the small
// log's files to the large log's is what the machine adds by itself (page cache, memory,
// virtualisation) for a larger working set, whatever the log code does.
import * as fs from 'node:fs';
import { recordBatchHeaderSizeBytes } from '@spool/record-batch';
import type { Log, LogReadResult } from './package-under-test';

export interface SegmentFiles {
  readonly fileDescriptors: readonly number[];
  /** Running totals of the files' sizes, to pick a file in proportion to its size. */
  readonly sizeBytesCumulative: readonly number[];
  release(): void;
}

/** The descriptors of a log's segment files, held open through reads until release. */
export function holdSegmentFiles(log: Log): SegmentFiles {
  const held: LogReadResult[] = [];
  const fileDescriptors: number[] = [];
  const sizeBytesCumulative: number[] = [];
  let totalBytes = 0;
  for (const baseOffset of log.segmentBaseOffsets()) {
    if (baseOffset >= log.logEndOffset) continue;
    const result = log.read(baseOffset, 1);
    held.push(result);
    const file = result.slices[0]!.file;
    totalBytes += fs.fstatSync(file.fd).size;
    fileDescriptors.push(file.fd);
    sizeBytesCumulative.push(totalBytes);
  }
  return {
    fileDescriptors,
    sizeBytesCumulative,
    release: () => held.forEach((result) => result.release()),
  };
}

/** `fraction` draws where each sample reads, as a fraction of all the files' bytes, in [0, 1). */
export function sampleFloorReads(
  files: SegmentFiles,
  count: number,
  distanceBytes: number,
  fraction: () => number,
): Float64Array {
  const header = Buffer.alloc(recordBatchHeaderSizeBytes);
  const totalBytes = files.sizeBytesCumulative.at(-1)!;
  const micros = new Float64Array(count);
  for (let index = 0; index < count; index++) {
    const globalPosition = Math.floor(fraction() * totalBytes);
    const fileIndex = files.sizeBytesCumulative.findIndex((end) => globalPosition < end);
    const fileStart = fileIndex === 0 ? 0 : files.sizeBytesCumulative[fileIndex - 1]!;
    const fileSizeBytes = files.sizeBytesCumulative[fileIndex]! - fileStart;
    const fd = files.fileDescriptors[fileIndex]!;
    const position = globalPosition - fileStart;
    // Wrapped inside the file, so that the second read always finds bytes to read.
    const endPosition = (position + distanceBytes) % fileSizeBytes;
    const startedAt = process.hrtime.bigint();
    fs.readSync(fd, header, 0, header.length, position);
    fs.readSync(fd, header, 0, header.length, endPosition);
    micros[index] = Number(process.hrtime.bigint() - startedAt) / 1000;
  }
  return micros;
}
