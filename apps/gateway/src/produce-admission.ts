import { SpoolError } from '@spool/common';
/**
 * The bound on produce bytes one client connection has in flight through the gateway (held from
 * the request's arrival until every leader answered). A client that pipelines faster than the
 * leaders absorb gets THROTTLING_QUOTA_EXCEEDED, retriable, instead of growing the gateway's
 * memory; one request larger than the whole bound can never pass and is refused for good with
 * RECORD_LIST_TOO_LARGE.
 */

export class ProduceAdmission {
  private readonly bytesByPeer = new Map<string, number>();
  private totalBytes = 0;

  constructor(private readonly perPeerBytesMax: number) {}

  /** Produce bytes in flight over all clients, for the gauge. */
  get inFlightBytes(): number {
    return this.totalBytes;
  }

  inFlightBytesOf(peer: string): number {
    return this.bytesByPeer.get(peer) ?? 0;
  }

  /** Admits `bytes` for `peer` or throws; the returned function gives them back, once. */
  admit(peer: string, bytes: number): () => void {
    if (bytes > this.perPeerBytesMax) {
      throw new SpoolError(
        'RECORD_LIST_TOO_LARGE',
        `the request carries ${bytes} bytes of records, more than the ${this.perPeerBytesMax} ` +
          'a client may have in flight (produceInFlightBytesMax)',
      );
    }
    const current = this.inFlightBytesOf(peer);
    if (current + bytes > this.perPeerBytesMax) {
      throw new SpoolError(
        'THROTTLING_QUOTA_EXCEEDED',
        `client ${peer} already has ${current} produce bytes in flight; ${bytes} more would ` +
          `pass produceInFlightBytesMax ${this.perPeerBytesMax}; retry once earlier requests ` +
          'are answered',
      );
    }
    this.bytesByPeer.set(peer, current + bytes);
    this.totalBytes += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const remaining = this.inFlightBytesOf(peer) - bytes;
      if (remaining === 0) this.bytesByPeer.delete(peer);
      else this.bytesByPeer.set(peer, remaining);
      this.totalBytes -= bytes;
    };
  }
}
