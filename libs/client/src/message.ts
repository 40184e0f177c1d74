import type { RecordHeader } from '@spool/record-batch';
import { ClientErrorCode, clientError } from './errors';

/**
 * Records as applications write and read them, shaped like KafkaJS's: a message has a key, a
 * value, headers, an optional partition and a timestamp in milliseconds since the epoch; what a
 * consumer receives carries its offset as a bigint (Kafka's offsets are int64).
 */

export type MessageBytes = string | Buffer | Uint8Array | null;

/**
 * A record's headers: KafkaJS's IHeaders object (a key with several values becomes several
 * headers, in order, grouped by key), or a list of headers kept exactly in its order, repeated
 * keys included (as Kafka's Java `Headers` and confluent-kafka's list of tuples).
 */
export type MessageHeaders =
  | Readonly<Record<string, MessageBytes | readonly MessageBytes[] | undefined>>
  | readonly MessageHeader[];

/** One header of a list: the name and its value (null allowed, as in Kafka). */
export interface MessageHeader {
  readonly key: string;
  readonly value: MessageBytes;
}

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

export function recordSizeUpperBoundBytes(
  key: Buffer | null,
  value: Buffer | null,
  headers: readonly RecordHeader[] | undefined,
): number {
  let sizeBytes = recordOverheadBytesMax + (key?.length ?? 0) + (value?.length ?? 0);
  if (headers !== undefined) {
    for (const header of headers) {
      sizeBytes +=
        headerOverheadBytesMax + Buffer.byteLength(header.key) + (header.value?.length ?? 0);
    }
  }
  return sizeBytes;
}

/**
 * Names a message in an error: `topic T message I`. Built only when there is an error, so the
 * per-record path allocates no strings.
 */
export function messageSubject(topic: string, index: number): string {
  return `topic ${topic} message ${index}`;
}

/** A key or value as bytes; a Buffer passes through as it is (no copy). */
export function toBytes(
  value: MessageBytes | undefined,
  field: string,
  topic: string,
  index: number,
): Buffer | null {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.length);
  throw clientError(
    ClientErrorCode.InvalidRequest,
    `${messageSubject(topic, index)}: ${field} must be a string, Buffer, Uint8Array or null, ` +
      `got ${typeof value}`,
  );
}

/** A message's headers as the record's header list, in order; undefined for none. */
export function toHeaders(
  headers: MessageHeaders | undefined,
  topic: string,
  index: number,
): RecordHeader[] | undefined {
  if (headers === undefined) return undefined;
  if (typeof headers !== 'object' || headers === null) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `${messageSubject(topic, index)}: headers must be an object of header names to values, ` +
        'or a list of { key, value }',
    );
  }
  const result: RecordHeader[] = [];
  if (Array.isArray(headers)) {
    for (const [position, header] of (headers as readonly MessageHeader[]).entries()) {
      if (typeof header !== 'object' || header === null || typeof header.key !== 'string') {
        throw clientError(
          ClientErrorCode.InvalidRequest,
          `${messageSubject(topic, index)}: header ${position} must be { key: string, value }`,
        );
      }
      result.push({
        key: header.key,
        value: toBytes(header.value, `header ${header.key}`, topic, index),
      });
    }
    return result.length === 0 ? undefined : result;
  }
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (value === undefined) continue;
    const values: readonly MessageBytes[] = Array.isArray(value)
      ? (value as readonly MessageBytes[])
      : [value as MessageBytes];
    for (const item of values) {
      result.push({ key, value: toBytes(item, `header ${key}`, topic, index) });
    }
  }
  return result.length === 0 ? undefined : result;
}

/** Timestamps are numbers on the append path; below 2^52 ms (the year 142,000) they are exact. */
const timestampMsMax = 2 ** 52 - 1;

/** A message's timestamp as milliseconds since the epoch (a number), or `nowMs` if it has none. */
export function toTimestampMs(
  timestamp: bigint | number | undefined,
  nowMs: number,
  topic: string,
  index: number,
): number {
  if (timestamp === undefined) return nowMs;
  const value = typeof timestamp === 'bigint' ? Number(timestamp) : timestamp;
  if (
    (typeof timestamp !== 'bigint' && typeof timestamp !== 'number') ||
    !Number.isSafeInteger(value) ||
    value < -1 ||
    value > timestampMsMax ||
    (typeof timestamp === 'bigint' && BigInt(value) !== timestamp)
  ) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `${messageSubject(topic, index)}: timestamp must be milliseconds since the epoch (an ` +
        `integer from -1 to ${timestampMsMax}), got ${String(timestamp)}`,
    );
  }
  return value;
}
