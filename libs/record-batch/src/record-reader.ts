import { RecordBatchError, RecordBatchErrorCode } from './errors';
import { compressionCodecFor } from './compression-codec';
import type { DecodedRecord, RecordHeader } from './record';
import type { RecordBatchHeader } from './record-batch-header';
import { incrementSequence } from './record-batch-header';
import { CompressionType, noSequence, TimestampType } from './record-batch-layout';
import type { ReadCursor } from './varint';
import { readVarint, readVarlong, readVarlongAsNumber, skipVarlong } from './varint';

/**
 * Walks the records section of one batch (layout in record-writer.ts), either materialising
 * each record (`read`) or only checking its structure (`skip`, which allocates nothing). The
 * checks are Kafka's DefaultRecord.readFrom checks, made strict:
 *
 * 1. A record's length is not negative and fits in what is left of the section.
 * 2. No field reads past the record's own end, and the fields use up exactly its length.
 * 3. Key, value and header value lengths are -1 (null) or a byte count; header keys are not null.
 * 4. The header count is not negative and not larger than the bytes left.
 * 5. Offset deltas increase from record to record and do not pass the batch's lastOffsetDelta.
 *
 * After the batch's recordCount records, `finish` checks that no bytes are left over.
 */

/** The most bytes a compressed records section may inflate to: a bound on a zip bomb. */
export const uncompressedRecordsBytesMaxDefault = 64 * 1024 * 1024;

/**
 * One record's fields as `readInto` fills them: one object for every record of a batch, so a
 * consumer that builds its own record objects allocates nothing more per record than those and
 * the offset (timestamps repeat within a batch and are shared; so is an empty header list).
 */
export interface RecordFields {
  offset: bigint;
  timestampMs: bigint;
  key: Buffer | null;
  value: Buffer | null;
  /** A shared, frozen empty list for a record without headers. */
  headers: readonly RecordHeader[];
  /** The record's offset relative to the batch's base offset. */
  offsetDelta: number;
}

/** Offset deltas as bigints, made once: a record's offset then costs one bigint, not two. */
const offsetDeltaBigints: bigint[] = [];
const offsetDeltaBigintsMax = 1 << 16;

function offsetDeltaBigint(offsetDelta: number): bigint {
  if (offsetDelta >= offsetDeltaBigintsMax) return BigInt(offsetDelta);
  return (offsetDeltaBigints[offsetDelta] ??= BigInt(offsetDelta));
}

const noHeaders: readonly RecordHeader[] = Object.freeze([]);

/**
 * The varint at `position`, if it takes at most three bytes before `end`: its zigzag value times
 * four plus its length in bytes (one number, so the caller allocates nothing); -1 otherwise.
 */
function shortVarint(buffer: Buffer, position: number, end: number): number {
  if (position >= end) return -1;
  const first = buffer[position]!;
  if (first < 0x80) return first * 4 + 1;
  if (position + 1 >= end) return -1;
  const second = buffer[position + 1]!;
  if (second < 0x80) return ((first & 0x7f) | (second << 7)) * 4 + 2;
  if (position + 2 >= end) return -1;
  const third = buffer[position + 2]!;
  if (third >= 0x80) return -1;
  return ((first & 0x7f) | ((second & 0x7f) << 7) | (third << 14)) * 4 + 3;
}

function unzigzag(zigzag: number): number {
  return (zigzag >>> 1) ^ -(zigzag & 1);
}

/** Errors that already name their batch and record, so `withContext` leaves them alone. */
const errorsWithContext = new WeakSet<RecordBatchError>();

export class RecordReader {
  private readonly cursor: ReadCursor;
  private readonly sectionEnd: number;
  private readonly header: RecordBatchHeader;
  private readonly baseOffset: bigint;
  private readonly baseTimestampMs: bigint;
  private readonly logAppendTimeMs: bigint | null;
  private readonly baseSequence: number;
  private readonly lastOffsetDelta: number;
  private previousOffsetDelta = -1;
  private recordIndex = 0;
  /** The last timestamp delta read, and its timestamp: records of a batch often share one. */
  private previousTimestampDeltaMs = Number.NaN;
  private previousTimestampMs = 0n;

