/**
 * Cutting fetched record bytes at batch boundaries without decoding a record: the gateway reads
 * only each batch's length prefix and, for the last batch it keeps, baseOffset and
 * lastOffsetDelta, to know the next offset to fetch. The bytes it passes on are the leader's,
 * untouched.
 *
 * 1. A span is the longest prefix of whole batches within `limitBytes`.
 * 2. With `keepFirstBatch`, the first batch belongs to the span even when it alone exceeds the
 *    limit (Kafka's KIP-74), so a consumer always makes progress past a large batch.
 * 3. Bytes after the last whole batch (a torn tail, a length that overruns) are left out.
 */
import {
  lastOffsetOf,
  logOverheadSizeBytes,
  recordBatchHeaderSizeBytes,
  recordBatchSizeBytes,
} from '@spool/record-batch';

export interface BatchSpan {
  /** Bytes of whole batches from the start of the records. */
  readonly sizeBytes: number;
  readonly batchCount: number;
  /** lastOffset + 1 of the span's last batch; undefined for an empty span. */
  readonly nextOffset: bigint | undefined;
}

export function batchSpan(
  records: Buffer,
  limitBytes: number,
  options: { keepFirstBatch: boolean },
): BatchSpan {
  let position = 0;
  let batchCount = 0;
  let lastBatchPosition = -1;
  while (records.length - position >= logOverheadSizeBytes) {
    const sizeBytes = recordBatchSizeBytes(records, position);
    // Point 3: a length below a header or past the buffer ends the whole batches.
    if (sizeBytes < recordBatchHeaderSizeBytes || position + sizeBytes > records.length) break;
    const fits = position + sizeBytes <= limitBytes;
    // Point 2: the first batch comes whole even when larger than the limit.
    if (!fits && !(batchCount === 0 && options.keepFirstBatch)) break;
    lastBatchPosition = position;
    position += sizeBytes;
    batchCount++;
  }
  return {
    sizeBytes: position,
    batchCount,
    nextOffset: lastBatchPosition < 0 ? undefined : lastOffsetOf(records, lastBatchPosition) + 1n,
  };
}

/**
 * Trims partitions' records so their sum stays within `maxBytes`, cutting whole batches from the
 * end; the first batch of the first partition with records stays whole (point 2), as a leader
 * does for one fetch. Used where answers of several leaders meet in one response.
 */
export function trimToBytes<Partition extends { readonly records: Buffer }>(
  partitions: readonly Partition[],
  maxBytes: number,
): Partition[] {
  let remainingBytes = maxBytes;
  let firstData = true;
  return partitions.map((partition) => {
    if (partition.records.length === 0) return partition;
    const span = batchSpan(partition.records, Math.max(0, remainingBytes), {
      keepFirstBatch: firstData,
    });
    if (span.sizeBytes > 0) firstData = false;
    remainingBytes -= span.sizeBytes;
    return span.sizeBytes === partition.records.length
      ? partition
      : { ...partition, records: partition.records.subarray(0, span.sizeBytes) };
  });
}
