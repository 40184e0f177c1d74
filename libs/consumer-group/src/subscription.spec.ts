// Proves regex subscriptions follow Kafka's RE2 rules as far as a JavaScript RegExp can: the
// pattern matches whole topic names, internal topics never match, constructs RE2 refuses are
// refused with INVALID_REGULAR_EXPRESSION (Kafka 4's answer) naming subscribedRegex, an overlong
// pattern with INVALID_REQUEST, and named topics resolve only if they exist.
import { describe, expect, it } from 'vitest';
import {
  compileSubscribedRegex,
  isInternalTopic,
  matchingTopics,
  resolveSubscription,
} from './subscription';
import { TestTopics } from './testing';

const topics = new TestTopics({
  orders: 3,
  'orders-eu': 2,
  'orders-us': 4,
  'old-orders-eu': 1,
  __consumer_offsets: 50,
});

describe('regex subscriptions', () => {
  it('matches whole topic names only', () => {
    expect(matchingTopics(compileSubscribedRegex('orders-.*', 100), topics).sort()).toEqual([
      'orders-eu',
      'orders-us',
    ]);
    expect(matchingTopics(compileSubscribedRegex('orders', 100), topics)).toEqual(['orders']);
    expect(matchingTopics(compileSubscribedRegex('eu', 100), topics)).toEqual([]);
  });

  it('never matches internal topics', () => {
    expect(isInternalTopic('__consumer_offsets')).toBe(true);
    expect(isInternalTopic('orders')).toBe(false);
    expect(matchingTopics(compileSubscribedRegex('.*', 100), topics)).not.toContain(
      '__consumer_offsets',
    );
  });

  it('refuses what RE2 does not support, and malformed or overlong patterns', () => {
    const refusal = (pattern: string, lengthMax: number): { code?: string; message?: string } => {
      try {
        compileSubscribedRegex(pattern, lengthMax);
      } catch (error) {
        return error as { code?: string; message?: string };
      }
      return {};
    };
    for (const pattern of [
      '(a)\\1',
      '(?<x>a)\\k<x>',
      'a(?=b)',
      'a(?!b)',
      '(?<=a)b',
      '(?<!a)b',
      '[',
      'a{2,1}',
    ]) {
      const caught = refusal(pattern, 100);
      expect(caught.code, pattern).toBe('INVALID_REGULAR_EXPRESSION');
      expect(caught.message, pattern).toContain('subscribedRegex');
    }
    // Spool's own bound, which RE2J does not have: a request that is too large.
    expect(refusal('a'.repeat(11), 10)).toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('subscribedRegex') as unknown,
    });
  });

  it('accepts an escaped backslash before a digit and named groups', () => {
    expect(compileSubscribedRegex('a\\\\1', 100).test('a\\1')).toBe(true);
    expect(compileSubscribedRegex('(?<region>eu|us)-orders', 100).test('eu-orders')).toBe(true);
  });
});

describe('resolving a subscription', () => {
  it('keeps named topics that exist, with their partition counts, and adds regex matches', () => {
    const resolved = resolveSubscription(['orders', 'missing'], undefined, topics);
    expect([...resolved]).toEqual([['orders', 3]]);
    const byRegex = resolveSubscription([], compileSubscribedRegex('.*-eu', 100), topics);
    expect(new Map(byRegex)).toEqual(
      new Map([
        ['orders-eu', 2],
        ['old-orders-eu', 1],
      ]),
    );
  });
});
