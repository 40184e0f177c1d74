import type { RecordHeader, RecordInput } from './record';
import { sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from './varint';

/**
 * One record of a batch, in Kafka's DefaultRecord layout:
 *
 *   varint  length          bytes of everything below
 *   int8    attributes      unused, 0
 *   varlong timestampDelta  timestamp - batch baseTimestamp
 *   varint  offsetDelta     offset - batch baseOffset
 *   varint  keyLength       -1 for a null key
 *   bytes   key
 *   varint  valueLength     -1 for a null value
 *   bytes   value
 *   varint  headerCount
 *   per header: varint keyLength, UTF-8 key, varint valueLength (-1 for null), value
 *
 * Sizes are computed first so the encoder can allocate the batch once and write in place.
 */

const noHeaders: readonly RecordHeader[] = [];

export function sizeOfBytesField(bytes: Buffer | null): number {
  return bytes === null ? 1 : sizeOfVarint(bytes.length) + bytes.length;
}

/** The bytes the record's length varint counts. */
export function sizeOfRecordBody(
  record: RecordInput,
  offsetDelta: number,
  timestampDelta: bigint,
): number {
  const headers = record.headers ?? noHeaders;
  let sizeBytes = 1 + sizeOfVarlong(timestampDelta) + sizeOfVarint(offsetDelta);
  sizeBytes += sizeOfBytesField(record.key) + sizeOfBytesField(record.value);
  sizeBytes += sizeOfVarint(headers.length);
  for (const header of headers) {
    const keySizeBytes = Buffer.byteLength(header.key, 'utf8');
    sizeBytes += sizeOfVarint(keySizeBytes) + keySizeBytes + sizeOfBytesField(header.value);
  }
  return sizeBytes;
}

/** The record's bytes on the wire: its length varint and its body. */
export function sizeOfRecord(bodySizeBytes: number): number {
  return sizeOfVarint(bodySizeBytes) + bodySizeBytes;
}

/** A key, value or header value: its length varint (-1 for null), then its bytes. */
export function writeBytesField(buffer: Buffer, position: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(buffer, position, -1);
  const next = writeVarint(buffer, position, bytes.length);
  // TypedArray#set stays in V8's builtins; Buffer#copy crosses into C++ per call, which at
  // 100-byte values cost a third more.
  buffer.set(bytes, next);
  return next + bytes.length;
}

/**
 * Writes the record at `position`, with the body size from sizeOfRecordBody; returns the
 * position after it.
 */
export function writeRecord(
  buffer: Buffer,
  position: number,
  record: RecordInput,
  bodySizeBytes: number,
  offsetDelta: number,
  timestampDelta: bigint,
): number {
  const headers = record.headers ?? noHeaders;
  let next = writeVarint(buffer, position, bodySizeBytes);
  buffer[next++] = 0;
  next = writeVarlong(buffer, next, timestampDelta);
  next = writeVarint(buffer, next, offsetDelta);
  next = writeBytesField(buffer, next, record.key);
  next = writeBytesField(buffer, next, record.value);
  next = writeVarint(buffer, next, headers.length);
  for (const header of headers) {
    const keySizeBytes = Buffer.byteLength(header.key, 'utf8');
    next = writeVarint(buffer, next, keySizeBytes);
    next += buffer.write(header.key, next, keySizeBytes, 'utf8');
    next = writeBytesField(buffer, next, header.value);
  }
  return next;
}
