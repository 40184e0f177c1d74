// Proves the data-port codecs with fast-check: encode → decode is the identity for every request
// and response type at the extremes of each field (Unicode topics, i64 offsets, empty and full
// arrays), and every damaged frame (each truncation, a lying sizeBytes, count or string length,
// trailing bytes, random bytes, random byte flips) throws a ProtocolError naming a field and
// byte position, never another error: every read is checked before it happens. Frames are
// decoded as views of a larger buffer of sentinel bytes, so a read past the frame would show.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError, ProtocolErrorCode } from '../errors';
import {
  type DataPortApiVersionsResponse,
  encodeApiVersionsRequest,
  encodeApiVersionsResponse,
} from './api-versions-codec';
import {
  DataPortApiKey,
  dataPortErrorApiKey,
  dataPortPartitionsMax,
  dataPortSupportedApiVersions,
  errorMessageBytesMax,
  stringBytesMax,
} from './data-port-layout';
import { decodeDataPortRequest, decodeDataPortRequestHeader } from './data-port-request';
import { decodeDataPortResponse } from './data-port-response';
import { encodeErrorResponse } from './error-response-codec';
import {
  type DataPortFetchRequest,
  type DataPortFetchResponse,
  encodeFetchRequest,
  encodeFetchResponse,
  encodeFetchResponseHeader,
  fetchResponseBytesMax,
} from './fetch-codec';
import { FrameWriter } from './frame-writer';
import {
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  encodeOffsetForLeaderEpochRequest,
  encodeOffsetForLeaderEpochResponse,
} from './offset-for-leader-epoch-codec';

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const nonNegativeInt32 = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const idOrUnknown = fc.integer({ min: -1, max: 2 ** 31 - 1 });
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const correlationId = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const topic = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', 'orders', '__consumer_offsets', 'é'.repeat(100)),
);
const errorCode = fc.constantFrom(
  '',
  'NOT_LEADER_OR_FOLLOWER',
  'OFFSET_OUT_OF_RANGE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
);
const errorMessage = fc.string({ unit: 'binary', maxLength: 60 });

const fetchRequest: fc.Arbitrary<DataPortFetchRequest> = fc.record({
  replicaId: idOrUnknown,
  brokerEpoch: int64,
  maxWaitMs: nonNegativeInt32,
  minBytes: nonNegativeInt32,
  maxBytes: nonNegativeInt32,
  partitions: fc.array(
    fc.record({
      topic,
      partition: nonNegativeInt32,
      fetchOffset: int64,
      currentLeaderEpoch: idOrUnknown,
      logStartOffset: int64,
      partitionMaxBytes: nonNegativeInt32,
    }),
    { maxLength: 8 },
  ),
});

const fetchResponse: fc.Arbitrary<DataPortFetchResponse> = fc.record({
  partitions: fc.array(
    fc.record({
      topic,
      partition: int32,
      errorCode,
      errorMessage,
      highWatermark: int64,
      logStartOffset: int64,
      logEndOffset: int64,
      records: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    }),
    { maxLength: 8 },
  ),
});

/** FETCH v1: the same request with fetch-session fields (KIP-227). */
const fetchSessionRequest: fc.Arbitrary<DataPortFetchRequest> = fc
  .tuple(
    fetchRequest,
    fc.record({
      sessionId: nonNegativeInt32,
      sessionEpoch: idOrUnknown,
      forgottenPartitions: fc.array(fc.record({ topic, partition: nonNegativeInt32 }), {
        maxLength: 8,
      }),
    }),
  )
  .map(([request, session]) => ({ ...request, session }));

const fetchSessionResponse: fc.Arbitrary<DataPortFetchResponse> = fc
  .tuple(fetchResponse, fc.record({ errorCode, errorMessage, sessionId: nonNegativeInt32 }))
  .map(([response, session]) => ({ ...response, session }));

const offsetForLeaderEpochRequest: fc.Arbitrary<DataPortOffsetForLeaderEpochRequest> = fc.record({
  replicaId: idOrUnknown,
  partitions: fc.array(
    fc.record({
      topic,
      partition: nonNegativeInt32,
      currentLeaderEpoch: idOrUnknown,
      leaderEpoch: idOrUnknown,
    }),
    { maxLength: 8 },
  ),
});

const offsetForLeaderEpochResponse: fc.Arbitrary<DataPortOffsetForLeaderEpochResponse> = fc.record({
  partitions: fc.array(
    fc.record({
      topic,
      partition: int32,
      errorCode,
      errorMessage,
      leaderEpoch: int32,
      endOffset: int64,
    }),
    { maxLength: 8 },
  ),
});

