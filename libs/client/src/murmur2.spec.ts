// Proves Spool's murmur2 is Kafka's: the expected values are the ones in Kafka's own
// UtilsTest.testMurmur2, and the partition follows Kafka's toPositive(hash) % partitions.
import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey, toPositive } from './murmur2';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('murmur2', () => {
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('hashes %j as Kafka does', (key, expected) => {
    expect(murmur2(utf8(key))).toBe(expected);
  });

  it('maps keys to partitions with toPositive, not abs', () => {
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-1)).toBe(2147483647);
    expect(partitionForKey(utf8('foobar'), 6)).toBe((-790332482 & 0x7fffffff) % 6);
    expect(() => partitionForKey(utf8('x'), 0)).toThrow(/positive integer/);
  });
});
