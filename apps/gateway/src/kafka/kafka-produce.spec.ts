// Proves how the Kafka listener tells an idempotent producer's records from others, from the
// first batch's header alone: a producer id of 0 or more is idempotent (a transactional batch
// too); -1, a header cut short and a magic other than 2 are not, and go through the gateway's
// usual retries (the leader refuses bytes that are not a batch). And which number a producer
// reads for an error of Spool's own.
import { encodeRecordBatch } from '@spool/record-batch';
import { describe, expect, it } from 'vitest';
import { isIdempotentBatch, produceErrorOf } from './kafka-produce';

function batch(producerId: bigint): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    producerId,
    producerEpoch: producerId >= 0n ? 0 : -1,
    baseSequence: producerId >= 0n ? 5 : -1,
    records: [{ key: null, value: Buffer.from('value'), timestampMs: 1_700_000_000_000n }],
  });
}

describe('isIdempotentBatch', () => {
  it('is true for a batch with a producer id, false without one', () => {
    expect(isIdempotentBatch(batch(0n))).toBe(true);
    expect(isIdempotentBatch(batch(7_000_000_000n))).toBe(true);
    expect(isIdempotentBatch(batch(-1n))).toBe(false);
  });

  it('is false for bytes that are not a whole v2 batch header', () => {
    const idempotent = batch(3n);
    expect(isIdempotentBatch(idempotent.subarray(0, 60))).toBe(false);
    expect(isIdempotentBatch(Buffer.alloc(0))).toBe(false);
    const otherMagic = Buffer.from(idempotent);
    otherMagic[16] = 1;
    expect(isIdempotentBatch(otherMagic)).toBe(false);
  });
});

describe('produceErrorOf', () => {
  it("sends Spool's own retriable errors as REQUEST_TIMED_OUT, others by their Kafka number", () => {
    const unreachable = { code: 'UNAVAILABLE', message: 'leader broker 2: down', retriable: true };
    expect(produceErrorOf(unreachable)).toEqual({
      errorCode: 7,
      errorMessage: unreachable.message,
    });
    const notLeader = { code: 'NOT_LEADER_OR_FOLLOWER', message: 'moved', retriable: true };
    expect(produceErrorOf(notLeader).errorCode).toBe(6);
    const corrupt = { code: 'CORRUPT_MESSAGE', message: 'bad crc', retriable: false };
    expect(produceErrorOf(corrupt).errorCode).toBe(2);
    const closed = { code: 'METADATA_STORE_CLOSED', message: 'closed', retriable: false };
    expect(produceErrorOf(closed).errorCode).toBe(-1);
    expect(produceErrorOf(undefined)).toEqual({ errorCode: 0, errorMessage: null });
  });
});