const apiVersionsResponse: fc.Arbitrary<DataPortApiVersionsResponse> = fc.record({
  apis: fc.array(
    fc.tuple(fc.nat(0xffff), fc.nat(0xffff), fc.nat(0xffff)).map(([apiKey, a, b]) => ({
      apiKey,
      minVersion: Math.min(a, b),
      maxVersion: Math.max(a, b),
    })),
    { maxLength: 8 },
  ),
});

/** Every request frame the arbitraries make, each valid. */
const anyRequestFrame = fc.oneof(
  correlationId.map((id) => encodeApiVersionsRequest(id)),
  fc.tuple(correlationId, fetchRequest).map(([id, request]) => encodeFetchRequest(id, request)),
  fc
    .tuple(correlationId, fetchSessionRequest)
    .map(([id, request]) => encodeFetchRequest(id, request)),
  fc
    .tuple(correlationId, offsetForLeaderEpochRequest)
    .map(([id, request]) => encodeOffsetForLeaderEpochRequest(id, request)),
);

/** Every response frame the arbitraries make, each valid. */
const anyResponseFrame = fc.oneof(
  fc
    .tuple(correlationId, apiVersionsResponse)
    .map(([id, response]) => encodeApiVersionsResponse(id, response)),
  fc.tuple(correlationId, fetchResponse).map(([id, response]) => encodeFetchResponse(id, response)),
  fc
    .tuple(correlationId, offsetForLeaderEpochResponse)
    .map(([id, response]) => encodeOffsetForLeaderEpochResponse(id, response)),
  fc
    .tuple(correlationId, errorCode, errorMessage)
    .map(([id, code, message]) =>
      encodeErrorResponse(id, { errorCode: code, errorMessage: message }),
    ),
);

/** `frame` as a view into a larger buffer whose other bytes are 0xEE sentinels. */
function framed(frame: Buffer): Buffer {
  const backing = Buffer.alloc(frame.length + 64, 0xee);
  frame.copy(backing, 16);
  return backing.subarray(16, 16 + frame.length);
}

/** The frame with its sizeBytes rewritten to match a changed length. */
function resized(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  if (copy.length >= 4) copy.writeUInt32BE(copy.length - 4, 0);
  return copy;
}

