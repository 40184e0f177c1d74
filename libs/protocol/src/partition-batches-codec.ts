/**
 * Hand-written protobuf codecs for the two messages that carry record bytes on the produce path,
 * ProduceRequest (client to gateway) and AppendRequest (gateway to storage node). Both have the
 * same wire shape:
 *
 *   1: repeated PartitionBatches { 1: string topic; 2: int32 partition; 3: bytes records }
 *   2: Acks acks (an enum, int32 on the wire)
 *   3: int32 timeout_ms
 *
 * Why not the generated ts-proto code: it copies every record byte three times per hop (the
 * writer's `finish` concatenates its chunks, `Buffer.from` copies that again, and decoding wraps
 * each `bytes` field in a fresh `Buffer.from`). A CPU profile of the gateway at 1 MiB batches had
 * those copies and the garbage they left as its largest cost. Here encoding sizes the message
 * first and copies each batch once into one buffer, and decoding returns views into the received
 * message (grpc-js hands each message its own buffer, so nothing else writes to it).
 *
 * The output is byte-for-byte what the generated encoder writes (proto3: default values are left
 * out), and decoding skips unknown fields as the generated decoder does; the spec file checks
 * both against the generated code.
 */
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import type { Acks } from './generated/spool/v1/common';
import type { GatewayServiceClient as GeneratedGatewayServiceClient } from './generated/spool/v1/gateway';
import {
  GatewayServiceService as GeneratedGatewayServiceService,
  type ConsumeResponse,
  type FetchResponse,
  type ProduceRequest,
  type ProduceStreamRequest,
} from './generated/spool/v1/gateway';
import type { StorageServiceClient as GeneratedStorageServiceClient } from './generated/spool/v1/storage';
import {
  StorageServiceService as GeneratedStorageServiceService,
  type AppendRequest,
  type AppendStreamRequest,
  type PartitionBatches,
} from './generated/spool/v1/storage';
import {
  WireReader,
  int32SizeBytes,
  varintSizeBytes,
  wireLengthDelimited,
  wireVarint,
  writeInt32,
  writeVarint,
} from './protobuf-wire';
import {
  SerializeScratch,
  decodeFetchedPartitions,
  encodeFetchedPartitions,
} from './fetched-partitions-codec';

/**
 * The fields ProduceRequest, AppendRequest and AppendStreamRequest share (the same message on
 * the wire); AppendStreamRequest and ProduceStreamRequest add field 15, the correlation id.
 */
export interface BatchesRequest {
  partitions: PartitionBatches[];
  acks: Acks;
  timeoutMs: number;
  correlationId?: number;
}

function partitionBodySizeBytes(partition: PartitionBatches, topicBytes: number): number {
  let size = 0;
  if (topicBytes > 0) size += 1 + varintSizeBytes(topicBytes) + topicBytes;
  if (partition.partition !== 0) size += 1 + int32SizeBytes(partition.partition);
  const recordsBytes = partition.records.length;
  if (recordsBytes > 0) size += 1 + varintSizeBytes(recordsBytes) + recordsBytes;
  return size;
}

/** One buffer, each batch copied into it once. */
export function encodeBatchesRequest(request: BatchesRequest): Buffer {
  const topicSizes = request.partitions.map((partition) => Buffer.byteLength(partition.topic));
  const bodySizes = request.partitions.map((partition, index) =>
    partitionBodySizeBytes(partition, topicSizes[index]!),
  );
  let size = 0;
  for (const bodySize of bodySizes) size += 1 + varintSizeBytes(bodySize) + bodySize;
  if (request.acks !== 0) size += 1 + int32SizeBytes(request.acks);
  if (request.timeoutMs !== 0) size += 1 + int32SizeBytes(request.timeoutMs);
  const correlationId = request.correlationId ?? 0;
  if (correlationId !== 0) size += 1 + varintSizeBytes(correlationId);
  const buffer = Buffer.allocUnsafe(size);
  let position = 0;
  request.partitions.forEach((partition, index) => {
    buffer[position++] = (1 << 3) | wireLengthDelimited;
    position = writeVarint(buffer, position, bodySizes[index]!);
    const topicBytes = topicSizes[index]!;
    if (topicBytes > 0) {
      buffer[position++] = (1 << 3) | wireLengthDelimited;
      position = writeVarint(buffer, position, topicBytes);
      position += buffer.write(partition.topic, position, topicBytes, 'utf8');
    }
    if (partition.partition !== 0) {
      buffer[position++] = (2 << 3) | wireVarint;
      position = writeInt32(buffer, position, partition.partition);
    }
    const records = partition.records;
    if (records.length > 0) {
      buffer[position++] = (3 << 3) | wireLengthDelimited;
      position = writeVarint(buffer, position, records.length);
      buffer.set(records, position);
      position += records.length;
    }
  });
  if (request.acks !== 0) {
    buffer[position++] = (2 << 3) | wireVarint;
    position = writeInt32(buffer, position, request.acks);
  }
  if (request.timeoutMs !== 0) {
    buffer[position++] = (3 << 3) | wireVarint;
    position = writeInt32(buffer, position, request.timeoutMs);
  }
  if (correlationId !== 0) {
    buffer[position++] = (15 << 3) | wireVarint;
    position = writeVarint(buffer, position, correlationId);
  }
  if (position !== size) throw new Error(`encoded ${position} bytes, sized ${size}`);
  return buffer;
}

