// Proves the generated messages are wired as configured: int64 fields surface as bigint
// (forceLong=bigint) and survive an encode/decode round trip at the extremes of the range.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { AppendRequest, PartitionAppendResult, protoDescriptorSetPath } from './index';

describe('generated protocol messages', () => {
  it('carries int64 offsets as bigint without losing precision', () => {
    const result = {
      topic: 'orders',
      partition: 3,
      error: undefined,
      baseOffset: 9_223_372_036_854_775_807n,
      lastOffset: -1n,
      logAppendTimeMs: 1_700_000_000_000n,
      logStartOffset: 0n,
    };
    const decoded = PartitionAppendResult.decode(PartitionAppendResult.encode(result).finish());
    expect(decoded.baseOffset).toBe(9_223_372_036_854_775_807n);
    expect(decoded.lastOffset).toBe(-1n);
    expect(decoded.topic).toBe('orders');
  });

  it('keeps record batch bytes opaque', () => {
    const records = Buffer.from([0, 1, 2, 255]);
    const request = { partitions: [{ topic: 't', partition: 0, records }], acks: 3, timeoutMs: 5 };
    const decoded = AppendRequest.decode(AppendRequest.encode(request).finish());
    expect(Buffer.from(decoded.partitions[0]!.records)).toEqual(records);
  });

  it('ships the descriptor set that server reflection loads', () => {
    expect(existsSync(protoDescriptorSetPath)).toBe(true);
  });
});