/** Runs `decode` and returns the ProtocolError it must throw; any other outcome fails. */
function protocolErrorOf(decode: () => unknown): ProtocolError {
  try {
    decode();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error('decoding succeeded, but it should have thrown a ProtocolError');
}

/** Decodes or throws a ProtocolError; anything else (a RangeError, a crash) fails the test. */
function decodesOrProtocolError(decode: () => unknown): void {
  try {
    decode();
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    expect(error.message).toMatch(/byte \d+/);
  }
}

describe('round trips', () => {
  it('FETCH requests', () => {
    fc.assert(
      fc.property(correlationId, fetchRequest, (id, request) => {
        expect(decodeDataPortRequest(framed(encodeFetchRequest(id, request)))).toEqual({
          apiKey: DataPortApiKey.Fetch,
          apiVersion: 0,
          correlationId: id,
          body: request,
        });
      }),
    );
  });

  it('FETCH responses, records after all headers', () => {
    fc.assert(
      fc.property(correlationId, fetchResponse, (id, response) => {
        const frame = encodeFetchResponse(id, response);
        const decoded = decodeDataPortResponse(framed(frame));
        expect(decoded).toEqual({
          correlationId: id,
          apiKey: DataPortApiKey.Fetch,
          body: response,
        });
        const headerBytes = encodeFetchResponseHeader(
          id,
          response.partitions.map((partition) => ({
            ...partition,
            recordsSizeBytes: partition.records.length,
          })),
        );
        // The header alone is the frame's prefix, and its sizeBytes counts the records after it.
        expect(frame.subarray(0, headerBytes.length)).toEqual(headerBytes);
        expect(headerBytes.readUInt32BE(0)).toBe(frame.length - 4);
        expect(frame.length).toBeLessThanOrEqual(
          fetchResponseBytesMax({
            replicaId: -1,
            brokerEpoch: -1n,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 0,
            partitions: response.partitions.map((partition) => ({
              topic: partition.topic,
              partition: 0,
              fetchOffset: 0n,
              currentLeaderEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 0,
            })),
          }),
        );
      }),
    );
  });

  it('FETCH v1 requests and responses with fetch-session fields', () => {
    fc.assert(
      fc.property(correlationId, fetchSessionRequest, (id, request) => {
        expect(decodeDataPortRequest(framed(encodeFetchRequest(id, request)))).toEqual({
          apiKey: DataPortApiKey.Fetch,
          apiVersion: 1,
          correlationId: id,
          body: request,
        });
      }),
    );
    fc.assert(
      fc.property(correlationId, fetchSessionResponse, (id, response) => {
        const frame = encodeFetchResponse(id, response);
        expect(decodeDataPortResponse(framed(frame), 1)).toEqual({
          correlationId: id,
          apiKey: DataPortApiKey.Fetch,
          body: response,
        });
        // A session answers for partitions the request did not name: the bound counts them.
        const bound = fetchResponseBytesMax(
          {
            replicaId: 1,
            brokerEpoch: 1n,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 0,
            partitions: [],
            session: { sessionId: 1, sessionEpoch: 1, forgottenPartitions: [] },
          },
          response.partitions.length,
        );
        expect(frame.length).toBeLessThanOrEqual(bound);
      }),
    );
  });

  it('FETCH v1 responses, damaged, throw ProtocolErrors naming a field', () => {
    fc.assert(
      fc.property(correlationId, fetchSessionResponse, fc.nat(), (id, response, cut) => {
        const frame = encodeFetchResponse(id, response);
        const truncated = resized(frame.subarray(0, cut % frame.length));
        decodesOrProtocolError(() => decodeDataPortResponse(framed(truncated), 1));
      }),
    );
  });

  it('OFFSET_FOR_LEADER_EPOCH requests and responses', () => {
    fc.assert(
      fc.property(correlationId, offsetForLeaderEpochRequest, (id, request) => {
        expect(
          decodeDataPortRequest(framed(encodeOffsetForLeaderEpochRequest(id, request))),
        ).toEqual({
          apiKey: DataPortApiKey.OffsetForLeaderEpoch,
          apiVersion: 0,
          correlationId: id,
          body: request,
        });
      }),
    );
    fc.assert(
      fc.property(correlationId, offsetForLeaderEpochResponse, (id, response) => {
        expect(
          decodeDataPortResponse(framed(encodeOffsetForLeaderEpochResponse(id, response))),
        ).toEqual({
          correlationId: id,
          apiKey: DataPortApiKey.OffsetForLeaderEpoch,
          body: response,
        });
      }),
    );
  });

  it('API_VERSIONS requests and responses', () => {
    fc.assert(
      fc.property(correlationId, apiVersionsResponse, (id, response) => {
        expect(decodeDataPortRequest(framed(encodeApiVersionsRequest(id)))).toEqual({
          apiKey: DataPortApiKey.ApiVersions,
          apiVersion: 0,
          correlationId: id,
          body: undefined,
        });
        expect(decodeDataPortResponse(framed(encodeApiVersionsResponse(id, response)))).toEqual({
          correlationId: id,
          apiKey: DataPortApiKey.ApiVersions,
          body: response,
        });
      }),
    );
    const supported = encodeApiVersionsResponse(1, { apis: dataPortSupportedApiVersions });
    expect(decodeDataPortResponse(supported).body).toEqual({ apis: dataPortSupportedApiVersions });
  });

  it('ERROR responses, cutting a long message at a character boundary', () => {
    fc.assert(
      fc.property(correlationId, errorCode, errorMessage, (id, code, message) => {
        const error = { errorCode: code, errorMessage: message };
        expect(decodeDataPortResponse(framed(encodeErrorResponse(id, error)))).toEqual({
          correlationId: id,
          apiKey: dataPortErrorApiKey,
          body: error,
        });
      }),
    );
    const long = encodeErrorResponse(7, { errorCode: 'X', errorMessage: '€'.repeat(1000) });
    const decoded = decodeDataPortResponse(long);
    expect(decoded.apiKey).toBe(dataPortErrorApiKey);
    const message = (decoded.body as { errorMessage: string }).errorMessage;
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(errorMessageBytesMax);
    expect(message).toBe('€'.repeat(Math.floor(errorMessageBytesMax / 3)));
  });

  it('writes the documented bytes for a FETCH request', () => {
    const frame = encodeFetchRequest(0x01020304, {
      replicaId: 2,
      brokerEpoch: 5n,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 1024,
      partitions: [
        {
          topic: 'ab',
          partition: 3,
          fetchOffset: 42n,
          currentLeaderEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: 512,
        },
      ],
    });
    const expected = Buffer.concat([
      Buffer.from([0, 0, 0, 8 + 24 + 4 + 32]), // sizeBytes
      Buffer.from([0, 1, 0, 0, 1, 2, 3, 4]), // apiKey 1, apiVersion 0, correlationId
      Buffer.from([0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5]), // replicaId, brokerEpoch
      Buffer.from([0, 0, 0x01, 0xf4, 0, 0, 0, 1, 0, 0, 0x04, 0]), // maxWaitMs, minBytes, maxBytes
      Buffer.from([0, 0, 0, 1, 0, 2, 0x61, 0x62, 0, 0, 0, 3]), // count, topic, partition
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 42, 0xff, 0xff, 0xff, 0xff]), // fetchOffset, epoch
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 2, 0]), // lso, max bytes
    ]);
    expect(frame).toEqual(expected);
  });
});

