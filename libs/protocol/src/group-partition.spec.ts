// Proves groups hash to the __consumer_offsets partition Kafka would choose: Java's
// String.hashCode values (known constants) and Kafka's abs edge case.
import { describe, expect, it } from 'vitest';
import { groupPartition, javaStringHashCode } from './group-partition';

describe('groupPartition', () => {
  it('reproduces Java String.hashCode', () => {
    expect(javaStringHashCode('')).toBe(0);
    expect(javaStringHashCode('a')).toBe(97);
    expect(javaStringHashCode('hello')).toBe(99162322);
    expect(javaStringHashCode('polygenelubricants')).toBe(-2147483648);
    expect(javaStringHashCode('ü')).toBe(252);
  });

  it('maps a group to abs(hashCode) % partitions, with abs(MIN_VALUE) = 0', () => {
    expect(groupPartition('hello')).toBe(99162322 % 50);
    expect(groupPartition('polygenelubricants')).toBe(0);
    expect(groupPartition('a', 7)).toBe(97 % 7);
  });
});
