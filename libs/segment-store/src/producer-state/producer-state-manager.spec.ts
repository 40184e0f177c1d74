// Proves the leader's idempotent-producer checks case by case (Kafka's checkSequence): a
// duplicate of any of the last five batches is recognised with its original offsets, a sixth
// older one is not; gaps, stale epochs, a new epoch not starting at 0 and an unknown producer
// past sequence 0 are refused with Kafka's codes; sequences wrap at int32; a request's batches
// are checked against each other; expiration and the producer bound forget the right producers.
import { describe, expect, it } from 'vitest';
import { incrementSequence } from '@spool/record-batch';
import { ProducerStateManager, type ProducerBatchHeader } from './producer-state-manager';

function batch(
  producerId: bigint,
  producerEpoch: number,
  baseSequence: number,
  recordCount: number,
  maxTimestampMs = 1_000,
): ProducerBatchHeader {
  return {
    producerId,
    producerEpoch,
    baseSequence,
    lastSequence: incrementSequence(baseSequence, recordCount - 1),
    maxTimestampMs,
  };
}

/** Writes `header` as the log would, at the next offsets after `end`. */
function write(state: ProducerStateManager, header: ProducerBatchHeader, baseOffset: bigint) {
  const recordCount = BigInt(
    header.lastSequence >= header.baseSequence
      ? header.lastSequence - header.baseSequence + 1
      : 0x7fffffff - header.baseSequence + header.lastSequence + 2,
  );
  expect(state.checkLeaderAppend([header])).toEqual({ kind: 'append' });
  state.update(header, baseOffset, baseOffset + recordCount - 1n);
  return baseOffset + recordCount;
}

describe('ProducerStateManager', () => {
  it('answers a duplicate of any of the last five batches with its original offsets', () => {
    const state = new ProducerStateManager('t-0');
    let offset = 100n;
    for (let index = 0; index < 6; index++)
      offset = write(state, batch(7n, 0, index * 2, 2), offset);
    // Batches 1-5 (sequences 2..11) are retained; batch 0 (0-1) is the sixth oldest.
    expect(state.checkLeaderAppend([batch(7n, 0, 2, 2)])).toEqual({
      kind: 'duplicate',
      baseOffset: 102n,
      lastOffset: 103n,
    });
    expect(state.checkLeaderAppend([batch(7n, 0, 10, 2)])).toEqual({
      kind: 'duplicate',
      baseOffset: 110n,
      lastOffset: 111n,
    });
    expect(() => state.checkLeaderAppend([batch(7n, 0, 0, 2)])).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
  });

  it('refuses a gap, a stale epoch and a new epoch that does not start at 0', () => {
    const state = new ProducerStateManager('t-0');
    write(state, batch(7n, 3, 0, 5), 0n);
    expect(() => state.checkLeaderAppend([batch(7n, 3, 6, 1)])).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER', retriable: false }),
    );
    expect(() => state.checkLeaderAppend([batch(7n, 2, 5, 1)])).toThrow(
      expect.objectContaining({ code: 'INVALID_PRODUCER_EPOCH' }),
    );
    expect(() => state.checkLeaderAppend([batch(7n, 4, 5, 1)])).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
    // A new epoch from 0 resets: the old epoch's batches are no longer duplicates.
    write(state, batch(7n, 4, 0, 1), 5n);
    expect(state.get(7n)).toMatchObject({ producerEpoch: 4, batches: [{ baseSequence: 0 }] });
    expect(() => state.checkLeaderAppend([batch(7n, 3, 0, 5)])).toThrow(
      expect.objectContaining({ code: 'INVALID_PRODUCER_EPOCH' }),
    );
  });

  it('refuses an unknown producer past sequence 0 and a batch without epoch or sequence', () => {
    const state = new ProducerStateManager('t-0');
    expect(() => state.checkLeaderAppend([batch(9n, 0, 17, 1)])).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_PRODUCER_ID' }),
    );
    expect(() => state.checkLeaderAppend([batch(9n, -1, 0, 1)])).toThrow(
      expect.objectContaining({
        code: 'INVALID_RECORD',
        message: expect.stringContaining('epoch'),
      }),
    );
    expect(state.checkLeaderAppend([batch(9n, 0, 0, 1)])).toEqual({ kind: 'append' });
    expect(state.checkLeaderAppend([batch(-1n, -1, -1, 1)])).toEqual({ kind: 'append' });
  });

  it('continues sequences across the int32 wrap', () => {
    const state = new ProducerStateManager('t-0');
    state.update(batch(7n, 0, 0x7fffffff - 9, 10), 0n, 9n);
    expect(state.checkLeaderAppend([batch(7n, 0, 0, 3)])).toEqual({ kind: 'append' });
    const wrapping = batch(7n, 0, 0x7fffffff - 1, 4);
    expect(wrapping.lastSequence).toBe(1);
    state.update(batch(7n, 0, 0, 3), 10n, 12n);
    expect(() => state.checkLeaderAppend([batch(7n, 0, 4, 1)])).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
  });

  it("checks a request's batches against each other and refuses a duplicate mixed with new", () => {
    const state = new ProducerStateManager('t-0');
    expect(state.checkLeaderAppend([batch(7n, 0, 0, 2), batch(7n, 0, 2, 2)])).toEqual({
      kind: 'append',
    });
    expect(() => state.checkLeaderAppend([batch(7n, 0, 0, 2), batch(7n, 0, 3, 2)])).toThrow(
      expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
    expect(state.producerCount).toBe(0);
    write(state, batch(7n, 0, 0, 2), 0n);
    expect(() => state.checkLeaderAppend([batch(7n, 0, 0, 2), batch(7n, 0, 2, 2)])).toThrow(
      expect.objectContaining({ code: 'INVALID_RECORD' }),
    );
  });

  it('expires idle producers and evicts the least recently active past the bound', () => {
    const state = new ProducerStateManager('t-0', {
      producerIdExpirationMs: 1_000,
      maxProducers: 3,
    });
    state.update(batch(1n, 0, 0, 1, 5_000), 0n, 0n);
    state.update(batch(2n, 0, 0, 1, 9_000), 1n, 1n);
    state.update(batch(3n, 0, 0, 1, 9_500), 2n, 2n);
    state.update(batch(1n, 0, 1, 1, 9_600), 3n, 3n);
    state.update(batch(4n, 0, 0, 1, 9_700), 4n, 4n);
    // Producer 2 was updated least recently when producer 4 arrived.
    expect([...state.entries()].map((entry) => entry.producerId)).toEqual([3n, 1n, 4n]);
    expect(state.removeExpiredProducers(10_550)).toBe(1);
    expect([...state.entries()].map((entry) => entry.producerId)).toEqual([1n, 4n]);
  });
});
