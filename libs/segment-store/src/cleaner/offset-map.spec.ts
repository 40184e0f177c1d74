// Proves the cleaner's offset map against a plain Map: the latest offset of every key it took,
// no key it refused, refusals only when full, and full at its load factor of the memory given.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OffsetMap } from './offset-map';

describe('OffsetMap', () => {
  it('answers every key with its latest offset, as a Map would, until it is full', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.uint8Array({ minLength: 0, maxLength: 6 }), fc.nat(1_000_000)), {
          maxLength: 300,
        }),
        fc.integer({ min: 1, max: 64 }),
        (puts, slots) => {
          const map = new OffsetMap(slots * 25, 0.75);
          const model = new Map<string, bigint>();
          let latest = -1n;
          for (const [keyBytes, offsetNumber] of puts) {
            const key = Buffer.from(keyBytes);
            const offset = BigInt(offsetNumber);
            const known = model.has(key.toString('hex'));
            const wasFull = map.full;
            const taken = map.put(key, offset);
            expect(taken).toBe(known || !wasFull);
            if (taken) {
              model.set(key.toString('hex'), offset);
              if (offset > latest) latest = offset;
            }
          }
          for (const [hex, offset] of model) expect(map.get(Buffer.from(hex, 'hex'))).toBe(offset);
          expect(map.size).toBe(model.size);
          expect(map.latestOffset).toBe(latest);
          expect(map.size).toBeLessThanOrEqual(map.keyCountMax);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('sizes itself from its memory and load factor, and a full map at load factor 1 overwrites nothing', () => {
    const map = new OffsetMap(4 * 25, 1);
    expect(map.slotCount).toBe(4);
    expect(map.keyCountMax).toBe(4);
    for (let index = 0; index < 4; index++) {
      expect(map.put(Buffer.from(`k${index}`), BigInt(index))).toBe(true);
    }
    expect(map.full).toBe(true);
    expect(map.put(Buffer.from('another'), 99n)).toBe(false);
    expect(map.get(Buffer.from('another'))).toBeUndefined();
    for (let index = 0; index < 4; index++)
      expect(map.get(Buffer.from(`k${index}`))).toBe(BigInt(index));
    expect(map.put(Buffer.from('k2'), 7n)).toBe(true);
    expect(map.get(Buffer.from('k2'))).toBe(7n);
    map.clear();
    expect(map.size).toBe(0);
    expect(map.get(Buffer.from('k2'))).toBeUndefined();
    expect(map.latestOffset).toBe(-1n);
  });
});
