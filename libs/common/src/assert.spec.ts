// Proves assert() throws an AssertionError with its message when, and only when, it fails.
import { describe, expect, it } from 'vitest';
import { assert, AssertionError } from './assert';

describe('assert', () => {
  it('passes on truthy and throws on falsy', () => {
    expect(() => assert(1 + 1 === 2, 'math')).not.toThrow();
    expect(() => assert(false, 'offsets must be contiguous')).toThrow(AssertionError);
    expect(() => assert(0, 'offsets must be contiguous')).toThrow('offsets must be contiguous');
  });
});
