// Proves the generated codecs on handwritten messages: ProduceRequest's bytes in a classic (v3)
// and a flexible (v9) version, byte by byte as Kafka's protocol guide lays them out; round trips
// with tagged fields (FetchResponse's currentLeader written only when not its default, unknown
// tags skipped), a nullable struct, the request header's non-compact client id; the writer's
// refusals (a non-default field the version lacks, null where it is not nullable, a version the
// schema lacks); every truncation of a message read as a KafkaProtocolError; and the API table.
import { describe, expect, it } from 'vitest';
import { apiMessageOf, requestHeaderVersion, responseHeaderVersion } from './api-message';
import { KafkaProtocolError } from './errors';
import {
  apiMessages,
  ApiKey,
  defaultConsumerGroupHeartbeatResponse,
  defaultFetchResponse,
  defaultFetchResponsePartitionData,
  defaultFetchableTopicResponse,
  defaultProduceRequest,
  readConsumerGroupHeartbeatResponse,
  readFetchResponse,
  readProduceRequest,
  readRequestHeader,
  writeConsumerGroupHeartbeatResponse,
  writeFetchResponse,
  writeProduceRequest,
  writeRequestHeader,
  type FetchResponse,
  type ProduceRequest,
} from './generated/index';
import { KafkaReader } from './kafka-reader';
import { KafkaWriter } from './kafka-writer';

function produceRequest(): ProduceRequest {
  return {
    ...defaultProduceRequest(),
    acks: -1,
    timeoutMs: 30_000,
    topicData: [
      {
        name: 't',
        topicId: Buffer.alloc(16),
        partitionData: [{ index: 0, records: Buffer.from([1, 2, 3]) }],
      },
    ],
  };
}

function encode<T>(
  write: (writer: KafkaWriter, message: T, version: number) => void,
  message: T,
  version: number,
): Buffer {
  const writer = new KafkaWriter();
  write(writer, message, version);
  return writer.toBuffer();
}

function fetchResponse(): FetchResponse {
  const partition = {
    ...defaultFetchResponsePartitionData(),
    partitionIndex: 2,
    highWatermark: 100n,
    lastStableOffset: 100n,
    logStartOffset: 0n,
    records: Buffer.from('batch'),
  };
  return {
    ...defaultFetchResponse(),
    sessionId: 7,
    responses: [{ ...defaultFetchableTopicResponse(), topic: 'orders', partitions: [partition] }],
  };
}

describe('ProduceRequest', () => {
  it('writes version 3 in the classic encoding', () => {
    const bytes = encode(writeProduceRequest, produceRequest(), 3);
    expect(bytes.toString('hex')).toBe(
      'ffff' +
        'ffff' +
        '00007530' +
        '00000001' +
        '000174' +
        '00000001' +
        '00000000' +
        '00000003010203',
    );
    expect(readProduceRequest(new KafkaReader(bytes), 3)).toEqual(produceRequest());
  });

  it('writes version 9 in the flexible encoding, with empty tagged field sections', () => {
    const bytes = encode(writeProduceRequest, produceRequest(), 9);
    expect(bytes.toString('hex')).toBe(
      '00' +
        'ffff' +
        '00007530' +
        '02' +
        '0274' +
        '02' +
        '00000000' +
        '04010203' +
        '00' +
        '00' +
        '00',
    );
    expect(readProduceRequest(new KafkaReader(bytes), 9)).toEqual(produceRequest());
  });

  it('reads records as a view of the request, not a copy', () => {
    const bytes = encode(writeProduceRequest, produceRequest(), 9);
    const records = readProduceRequest(new KafkaReader(bytes), 9).topicData[0]!.partitionData[0]!
      .records!;
    expect(records.buffer).toBe(bytes.buffer);
  });

  it('refuses a topic id at a version with topic names, and a version the schema lacks', () => {
    const request = produceRequest();
    request.topicData[0]!.topicId = Buffer.alloc(16, 1);
    expect(() => encode(writeProduceRequest, request, 12)).not.toThrow();
    expect(() => encode(writeProduceRequest, produceRequest(), 2)).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_VERSION' }),
    );
    expect(() => readProduceRequest(new KafkaReader(Buffer.alloc(0)), 14)).toThrow(
      /outside the schema/,
    );
  });

  it('throws a KafkaProtocolError, never another error, for every truncation', () => {
    for (const version of [3, 9, 13]) {
      const bytes = encode(writeProduceRequest, produceRequest(), version);
      for (let end = 0; end < bytes.length; end++) {
        expect(() => readProduceRequest(new KafkaReader(bytes.subarray(0, end)), version)).toThrow(
          KafkaProtocolError,
        );
      }
    }
  });
});

