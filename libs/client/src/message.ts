import { noTimestamp, type RecordHeader, type RecordInput } from '@spool/protocol';
import { ClientErrorCode, clientError } from './errors';

/**
 * Records as applications write and read them, shaped like KafkaJS's: a message has a key, a
 * value, headers, an optional partition and a timestamp in milliseconds since the epoch; what a
 * consumer receives carries its offset as a bigint (Kafka's offsets are int64).
 */

export type MessageBytes = string | Buffer | Uint8Array | null;

/** KafkaJS's IHeaders: a key with several values becomes several headers, in order. */
export type MessageHeaders = Readonly<
  Record<string, MessageBytes | readonly MessageBytes[] | undefined>
>;

export interface Message {
  readonly key?: MessageBytes;
  readonly value: MessageBytes;
  readonly headers?: MessageHeaders;
  /** The partition to write to; the partitioner chooses if absent. */
  readonly partition?: number;
  /** Milliseconds since the epoch; the time of `send` if absent. */
  readonly timestamp?: bigint | number;
}

export interface ProducerRecord {
  readonly topic: string;
  readonly messages: readonly Message[];
}

/** Where one record landed: offset = the batch's base offset + the record's index in it. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** -1n when acks=0: the gateway did not wait for the write, so there is no offset to tell. */
  readonly offset: bigint;
}

export interface ConsumedMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** Milliseconds since the epoch: the create time, or the log append time if the topic uses it. */
  readonly timestamp: bigint;
  /** Views into the fetched bytes; copy them to keep them past the next fetch of the partition. */
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Every header in order; a key may repeat. */
  readonly headers: readonly RecordHeader[];
}

/**
 * An upper bound of a record's encoded size: every varint at its widest (Kafka's
 * DefaultRecord.MAX_RECORD_OVERHEAD, plus the header varints). Reserving buffer memory and
 * filling batches by it never underestimates.
 */
const recordOverheadBytesMax = 5 + 1 + 10 + 5 + 5 + 5 + 5;
const headerOverheadBytesMax = 5 + 5;

export function recordSizeUpperBoundBytes(record: RecordInput): number {
  let sizeBytes = recordOverheadBytesMax;
  sizeBytes += record.key?.length ?? 0;
  sizeBytes += record.value?.length ?? 0;
  for (const header of record.headers ?? []) {
    sizeBytes +=
      headerOverheadBytesMax + Buffer.byteLength(header.key) + (header.value?.length ?? 0);
  }
  return sizeBytes;
}

function toBytes(value: MessageBytes | undefined, field: string, subject: string): Buffer | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.length);
  throw clientError(
    ClientErrorCode.InvalidRequest,
    `${subject}: ${field} must be a string, Buffer, Uint8Array or null, got ${typeof value}`,
  );
}

function toHeaders(headers: MessageHeaders | undefined, subject: string): RecordHeader[] {
  const result: RecordHeader[] = [];
  if (headers === undefined) return result;
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const values: readonly MessageBytes[] = Array.isArray(value)
      ? (value as readonly MessageBytes[])
      : [value as MessageBytes];
    for (const item of values) result.push({ key, value: toBytes(item, `header ${key}`, subject) });
  }
  return result;
}

function toTimestampMs(timestamp: bigint | number | undefined, subject: string): bigint {
  if (timestamp === undefined) return BigInt(Date.now());
  const value =
    typeof timestamp === 'number' && Number.isSafeInteger(timestamp)
      ? BigInt(timestamp)
      : timestamp;
  if (typeof value !== 'bigint' || value < noTimestamp) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `${subject}: timestamp must be milliseconds since the epoch (an integer), got ${String(timestamp)}`,
    );
  }
  return value;
}

/** A message as the record-batch encoder takes it; `subject` names it in errors. */
export function toRecordInput(message: Message, subject: string): RecordInput {
  if (typeof message !== 'object' || message === null || !('value' in message)) {
    throw clientError(ClientErrorCode.InvalidRequest, `${subject}: a message needs a value field`);
  }
  return {
    key: toBytes(message.key, 'key', subject),
    value: toBytes(message.value, 'value', subject),
    headers: toHeaders(message.headers, subject),
    timestampMs: toTimestampMs(message.timestamp, subject),
  };
}