  /** Reads `records[start, end)`, the (uncompressed) records section of `header`'s batch. */
  constructor(header: RecordBatchHeader, records: Buffer, start: number, end: number) {
    this.cursor = { buffer: records, position: start, limit: end };
    this.sectionEnd = end;
    this.header = header;
    this.baseOffset = header.baseOffset;
    this.baseTimestampMs = header.baseTimestampMs;
    this.logAppendTimeMs =
      header.timestampType === TimestampType.LogAppendTime ? header.maxTimestampMs : null;
    this.baseSequence = header.baseSequence;
    this.lastOffsetDelta = header.lastOffsetDelta;
  }

  /** Checks the next record's structure without building it. */
  skip(): void {
    try {
      const recordEnd = this.beginRecord();
      skipVarlong(this.cursor);
      this.readOffsetDelta();
      this.skipBytesField('key');
      this.skipBytesField('value');
      const headerCount = this.readHeaderCount();
      for (let index = 0; index < headerCount; index++) {
        this.skipBytesField('header key', false);
        this.skipBytesField('header value');
      }
      this.endRecord(recordEnd);
    } catch (error) {
      throw this.withContext(error);
    }
  }

  read(): DecodedRecord {
    const fields = this.readInto(scratchFields);
    const offsetDelta = fields.offsetDelta;
    return {
      offset: fields.offset,
      timestampMs: fields.timestampMs,
      key: fields.key,
      value: fields.value,
      headers: fields.headers === noHeaders ? [] : (fields.headers as RecordHeader[]),
      sequence:
        this.baseSequence < 0 ? noSequence : incrementSequence(this.baseSequence, offsetDelta),
    };
  }

  /** Reads the next record into `into` (reused from record to record) and returns it. */
  readInto(into: RecordFields): RecordFields {
    if (this.readShortRecordInto(into)) return into;
    try {
      const recordEnd = this.beginRecord();
      const timestampMs = this.readTimestamp();
      const offsetDelta = this.readOffsetDelta();
      into.key = this.readBytesField('key');
      into.value = this.readBytesField('value');
      const headerCount = this.readHeaderCount();
      let headers = noHeaders;
      if (headerCount > 0) {
        const read: RecordHeader[] = [];
        for (let index = 0; index < headerCount; index++) {
          const keySizeBytes = this.skipBytesField('header key', false);
          const keyEnd = this.cursor.position;
          const headerKey = this.cursor.buffer.toString('utf8', keyEnd - keySizeBytes, keyEnd);
          read.push({ key: headerKey, value: this.readBytesField('header value') });
        }
        headers = read;
      }
      this.endRecord(recordEnd);
      into.offset = this.baseOffset + offsetDeltaBigint(offsetDelta);
      into.timestampMs = timestampMs;
      into.headers = headers;
      into.offsetDelta = offsetDelta;
      return into;
    } catch (error) {
      throw this.withContext(error);
    }
  }