describe('damaged frames throw a ProtocolError naming the field and position', () => {
  it('every truncation of a valid frame, with sizeBytes lying or corrected', () => {
    fc.assert(
      fc.property(anyRequestFrame, anyResponseFrame, (request, response) => {
        for (let length = 0; length < request.length; length++) {
          const cut = request.subarray(0, length);
          const error = protocolErrorOf(() => decodeDataPortRequest(framed(cut)));
          expect(error.code).toBe(ProtocolErrorCode.InvalidRequest);
          protocolErrorOf(() => decodeDataPortRequest(framed(resized(cut))));
        }
        for (let length = 0; length < response.length; length++) {
          const cut = response.subarray(0, length);
          const error = protocolErrorOf(() => decodeDataPortResponse(framed(cut)));
          expect(error.code).toBe(ProtocolErrorCode.CorruptMessage);
          decodesOrProtocolError(() => decodeDataPortResponse(framed(resized(cut))));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('trailing bytes after a valid body', () => {
    fc.assert(
      fc.property(anyRequestFrame, fc.uint8Array({ minLength: 1, maxLength: 8 }), (frame, tail) => {
        const longer = resized(Buffer.concat([frame, tail]));
        const error = protocolErrorOf(() => decodeDataPortRequest(framed(longer)));
        expect(error.code).toBe(ProtocolErrorCode.InvalidRequest);
      }),
    );
  });

  it('random bytes and random byte flips never throw anything but a ProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const frame = Buffer.from(bytes);
        decodesOrProtocolError(() => decodeDataPortRequest(framed(frame)));
        decodesOrProtocolError(() => decodeDataPortRequest(framed(resized(frame))));
        decodesOrProtocolError(() => decodeDataPortResponse(framed(resized(frame))));
        decodesOrProtocolError(() => decodeDataPortRequestHeader(framed(resized(frame))));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(
        fc.oneof(anyRequestFrame, anyResponseFrame),
        fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }),
        (valid, flips) => {
          const damaged = Buffer.from(valid);
          for (const [position, value] of flips) damaged[position % damaged.length] = value;
          decodesOrProtocolError(() => decodeDataPortRequest(framed(damaged)));
          decodesOrProtocolError(() => decodeDataPortResponse(framed(damaged)));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('a lying partition count, over the bound or over the bytes left', () => {
    const frame = encodeOffsetForLeaderEpochRequest(9, { replicaId: 1, partitions: [] });
    const countPosition = 4 + 8 + 4;
    const overBound = Buffer.from(frame);
    overBound.writeUInt32BE(dataPortPartitionsMax + 1, countPosition);
    expect(protocolErrorOf(() => decodeDataPortRequest(overBound)).message).toBe(
      `OffsetForLeaderEpoch v0 request (correlationId 9): field partitions at byte ` +
        `${countPosition} has ${dataPortPartitionsMax + 1} entries, over its bound of ` +
        `${dataPortPartitionsMax}`,
    );
    const overBytes = Buffer.from(frame);
    overBytes.writeUInt32BE(3, countPosition);
    expect(protocolErrorOf(() => decodeDataPortRequest(overBytes)).message).toMatch(
      /field partitions at byte 16 has 3 entries of at least 14 bytes, but only 0 bytes follow/,
    );
  });

  it('a lying string length, over the frame or over the bound', () => {
    const frame = encodeFetchRequest(1, {
      replicaId: -1,
      brokerEpoch: -1n,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 0,
      partitions: [
        {
          topic: 't',
          partition: 0,
          fetchOffset: 0n,
          currentLeaderEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: 0,
        },
      ],
    });
    const topicLengthPosition = 4 + 8 + 24 + 4;
    const overFrame = Buffer.from(frame);
    overFrame.writeUInt16BE(200, topicLengthPosition);
    expect(protocolErrorOf(() => decodeDataPortRequest(overFrame)).message).toMatch(
      new RegExp(`field partitions\\[0\\]\\.topic at byte ${topicLengthPosition + 2} needs 200`),
    );
    const writer = new FrameWriter().u16(DataPortApiKey.Fetch).u16(0).u32(1);
    writer
      .i32(-1)
      .i64(-1n)
      .i32(0)
      .i32(0)
      .i32(0)
      .u32(1)
      .u16(stringBytesMax + 1);
    const overBound = resized(Buffer.concat([writer.finish(), Buffer.alloc(stringBytesMax + 40)]));
    expect(protocolErrorOf(() => decodeDataPortRequest(overBound)).message).toMatch(
      /field partitions\[0\]\.topic at byte 40 is 32768 bytes long, over its bound of 32767/,
    );
  });

  it('a FETCH response whose records do not fill the frame exactly', () => {
    const frame = encodeFetchResponse(3, {
      partitions: [
        {
          topic: 't',
          partition: 0,
          errorCode: '',
          errorMessage: '',
          highWatermark: 10n,
          logStartOffset: 0n,
          logEndOffset: 10n,
          records: Buffer.from('abcdef'),
        },
      ],
    });
    const longer = resized(Buffer.concat([frame, Buffer.from('x')]));
    expect(protocolErrorOf(() => decodeDataPortResponse(longer)).message).toMatch(
      /field records at byte \d+ should be 6 bytes by the partition headers, but 7 bytes follow/,
    );
  });

  it('invalid UTF-8 and out-of-domain numbers', () => {
    const writer = new FrameWriter().u16(DataPortApiKey.OffsetForLeaderEpoch).u16(0).u32(1);
    writer
      .i32(1)
      .u32(1)
      .u16(2)
      .bytes(Buffer.from([0xc3, 0x28]))
      .i32(0)
      .i32(0)
      .i32(0);
    expect(protocolErrorOf(() => decodeDataPortRequest(writer.finish())).message).toMatch(
      /partitions\[0\]\.topic at byte 22 is not valid UTF-8/,
    );
    const negative = new FrameWriter().u16(DataPortApiKey.Fetch).u16(0).u32(1);
    negative.i32(-1).i64(-1n).i32(-5).i32(0).i32(0).u32(0);
    expect(protocolErrorOf(() => decodeDataPortRequest(negative.finish())).message).toMatch(
      /field maxWaitMs at byte 24 is -5, below its minimum 0/,
    );
  });

  it('unknown apiKeys and versions as UNSUPPORTED_VERSION, with the correlationId readable', () => {
    const unknownKey = new FrameWriter().u16(77).u16(0).u32(12).finish();
    const keyError = protocolErrorOf(() => decodeDataPortRequest(unknownKey));
    expect(keyError.code).toBe(ProtocolErrorCode.UnsupportedVersion);
    expect(keyError.message).toMatch(/apiKey 77 at byte 4/);
    expect(decodeDataPortRequestHeader(unknownKey).correlationId).toBe(12);
    const unknownVersion = new FrameWriter().u16(DataPortApiKey.Fetch).u16(3).u32(13).finish();
    const versionError = protocolErrorOf(() => decodeDataPortRequest(unknownVersion));
    expect(versionError.code).toBe(ProtocolErrorCode.UnsupportedVersion);
    expect(versionError.message).toMatch(/Fetch version 3 at byte 6/);
  });

  it('responses with an unknown apiKey', () => {
    const frame = new FrameWriter().u32(1).u16(9).finish();
    expect(protocolErrorOf(() => decodeDataPortResponse(frame)).message).toMatch(
      /field apiKey at byte 8 is not an API/,
    );
  });
});

describe('encoders refuse values outside their fields', () => {
  it('throws RangeError for out-of-range integers and over-long topics', () => {
    const base: DataPortFetchRequest = {
      replicaId: -1,
      brokerEpoch: -1n,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 0,
      partitions: [],
    };
    expect(() => encodeFetchRequest(1, { ...base, maxBytes: 2 ** 31 })).toThrow(RangeError);
    expect(() => encodeFetchRequest(1, { ...base, maxWaitMs: 1.5 })).toThrow(RangeError);
    expect(() => encodeFetchRequest(2 ** 32, base)).toThrow(RangeError);
    expect(() => encodeFetchRequest(1, { ...base, brokerEpoch: 2n ** 63n })).toThrow(RangeError);
    const topic = 'x'.repeat(stringBytesMax + 1);
    expect(() =>
      encodeOffsetForLeaderEpochRequest(1, {
        replicaId: 1,
        partitions: [{ topic, partition: 0, currentLeaderEpoch: 0, leaderEpoch: 0 }],
      }),
    ).toThrow(RangeError);
  });
});
