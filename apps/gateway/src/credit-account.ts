import { SpoolError } from '@spool/common';
/**
 * The credit of one Consume stream: bytes the client said it is ready to receive. Fetches reserve
 * credit before they go out, so concurrent fetches at several leaders never promise more than
 * was granted, and settle it when they return with what was actually sent.
 *
 * 1. A grant adds to the credit; a negative grant, or one that would leave more than
 *    `outstandingBytesMax` granted and not yet used, is refused (INVALID_REQUEST naming
 *    credit_bytes): silently capping it would leave a client waiting for bytes that never come.
 * 2. A reservation takes a fair share of what is available: available / shares, rounded up,
 *    at most `fetchBytesMax`; nothing while the credit is used up.
 * 3. Settling returns what a fetch reserved and did not send. A push may exceed its reservation
 *    by one batch (the first batch comes whole, Kafka's KIP-74), so the credit can go below
 *    zero; fetching then waits until grants bring it above zero again.
 */

export class CreditAccount {
  private availableBytes = 0;
  private reservedBytes = 0;

  constructor(private readonly outstandingBytesMax: number) {}

  /** Credit not yet reserved; negative after an overdraft (point 3). */
  get available(): number {
    return this.availableBytes;
  }

  get reserved(): number {
    return this.reservedBytes;
  }

  /** Point 1. */
  grant(bytes: bigint): void {
    if (bytes < 0n) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `credit_bytes is ${bytes}; a grant must not be negative`,
      );
    }
    const outstandingBytes = BigInt(Math.max(0, this.availableBytes) + this.reservedBytes) + bytes;
    if (outstandingBytes > BigInt(this.outstandingBytesMax)) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `credit_bytes ${bytes} would give the stream ${outstandingBytes} bytes of credit, more ` +
          `than the ${this.outstandingBytesMax} a stream may hold (consumeCreditBytesMax)`,
      );
    }
    this.availableBytes += Number(bytes);
  }

  /** Point 2: returns the bytes reserved, 0 when there is no credit. */
  reserve(shares: number, fetchBytesMax: number): number {
    if (this.availableBytes <= 0) return 0;
    const bytes = Math.min(fetchBytesMax, Math.ceil(this.availableBytes / Math.max(1, shares)));
    this.availableBytes -= bytes;
    this.reservedBytes += bytes;
    return bytes;
  }

  /** Point 3. */
  settle(reservedBytes: number, sentBytes: number): void {
    this.reservedBytes -= reservedBytes;
    this.availableBytes += reservedBytes - sentBytes;
  }
}