  /**
   * readInto's fast path, for the common record: every varint in at most three bytes and no
   * headers. It makes the same checks (points 1, 2, 3 and 5 above) on local variables, without
   * the cursor, and gives up, having changed nothing, on anything else, valid or not: the
   * general path then reads the record or names what is wrong with it.
   */
  private readShortRecordInto(into: RecordFields): boolean {
    const buffer = this.cursor.buffer;
    const sectionEnd = this.sectionEnd;
    let position = this.cursor.position;
    let packed = shortVarint(buffer, position, sectionEnd);
    if (packed < 0) return false;
    position += packed & 3;
    const bodySizeBytes = unzigzag(packed >>> 2);
    const recordEnd = position + bodySizeBytes;
    if (bodySizeBytes < 1 || recordEnd > sectionEnd) return false;
    position += 1; // The attributes byte, unused.
    packed = shortVarint(buffer, position, recordEnd);
    if (packed < 0) return false;
    position += packed & 3;
    const timestampDeltaMs = unzigzag(packed >>> 2);
    packed = shortVarint(buffer, position, recordEnd);
    if (packed < 0) return false;
    position += packed & 3;
    const offsetDelta = unzigzag(packed >>> 2);
    if (offsetDelta <= this.previousOffsetDelta || offsetDelta > this.lastOffsetDelta) return false;
    packed = shortVarint(buffer, position, recordEnd);
    if (packed < 0) return false;
    position += packed & 3;
    const keySizeBytes = unzigzag(packed >>> 2);
    const keyStart = position;
    if (keySizeBytes > 0) position += keySizeBytes;
    if (keySizeBytes < -1 || position > recordEnd) return false;
    packed = shortVarint(buffer, position, recordEnd);
    if (packed < 0) return false;
    position += packed & 3;
    const valueSizeBytes = unzigzag(packed >>> 2);
    const valueStart = position;
    if (valueSizeBytes > 0) position += valueSizeBytes;
    if (valueSizeBytes < -1 || position > recordEnd) return false;
    // The header count: no headers, and nothing after them.
    if (position + 1 !== recordEnd || buffer[position] !== 0) return false;
    this.cursor.position = recordEnd;
    this.previousOffsetDelta = offsetDelta;
    this.recordIndex += 1;
    into.key = keySizeBytes < 0 ? null : buffer.subarray(keyStart, keyStart + keySizeBytes);
    into.value =
      valueSizeBytes < 0 ? null : buffer.subarray(valueStart, valueStart + valueSizeBytes);
    into.offset = this.baseOffset + offsetDeltaBigint(offsetDelta);
    into.timestampMs = this.timestampOf(timestampDeltaMs);
    into.headers = noHeaders;
    into.offsetDelta = offsetDelta;
    return true;
  }

  /** The record's timestamp: its own, or the batch's log append time if the batch has that. */
  private readTimestamp(): bigint {
    const timestampDeltaMs = readVarlongAsNumber(this.cursor);
    if (!Number.isNaN(timestampDeltaMs)) return this.timestampOf(timestampDeltaMs);
    const wide = readVarlong(this.cursor);
    return this.logAppendTimeMs ?? this.baseTimestampMs + wide;
  }

  /** The timestamp of a record with this delta; a delta repeated from the last record shares. */
  private timestampOf(timestampDeltaMs: number): bigint {
    if (timestampDeltaMs === this.previousTimestampDeltaMs) return this.previousTimestampMs;
    const timestampMs = this.logAppendTimeMs ?? this.baseTimestampMs + BigInt(timestampDeltaMs);
    this.previousTimestampDeltaMs = timestampDeltaMs;
    this.previousTimestampMs = timestampMs;
    return timestampMs;
  }

  /** Checks that the records read so far used up the whole section. */
  finish(): void {
    const remainingBytes = this.sectionEnd - this.cursor.position;
    if (remainingBytes !== 0) {
      throw new RecordBatchError(
        RecordBatchErrorCode.InvalidRecord,
        `record batch at position ${this.header.position}: ${remainingBytes} bytes remain ` +
          `after the ${this.recordIndex} records its recordCount declares`,
      );
    }
  }

  private beginRecord(): number {
    const bodySizeBytes = readVarint(this.cursor);
    const bodyStart = this.cursor.position;
    const remainingBytes = this.sectionEnd - bodyStart;
    if (bodySizeBytes < 0 || bodySizeBytes > remainingBytes) {
      throw this.invalid(
        `length ${bodySizeBytes} at byte position ${bodyStart} does not fit the ` +
          `${remainingBytes} bytes left in the records section`,
      );
    }
    const recordEnd = bodyStart + bodySizeBytes;
    this.cursor.limit = recordEnd;
    if (bodyStart >= recordEnd) throw this.invalid('has no attributes byte');
    // The record attributes byte is unused by every Kafka version; like Kafka, ignore it.
    this.cursor.position = bodyStart + 1;
    return recordEnd;
  }

  private endRecord(recordEnd: number): void {
    if (this.cursor.position !== recordEnd) {
      throw this.invalid(
        `fields end at byte position ${this.cursor.position}, but its length says ${recordEnd}`,
      );
    }
    this.cursor.limit = this.sectionEnd;
    this.recordIndex += 1;
  }

