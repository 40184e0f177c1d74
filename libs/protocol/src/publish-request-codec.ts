/**
 * A hand-written decoder for the record-level API's PublishRequest and PublishStreamRequest
 * (proto/spool/v1/record.proto), as partition-batches-codec.ts has for the raw produce path:
 *
 *   PublishRequest        { 1: string topic; 2: repeated PublishRecord records; 3: Acks acks;
 *                           4: string idempotency_key; 5: int32 timeout_ms }
 *   PublishRecord         { 1: optional bytes key; 2: optional bytes value;
 *                           3: repeated RecordHeader headers; 4: optional int32 partition;
 *                           5: optional int64 timestamp_ms }
 *   RecordHeader          { 1: string key; 2: optional bytes value }
 *   PublishStreamRequest  { 1: uint64 sequence; 2: PublishRequest request }
 *
 * Why not the generated ts-proto decoder: it copies every key, value and header value into a
 * fresh Buffer; at 1 KiB records those copies were a large share of the gateway's cost per GB.
 * Here they are views into the received message (grpc-js hands each message its own buffer, and
 * the gateway's producer copies a record into its batch when it takes it). Unknown fields are
 * skipped, as the generated decoder does; the spec checks it against the generated code.
 */
import type { Acks } from './generated/spool/v1/common';
import {
  RecordServiceService as GeneratedRecordServiceService,
  type PublishRecord,
  type PublishRequest,
  type PublishStreamRequest,
  type RecordHeader,
} from './generated/spool/v1/record';
import { WireReader, wireLengthDelimited, wireVarint } from './protobuf-wire';

export function decodePublishRequest(
  buffer: Buffer,
  start = 0,
  end = buffer.length,
): PublishRequest {
  const reader = new WireReader(buffer, start, end);
  const request: PublishRequest = {
    topic: '',
    records: [],
    acks: 0 as Acks,
    idempotencyKey: '',
    timeoutMs: 0,
  };
  while (reader.position < end) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      request.topic = buffer.toString('utf8', field.start, field.end);
    } else if (tag === ((2 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      request.records.push(decodePublishRecord(buffer, field.start, field.end));
    } else if (tag === ((3 << 3) | wireVarint)) {
      request.acks = (reader.varint32() | 0) as Acks;
    } else if (tag === ((4 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      request.idempotencyKey = buffer.toString('utf8', field.start, field.end);
    } else if (tag === ((5 << 3) | wireVarint)) {
      request.timeoutMs = reader.varint32() | 0;
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return request;
}

export function decodePublishStreamRequest(buffer: Buffer): PublishStreamRequest {
  const reader = new WireReader(buffer, 0, buffer.length);
  const message: PublishStreamRequest = { sequence: 0n, request: undefined };
  while (reader.position < buffer.length) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireVarint)) {
      message.sequence = BigInt.asUintN(64, readVarint64(reader));
    } else if (tag === ((2 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      message.request = decodePublishRequest(buffer, field.start, field.end);
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return message;
}

function decodePublishRecord(buffer: Buffer, start: number, end: number): PublishRecord {
  const reader = new WireReader(buffer, start, end);
  const record: PublishRecord = {
    key: undefined,
    value: undefined,
    headers: [],
    partition: undefined,
    timestampMs: undefined,
  };
  while (reader.position < end) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      record.key = buffer.subarray(field.start, field.end);
    } else if (tag === ((2 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      record.value = buffer.subarray(field.start, field.end);
    } else if (tag === ((3 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      record.headers.push(decodeHeader(buffer, field.start, field.end));
    } else if (tag === ((4 << 3) | wireVarint)) {
      record.partition = reader.varint32() | 0;
    } else if (tag === ((5 << 3) | wireVarint)) {
      record.timestampMs = BigInt.asIntN(64, readVarint64(reader));
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return record;
}

function decodeHeader(buffer: Buffer, start: number, end: number): RecordHeader {
  const reader = new WireReader(buffer, start, end);
  const header: RecordHeader = { key: '', value: undefined };
  while (reader.position < end) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      header.key = buffer.toString('utf8', field.start, field.end);
    } else if (tag === ((2 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      header.value = buffer.subarray(field.start, field.end);
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return header;
}

/** A varint of up to 64 bits, unsigned; the caller reads it as int64 or uint64. */
function readVarint64(reader: WireReader): bigint {
  let value = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (reader.position >= reader.end) throw new RangeError('premature EOF in a varint');
    const byte = reader.buffer[reader.position++]!;
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return BigInt.asUintN(64, value);
  }
  throw new Error('invalid varint: longer than 10 bytes');
}

/** The service as generated, except that Publish and PublishStream requests decode as above. */
export const RecordServiceService: typeof GeneratedRecordServiceService = {
  ...GeneratedRecordServiceService,
  publish: {
    ...GeneratedRecordServiceService.publish,
    requestDeserialize: (value: Buffer): PublishRequest => decodePublishRequest(value),
  },
  publishStream: {
    ...GeneratedRecordServiceService.publishStream,
    requestDeserialize: decodePublishStreamRequest,
  },
};
