/**
 * One record as applications see it, going into a batch and coming out of one. Keys, values and
 * header values are bytes or null (null and empty are different on the wire: length -1 vs 0).
 */

export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

export interface RecordInput {
  key: Buffer | null;
  value: Buffer | null;
  headers?: readonly RecordHeader[];
  /** Milliseconds since the epoch, or -1n (Kafka's NO_TIMESTAMP). */
  timestampMs: bigint;
  /**
   * The record's offset relative to the batch's baseOffset. Producers leave it out (it is then
   * the record's index); log compaction writes batches with gaps.
   */
  offsetDelta?: number;
}

export interface DecodedRecord {
  offset: bigint;
  /** The record's own timestamp, or the batch's log append time if the batch has that type. */
  timestampMs: bigint;
  /** A view into the decoded bytes, not a copy: it changes if those bytes are reused. */
  key: Buffer | null;
  /** A view into the decoded bytes, not a copy: it changes if those bytes are reused. */
  value: Buffer | null;
  headers: RecordHeader[];
  /** The producer sequence number of this record, or -1 if the batch is not idempotent. */
  sequence: number;
}
