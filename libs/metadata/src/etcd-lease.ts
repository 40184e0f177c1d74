/**
 * An etcd lease kept alive from this process, with our own keepalive loop on etcd's LeaseKeepAlive
 * stream (rather than etcd3's `Lease`, which declares a lease lost only after twice its TTL).
 *
 * 1. Every TTL/3 (what etcd's Go client does) one keepalive is sent; only one is in flight.
 * 2. etcd answers with the TTL it granted again. The lease then lives on the server until at least
 *    `sent time + TTL`, because etcd reset its clock after the request left. That instant is our
 *    local expiry: a lease is reported lost no later than etcd could have expired it.
 * 3. An answer of TTL ≤ 0 means etcd no longer knows the lease (expired, or revoked by someone
 *    else): lost at once.
 * 4. A broken stream is reopened at the next tick (the pool picks a reachable endpoint); a
 *    keepalive unanswered for a whole interval drops the stream the same way. Nothing is retried
 *    past the local expiry: when it passes, the lease is lost and its keys are gone.
 */
import type {
  ILeaseKeepAliveRequest,
  ILeaseKeepAliveResponse,
  IDuplexStream,
  LeaseClient,
} from 'etcd3';
import type { Lease } from './metadata-store';

type KeepAliveStream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

/** The shortest keepalive interval, so a tiny TTL cannot turn the loop into a busy loop. */
const keepAliveIntervalMsMin = 100;

export class EtcdLease implements Lease {
  readonly ttlMs: number;
  private aliveValue = true;
  private listeners: (() => void)[] = [];
  private stream: KeepAliveStream | undefined;
  private streamOpening = false;
  private keepAliveSentAtMs: number | undefined;
  private expiresAtMs: number;
  private readonly keepAliveIntervalMs: number;
  private readonly keepAliveTimer: NodeJS.Timeout;
  private expiryTimer: NodeJS.Timeout | undefined;

  /**
   * @param grantSentAtMs when the grant request left: the first local expiry counts from it.
   * @param onEnd tells the store the lease is over (lost or revoked), so close() skips it.
   */
  constructor(
    private readonly leaseClient: LeaseClient,
    readonly id: bigint,
    ttlSeconds: number,
    grantSentAtMs: number,
    private readonly revokeInEtcd: (id: bigint) => Promise<void>,
    private readonly onEnd: (lease: EtcdLease) => void,
  ) {
    this.ttlMs = ttlSeconds * 1000;
    this.expiresAtMs = grantSentAtMs + this.ttlMs;
    this.keepAliveIntervalMs = Math.max(keepAliveIntervalMsMin, Math.floor(this.ttlMs / 3));
    this.keepAliveTimer = setInterval(() => this.keepAlive(), this.keepAliveIntervalMs);
    this.armExpiryTimer();
    this.keepAlive();
  }

  get alive(): boolean {
    return this.aliveValue;
  }

  onLost(listener: () => void): void {
    if (this.aliveValue) this.listeners.push(listener);
    else queueMicrotask(listener);
  }

  /**
   * Stops the keepalives and revokes the lease in etcd, which deletes its keys at once. The
   * lease counts as lost even if etcd cannot be reached: without keepalives it expires within
   * its TTL anyway, and the error says so.
   */
  async revoke(): Promise<void> {
    if (!this.aliveValue) return;
    this.end();
    await this.revokeInEtcd(this.id);
  }

  /** Ends the lease locally: timers, stream, listeners. Idempotent. */
  end(): void {
    if (!this.aliveValue) return;
    this.aliveValue = false;
    clearInterval(this.keepAliveTimer);
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    this.dropStream(this.stream);
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) queueMicrotask(listener);
    this.onEnd(this);
  }

  private keepAlive(): void {
    if (!this.aliveValue) return;
    if (this.stream === undefined) {
      this.openStream();
      return;
    }
    const sentAtMs = this.keepAliveSentAtMs;
    if (sentAtMs !== undefined) {
      // Step 4: an answer that has not come within an interval will not come on this stream.
      if (Date.now() - sentAtMs >= this.keepAliveIntervalMs) this.dropStream(this.stream);
      return;
    }
    this.keepAliveSentAtMs = Date.now();
    this.stream.write({ ID: this.id.toString() });
  }

  private openStream(): void {
    if (this.streamOpening) return;
    this.streamOpening = true;
    this.leaseClient.leaseKeepAlive().then(
      (stream) => {
        this.streamOpening = false;
        stream.on('error', () => this.dropStream(stream));
        stream.on('end', () => this.dropStream(stream));
        if (!this.aliveValue) {
          stream.cancel();
          return;
        }
        stream.on('data', (response) => this.onKeepAliveResponse(response));
        this.stream = stream;
        this.keepAlive();
      },
      () => {
        // No endpoint answered; the next tick tries again until the local expiry.
        this.streamOpening = false;
      },
    );
  }

  private onKeepAliveResponse(response: ILeaseKeepAliveResponse): void {
    const sentAtMs = this.keepAliveSentAtMs;
    this.keepAliveSentAtMs = undefined;
    const ttlSeconds = Number(response.TTL);
    if (!(ttlSeconds > 0)) {
      this.end(); // Step 3.
      return;
    }
    if (sentAtMs === undefined) return;
    this.expiresAtMs = Math.max(this.expiresAtMs, sentAtMs + ttlSeconds * 1000);
    this.armExpiryTimer();
  }

  private armExpiryTimer(): void {
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => (Date.now() >= this.expiresAtMs ? this.end() : this.armExpiryTimer()),
      Math.max(0, this.expiresAtMs - Date.now()),
    );
  }

  private dropStream(stream: KeepAliveStream | undefined): void {
    if (stream === undefined || stream !== this.stream) return;
    this.stream = undefined;
    this.keepAliveSentAtMs = undefined;
    stream.cancel();
  }
}
