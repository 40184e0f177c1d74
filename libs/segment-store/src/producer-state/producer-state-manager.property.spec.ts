// Proves, over random schedules (fast-check), the promise the leader's producer checks exist
// for: a producer with up to five batches in flight, whose requests arrive in any order, are
// refused before the write or written with their answer lost, and which resends each batch
// with the same sequence until it is acknowledged, ends with every batch in the log exactly
// once and in sequence order, and each acknowledgement names the offsets the batch really has.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { incrementSequence } from '@spool/record-batch';
import { ProducerStateManager, type ProducerBatchHeader } from './producer-state-manager';

interface Batch {
  readonly index: number;
  readonly header: ProducerBatchHeader;
  readonly recordCount: number;
}

type Fate = 'ok' | 'refusedBeforeWrite' | 'answerLost';

const schedule = fc.record({
  recordCounts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 25 }),
  // Near the int32 end, so some runs wrap their sequences.
  firstSequence: fc.oneof(fc.constant(0), fc.constant(0x7fffffff - 6)),
  steps: fc.array(
    fc.record({
      send: fc.boolean(),
      pick: fc.nat(),
      fate: fc.constantFrom<Fate>('ok', 'ok', 'refusedBeforeWrite', 'answerLost'),
    }),
    { maxLength: 200 },
  ),
});

describe('ProducerStateManager (property)', () => {
  it('keeps every batch exactly once, in order, through reordering, refusals and lost answers', () => {
    fc.assert(
      fc.property(schedule, ({ recordCounts, firstSequence, steps }) => {
        const state = new ProducerStateManager('p-0');
        const log: Array<{ index: number; baseOffset: bigint; lastOffset: bigint }> = [];
        let logEndOffset = 0n;
        // The producer starts mid-life when its first sequence is not 0: the leader knows it.
        if (firstSequence !== 0) {
          state.update(
            {
              producerId: 1n,
              producerEpoch: 0,
              baseSequence: incrementSequence(firstSequence, -1),
              lastSequence: incrementSequence(firstSequence, -1),
              maxTimestampMs: 0,
            },
            0n,
            0n,
          );
          log.push({ index: -1, baseOffset: 0n, lastOffset: 0n });
          logEndOffset = 1n;
        }
        let nextSequence = firstSequence;
        const batches: Batch[] = recordCounts.map((recordCount, index) => {
          const header = {
            producerId: 1n,
            producerEpoch: 0,
            baseSequence: nextSequence,
            lastSequence: incrementSequence(nextSequence, recordCount - 1),
            maxTimestampMs: 0,
          };
          nextSequence = incrementSequence(nextSequence, recordCount);
          return { index, header, recordCount };
        });
        const acknowledged = new Map<number, { baseOffset: bigint; lastOffset: bigint }>();
        const inFlight: Batch[] = [];
        let unsent = 0;

        const deliver = (batch: Batch, fate: Fate): void => {
          if (fate === 'refusedBeforeWrite') return;
          let check;
          try {
            check = state.checkLeaderAppend([batch.header]);
          } catch (error) {
            // An earlier batch has not landed yet (the first ones: the producer is not known
            // yet); the producer resends this one after it.
            expect(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID']).toContain(
              (error as { code: string }).code,
            );
            return;
          }
          let offsets;
          if (check.kind === 'duplicate') offsets = check;
          else {
            offsets = {
              baseOffset: logEndOffset,
              lastOffset: logEndOffset + BigInt(batch.recordCount) - 1n,
            };
            log.push({ index: batch.index, ...offsets });
            state.update(batch.header, offsets.baseOffset, offsets.lastOffset);
            logEndOffset = offsets.lastOffset + 1n;
          }
          if (fate === 'answerLost') return;
          acknowledged.set(batch.index, {
            baseOffset: offsets.baseOffset,
            lastOffset: offsets.lastOffset,
          });
        };

        const step = (send: boolean, pick: number, fate: Fate): void => {
          const pending = inFlight.filter((batch) => !acknowledged.has(batch.index));
          inFlight.splice(0, inFlight.length, ...pending);
          // The producer sends the next batch only while fewer than five are unacknowledged.
          if ((send || inFlight.length === 0) && unsent < batches.length && inFlight.length < 5) {
            inFlight.push(batches[unsent++]!);
            return;
          }
          if (inFlight.length === 0) return;
          deliver(inFlight[pick % inFlight.length]!, fate);
        };

        for (const { send, pick, fate } of steps) step(send, pick, fate);
        // Then the network heals: resend in order until everything is acknowledged.
        for (let round = 0; acknowledged.size < batches.length; round++) {
          expect(round).toBeLessThan(10_000);
          step(true, 0, 'ok');
        }

        const written = log.filter((entry) => entry.index >= 0);
        expect(written.map((entry) => entry.index)).toEqual(batches.map((batch) => batch.index));
        for (const { index, baseOffset, lastOffset } of written) {
          expect(acknowledged.get(index)).toEqual({ baseOffset, lastOffset });
        }
      }),
      { numRuns: 300 },
    );
  });
});
