// Proves the hand-written PublishRequest and PublishStreamRequest decoders read exactly what the
// generated ts-proto decoder reads, for messages the generated encoder wrote: absent and empty
// optional fields, headers with and without values, negative and large int64 timestamps, unknown
// fields; and that keys and values are views into the message, not copies.
import { describe, expect, it } from 'vitest';
import {
  PublishRequest,
  PublishStreamRequest,
  type PublishRecord,
} from './generated/spool/v1/record';
import { decodePublishRequest, decodePublishStreamRequest } from './publish-request-codec';

const records: PublishRecord[] = [
  { key: undefined, value: undefined, headers: [], partition: undefined, timestampMs: undefined },
  {
    key: Buffer.alloc(0),
    value: Buffer.from('value'),
    headers: [
      { key: 'a', value: Buffer.from('1') },
      { key: 'a', value: undefined },
      { key: 'é', value: Buffer.alloc(0) },
    ],
    partition: 0,
    timestampMs: 0n,
  },
  {
    key: Buffer.from('key'),
    value: Buffer.alloc(1_024, 7),
    headers: [],
    partition: 2_147_483_647,
    timestampMs: 9_223_372_036_854_775_807n,
  },
  { key: Buffer.from('k'), value: Buffer.from('v'), headers: [], partition: 3, timestampMs: -1n },
];

describe('decodePublishRequest', () => {
  it('reads what the generated decoder reads', () => {
    for (const request of [
      { topic: 'orders', records, acks: 3, idempotencyKey: 'key-1', timeoutMs: 5_000 },
      { topic: '', records: [], acks: 0, idempotencyKey: '', timeoutMs: 0 },
    ]) {
      const bytes = Buffer.from(PublishRequest.encode(request).finish());
      expect(decodePublishRequest(bytes)).toEqual(PublishRequest.decode(bytes));
    }
  });

  it('returns keys and values as views into the message', () => {
    const bytes = Buffer.from(
      PublishRequest.encode({
        topic: 't',
        records: [records[2]!],
        acks: 0,
        idempotencyKey: '',
        timeoutMs: 0,
      }).finish(),
    );
    const decoded = decodePublishRequest(bytes);
    expect(decoded.records[0]!.value!.buffer).toBe(bytes.buffer);
  });

  it('skips fields it does not know', () => {
    const known = Buffer.from(
      PublishRequest.encode({
        topic: 't',
        records,
        acks: 1,
        idempotencyKey: '',
        timeoutMs: 0,
      }).finish(),
    );
    // Field 9, length-delimited, then field 10, a varint.
    const bytes = Buffer.concat([Buffer.from([0x4a, 0x02, 0x01, 0x02, 0x50, 0x05]), known]);
    expect(decodePublishRequest(bytes)).toEqual(PublishRequest.decode(bytes));
  });
});

describe('decodePublishStreamRequest', () => {
  it('reads what the generated decoder reads', () => {
    for (const message of [
      {
        sequence: 18_446_744_073_709_551_615n,
        request: { topic: 'x', records, acks: 2, idempotencyKey: '', timeoutMs: 0 },
      },
      { sequence: 0n, request: undefined },
    ]) {
      const bytes = Buffer.from(PublishStreamRequest.encode(message).finish());
      expect(decodePublishStreamRequest(bytes)).toEqual(PublishStreamRequest.decode(bytes));
    }
  });
});