function decodePartitionBatches(buffer: Buffer, start: number, end: number): PartitionBatches {
  const reader = new WireReader(buffer, start, end);
  const partition: PartitionBatches = { topic: '', partition: 0, records: emptyRecords };
  while (reader.position < end) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      partition.topic = buffer.toString('utf8', field.start, field.end);
    } else if (tag === ((2 << 3) | wireVarint)) {
      partition.partition = reader.varint32() | 0;
    } else if (tag === ((3 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      partition.records = buffer.subarray(field.start, field.end);
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return partition;
}

const emptyRecords = Buffer.alloc(0);

/** The request with each partition's records a view into `buffer`, not a copy. */
export function decodeBatchesRequest(buffer: Buffer): BatchesRequest {
  const reader = new WireReader(buffer, 0, buffer.length);
  const request: BatchesRequest = { partitions: [], acks: 0, timeoutMs: 0 };
  while (reader.position < buffer.length) {
    const tag = reader.varint32() >>> 0;
    if (tag === ((1 << 3) | wireLengthDelimited)) {
      const field = reader.lengthDelimited();
      request.partitions.push(decodePartitionBatches(buffer, field.start, field.end));
    } else if (tag === ((2 << 3) | wireVarint)) {
      request.acks = (reader.varint32() | 0) as Acks;
    } else if (tag === ((3 << 3) | wireVarint)) {
      request.timeoutMs = reader.varint32() | 0;
    } else if (tag === ((15 << 3) | wireVarint)) {
      request.correlationId = reader.varint32() >>> 0;
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
  }
  return request;
}

/** A request of a pipelined stream: the batches, and the id its answer carries (0 if absent). */
function decodeCorrelatedBatchesRequest(value: Buffer): BatchesRequest & { correlationId: number } {
  const request = decodeBatchesRequest(value);
  return { ...request, correlationId: request.correlationId ?? 0 };
}

/** Services whose produce-path requests use the codecs above; every other method as generated. */
export const StorageServiceService: typeof GeneratedStorageServiceService = {
  ...GeneratedStorageServiceService,
  append: {
    ...GeneratedStorageServiceService.append,
    requestSerialize: (value: AppendRequest): Buffer => encodeBatchesRequest(value),
    requestDeserialize: (value: Buffer): AppendRequest => decodeBatchesRequest(value),
  },
  appendStream: {
    ...GeneratedStorageServiceService.appendStream,
    requestSerialize: (value: AppendStreamRequest): Buffer => encodeBatchesRequest(value),
    requestDeserialize: decodeCorrelatedBatchesRequest,
  },
};

/**
 * Responses are serialized only by grpc-js's server, which copies each before the next (see
 * SerializeScratch), and on one thread: one scratch serves every Fetch and Consume response.
 * Kept to 8 MiB: a larger response allocates its own, a cost small beside its copies.
 */
const responseScratch = new SerializeScratch(8 * 1024 * 1024);

export const GatewayServiceService: typeof GeneratedGatewayServiceService = {
  ...GeneratedGatewayServiceService,
  produce: {
    ...GeneratedGatewayServiceService.produce,
    requestSerialize: (value: ProduceRequest): Buffer => encodeBatchesRequest(value),
    requestDeserialize: (value: Buffer): ProduceRequest => decodeBatchesRequest(value),
  },
  produceStream: {
    ...GeneratedGatewayServiceService.produceStream,
    requestSerialize: (value: ProduceStreamRequest): Buffer => encodeBatchesRequest(value),
    requestDeserialize: decodeCorrelatedBatchesRequest,
  },
  // Responses that carry records to consumers: fetched-partitions-codec.ts.
  fetch: {
    ...GeneratedGatewayServiceService.fetch,
    responseSerialize: (value: FetchResponse): Buffer =>
      encodeFetchedPartitions(value, responseScratch),
    responseDeserialize: (value: Buffer): FetchResponse => decodeFetchedPartitions(value),
  },
  consume: {
    ...GeneratedGatewayServiceService.consume,
    responseSerialize: (value: ConsumeResponse): Buffer =>
      encodeFetchedPartitions(value, responseScratch),
    responseDeserialize: (value: Buffer): ConsumeResponse => decodeFetchedPartitions(value),
  },
};

export const StorageServiceClient = makeGenericClientConstructor(
  StorageServiceService,
  'spool.v1.StorageService',
) as unknown as typeof GeneratedStorageServiceClient;
export type StorageServiceClient = GeneratedStorageServiceClient;

export const GatewayServiceClient = makeGenericClientConstructor(
  GatewayServiceService,
  'spool.v1.GatewayService',
) as unknown as typeof GeneratedGatewayServiceClient;
export type GatewayServiceClient = GeneratedGatewayServiceClient;
