// @spool/segment-store/testing: helpers for tests of the segment store and of what uses it,
// temporary log folders and record batches to append. Not reachable from src/index.ts, and left
// out of the runtime image (deploy/image/assemble.mjs).
import { mkdtempSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import type { FileSlice } from '../file-slice';

export function temporaryDirectory(prefix = 'spool-log-'): { directory: string; remove(): void } {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) };
}

/**
 * A producer's batch of `count` records whose values are `${label}-${index}`; keyless, or keyed
 * by the same text when `keyed` (what a compacted topic requires).
 */
export function batchOf(
  count: number,
  options: { label?: string; timestampMs?: number; valueSizeBytes?: number; keyed?: boolean } = {},
): Buffer {
  const label = options.label ?? 'record';
  const timestampMs = BigInt(options.timestampMs ?? 1_700_000_000_000);
  return encodeRecordBatch({
    baseOffset: 0n,
    records: Array.from({ length: count }, (_, index) => {
      const text = `${label}-${index}`;
      const value =
        options.valueSizeBytes === undefined
          ? Buffer.from(text)
          : Buffer.concat([
              Buffer.from(text),
              Buffer.alloc(Math.max(0, options.valueSizeBytes - text.length), 120),
            ]);
      const key = options.keyed === true ? Buffer.from(text) : null;
      return { key, value, timestampMs: timestampMs + BigInt(index) };
    }),
  });
}

/** The bytes a list of slices points at, read through their descriptors (as sendfile would). */
export function bytesOf(slices: readonly FileSlice[]): Buffer {
  return Buffer.concat(
    slices.map((slice) => {
      const bytes = Buffer.alloc(slice.sizeBytes);
      readSync(slice.file.fd, bytes, 0, slice.sizeBytes, slice.position);
      return bytes;
    }),
  );
}

/** Offsets and values of every record in the slices. */
export function recordsOf(slices: readonly FileSlice[]): Array<{ offset: bigint; value: string }> {
  return decodeRecordBatches(bytesOf(slices)).flatMap((batch) =>
    batch.records.map((record) => ({
      offset: record.offset,
      value: record.value?.toString() ?? '',
    })),
  );
}

/** The crash test's hook into the cleaner's swap (cleaner/segment-swap.ts): where it may stop. */
export { swapCrashStepEnvironmentVariable, swapCrashSteps } from '../cleaner/segment-swap';
