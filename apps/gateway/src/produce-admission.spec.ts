// Proves the per-connection bound on produce bytes in flight: requests are admitted up to the
// bound per peer (other peers unaffected), the next is refused with THROTTLING_QUOTA_EXCEEDED
// (retriable) until bytes are released, releasing twice counts once, and a request larger than
// the bound itself is refused for good with RECORD_LIST_TOO_LARGE.
import { describe, expect, it } from 'vitest';
import { ProduceAdmission } from './produce-admission';

describe('ProduceAdmission', () => {
  it('bounds the bytes each peer has in flight', () => {
    const admission = new ProduceAdmission(1_000);
    const first = admission.admit('ipv4:198.18.0.1:5000', 600);
    const second = admission.admit('ipv4:198.18.0.1:5000', 400);
    expect(() => admission.admit('ipv4:198.18.0.1:5000', 1)).toThrow(
      expect.objectContaining({ code: 'THROTTLING_QUOTA_EXCEEDED', retriable: true }),
    );
    const other = admission.admit('ipv4:198.18.0.2:5000', 1_000);
    expect(admission.inFlightBytes).toBe(2_000);
    first();
    first();
    expect(admission.inFlightBytesOf('ipv4:198.18.0.1:5000')).toBe(400);
    admission.admit('ipv4:198.18.0.1:5000', 600)();
    second();
    other();
    expect(admission.inFlightBytes).toBe(0);
    expect(() => admission.admit('ipv4:198.18.0.3:5000', 1_001)).toThrow(
      expect.objectContaining({ code: 'RECORD_LIST_TOO_LARGE', retriable: false }),
    );
  });
});
