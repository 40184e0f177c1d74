// Proves the Consume credit accounting: grants add up, reservations share the available credit
// fairly and never exceed the per-fetch bound, settling returns what was not sent, an overdraft
// of one batch leaves the credit negative until more is granted, and a negative grant or one
// past consumeCreditBytesMax is refused naming credit_bytes.
import { describe, expect, it } from 'vitest';
import { CreditAccount } from './credit-account';

describe('CreditAccount', () => {
  it('reserves fair shares and settles what was sent', () => {
    const credit = new CreditAccount(1_000_000);
    expect(credit.reserve(1, 1_000)).toBe(0);
    credit.grant(300n);
    // Three leaders share 300 bytes: 100 each, the last gets what is left.
    expect(credit.reserve(3, 1_000)).toBe(100);
    expect(credit.reserve(2, 1_000)).toBe(100);
    expect(credit.reserve(1, 1_000)).toBe(100);
    expect(credit.available).toBe(0);
    expect(credit.reserved).toBe(300);
    expect(credit.reserve(1, 1_000)).toBe(0);
    credit.settle(100, 40);
    credit.settle(100, 100);
    expect(credit.available).toBe(60);
    // The per-fetch bound caps a reservation whatever the credit.
    credit.grant(10_000n);
    expect(credit.reserve(1, 1_000)).toBe(1_000);
  });

  it('goes below zero after an overdraft and waits for the next grant', () => {
    const credit = new CreditAccount(1_000_000);
    credit.grant(50n);
    const reserved = credit.reserve(1, 1_000);
    // The first batch came whole: 120 bytes against a reservation of 50.
    credit.settle(reserved, 120);
    expect(credit.available).toBe(-70);
    expect(credit.reserve(1, 1_000)).toBe(0);
    credit.grant(100n);
    expect(credit.available).toBe(30);
    expect(credit.reserve(1, 1_000)).toBe(30);
  });

  it('refuses negative grants and grants past the bound', () => {
    const credit = new CreditAccount(1_000);
    expect(() => credit.grant(-1n)).toThrow(/credit_bytes is -1/);
    credit.grant(600n);
    credit.reserve(1, 500);
    expect(() => credit.grant(401n)).toThrow(
      expect.objectContaining({
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(/consumeCreditBytesMax/),
      }),
    );
    credit.grant(400n);
    expect(credit.available + credit.reserved).toBe(1_000);
  });
});