describe('tagged fields', () => {
  it('leaves a tagged struct out while it holds its default, and writes it otherwise', () => {
    const plain = encode(writeFetchResponse, fetchResponse(), 12);
    const withLeader = fetchResponse();
    withLeader.responses[0]!.partitions[0]!.currentLeader = { leaderId: 3, leaderEpoch: 5 };
    const tagged = encode(writeFetchResponse, withLeader, 12);
    // Tag 1, size 9 (int32, int32, an empty tagged section), then the struct.
    expect(tagged.length).toBe(plain.length + 11);
    expect(tagged.includes(Buffer.from('0109000000030000000500', 'hex'))).toBe(true);
    expect(readFetchResponse(new KafkaReader(tagged), 12)).toEqual(withLeader);
    expect(readFetchResponse(new KafkaReader(plain), 12)).toEqual(fetchResponse());
  });

  it('refuses a non-default tagged field at a version without it', () => {
    const withLeader = fetchResponse();
    withLeader.responses[0]!.partitions[0]!.currentLeader = { leaderId: 3, leaderEpoch: 5 };
    expect(() => encode(writeFetchResponse, withLeader, 11)).toThrow(
      /FetchResponsePartitionData.currentLeader: holds a non-default value, which version 11/,
    );
  });

  it('skips unknown tagged fields', () => {
    const bytes = encode(writeFetchResponse, fetchResponse(), 12);
    // The top-level tagged section is the last byte (0 fields): replace it by one unknown field.
    const withUnknown = Buffer.concat([
      bytes.subarray(0, bytes.length - 1),
      Buffer.from('0163020102', 'hex'),
    ]);
    expect(readFetchResponse(new KafkaReader(withUnknown), 12)).toEqual(fetchResponse());
  });

  it('refuses a known tagged field whose size prefix disagrees with its content', () => {
    const withLeader = fetchResponse();
    withLeader.responses[0]!.partitions[0]!.currentLeader = { leaderId: 3, leaderEpoch: 5 };
    const bytes = encode(writeFetchResponse, withLeader, 12);
    const at = bytes.indexOf(Buffer.from('0109000000030000000500', 'hex'));
    bytes[at + 1] = 10;
    expect(() => readFetchResponse(new KafkaReader(bytes), 12)).toThrow(KafkaProtocolError);
  });
});

describe('nullability', () => {
  it('marks a nullable struct with -1 for null and 1 for present', () => {
    const response = { ...defaultConsumerGroupHeartbeatResponse(), memberId: 'm', memberEpoch: 2 };
    const absent = encode(writeConsumerGroupHeartbeatResponse, response, 0);
    expect(absent[absent.length - 2]).toBe(0xff);
    const present = {
      ...response,
      assignment: { topicPartitions: [{ topicId: Buffer.alloc(16, 9), partitions: [0, 1] }] },
    };
    const bytes = encode(writeConsumerGroupHeartbeatResponse, present, 0);
    expect(readConsumerGroupHeartbeatResponse(new KafkaReader(bytes), 0)).toEqual(present);
    expect(readConsumerGroupHeartbeatResponse(new KafkaReader(absent), 0)).toEqual(response);
  });

  it('refuses a value that does not fit its field with a KafkaProtocolError', () => {
    const request = produceRequest();
    request.acks = 70_000;
    expect(() => encode(writeProduceRequest, request, 9)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST', field: 'ProduceRequest' }),
    );
    const wrongType = { ...produceRequest(), timeoutMs: 5n as unknown as number };
    expect(() => encode(writeProduceRequest, wrongType, 9)).toThrow(KafkaProtocolError);
  });

  it('refuses null in a field that is not nullable', () => {
    const request = produceRequest();
    (request.topicData[0] as { name: string | null }).name = null;
    expect(() => encode(writeProduceRequest, request, 9)).toThrow(KafkaProtocolError);
  });
});

describe('headers and the API table', () => {
  it('writes the request header client id as a classic nullable string even in version 2', () => {
    const header = { requestApiKey: 3, requestApiVersion: 12, correlationId: 5, clientId: 'c' };
    const bytes = encode(writeRequestHeader, header, 2);
    expect(bytes.toString('hex')).toBe('0003' + '000c' + '00000005' + '000163' + '00');
    expect(readRequestHeader(new KafkaReader(bytes), 2)).toEqual(header);
  });

  it('lists every API once with its schema versions and header versions', () => {
    expect(new Set(apiMessages.map((api) => api.apiKey)).size).toBe(apiMessages.length);
    const produce = apiMessageOf(ApiKey.Produce)!;
    expect(produce.validVersions).toEqual({ min: 3, max: 13 });
    expect(produce.flexibleVersionsFrom).toBe(9);
    expect(requestHeaderVersion(produce, 8)).toBe(1);
    expect(requestHeaderVersion(produce, 9)).toBe(2);
    expect(responseHeaderVersion(produce, 9)).toBe(1);
    const apiVersions = apiMessageOf(ApiKey.ApiVersions)!;
    expect(responseHeaderVersion(apiVersions, 4)).toBe(0);
    expect(apiMessageOf(9999)).toBeUndefined();
    const request = produce.defaultRequest() as ProduceRequest;
    expect(request.transactionalId).toBeNull();
  });
});