  private readOffsetDelta(): number {
    const offsetDelta = readVarint(this.cursor);
    if (offsetDelta <= this.previousOffsetDelta || offsetDelta > this.lastOffsetDelta) {
      throw this.invalid(
        `offsetDelta ${offsetDelta} does not follow ${this.previousOffsetDelta} within the ` +
          `batch's lastOffsetDelta ${this.lastOffsetDelta}`,
      );
    }
    this.previousOffsetDelta = offsetDelta;
    return offsetDelta;
  }

  /**
   * Steps over a length-prefixed field and returns its length, -1 for null; its bytes end where
   * the cursor now is.
   */
  private skipBytesField(field: string, nullable = true): number {
    const lengthPosition = this.cursor.position;
    const sizeBytes = readVarint(this.cursor);
    if (sizeBytes === -1 && nullable) return sizeBytes;
    const start = this.cursor.position;
    const remainingBytes = this.cursor.limit - start;
    if (sizeBytes < 0 || sizeBytes > remainingBytes) {
      throw this.invalid(
        `${field} length ${sizeBytes} at byte position ${lengthPosition} does not fit the ` +
          `${remainingBytes} bytes left in the record`,
      );
    }
    this.cursor.position = start + sizeBytes;
    return sizeBytes;
  }

  private readBytesField(field: string): Buffer | null {
    const sizeBytes = this.skipBytesField(field);
    if (sizeBytes === -1) return null;
    const end = this.cursor.position;
    return this.cursor.buffer.subarray(end - sizeBytes, end);
  }

  private readHeaderCount(): number {
    const headerCount = readVarint(this.cursor);
    const remainingBytes = this.cursor.limit - this.cursor.position;
    if (headerCount < 0 || headerCount > remainingBytes) {
      throw this.invalid(
        `header count ${headerCount} is negative or larger than the ${remainingBytes} bytes left`,
      );
    }
    return headerCount;
  }

  private describe(): string {
    return `record batch at position ${this.header.position}: record ${this.recordIndex}`;
  }

  private invalid(problem: string): RecordBatchError {
    const error = new RecordBatchError(
      RecordBatchErrorCode.InvalidRecord,
      `${this.describe()} ${problem}`,
    );
    errorsWithContext.add(error);
    return error;
  }

  /** Names the batch and record in errors from the varint readers, which know neither. */
  private withContext(error: unknown): unknown {
    if (!(error instanceof RecordBatchError) || errorsWithContext.has(error)) return error;
    return new RecordBatchError(error.code, `${this.describe()}: ${error.message}`, {
      cause: error,
    });
  }
}

/** `read`'s scratch: it copies the fields out before anything else can read into it. */
const scratchFields: RecordFields = {
  offset: 0n,
  timestampMs: 0n,
  key: null,
  value: null,
  headers: noHeaders,
  offsetDelta: 0,
};

/**
 * A reader over the records of a framed batch, inflating them first if the batch is
 * compressed. Needs a codec for a compressed batch (UNSUPPORTED_COMPRESSION_TYPE otherwise).
 */
export function openRecordReader(
  header: RecordBatchHeader,
  uncompressedBytesMax: number = uncompressedRecordsBytesMaxDefault,
): RecordReader {
  const start = header.recordsPosition;
  const end = header.position + header.sizeBytes;
  const compressionType = header.compressionType;
  if (compressionType === CompressionType.None) {
    return new RecordReader(header, header.buffer, start, end);
  }
  const codec = compressionCodecFor(compressionType);
  // An empty batch kept by log compaction has no records section to inflate.
  if (start === end && header.recordCount === 0) {
    return new RecordReader(header, header.buffer, start, end);
  }
  let records: Buffer;
  try {
    records = codec.decompress(header.buffer.subarray(start, end), uncompressedBytesMax);
  } catch (error) {
    if (error instanceof RecordBatchError) throw error;
    throw new RecordBatchError(
      RecordBatchErrorCode.InvalidRecord,
      `record batch at position ${header.position}: the records section does not ` +
        `decompress with ${codec.name}`,
      { cause: error },
    );
  }
  if (records.length > uncompressedBytesMax) {
    throw new RecordBatchError(
      RecordBatchErrorCode.MessageTooLarge,
      `record batch at position ${header.position}: the records section inflates to ` +
        `${records.length} bytes, more than the ${uncompressedBytesMax} allowed`,
    );
  }
  return new RecordReader(header, records, 0, records.length);
}
