/**
 * An etcd lease kept alive from this process, with our own keepalive loop on etcd's LeaseKeepAlive
 * stream (rather than etcd3's `Lease`, which declares a lease lost only after twice its TTL).
 *
 * 1. Every TTL/6 one keepalive is sent; only one is in flight. (etcd's Go client sends every
 *    TTL/3; a short lease, such as a controller's 2 s one, then had room for one lost keepalive
 *    at most, and a member killed or paused under the stream cost the lease.)
 * 2. etcd answers with the TTL it granted again. The lease then lives on the server until at least
 *    `sent time + TTL`, because etcd reset its clock after the request left. That instant is our
 *    local expiry.
 * 3. An answer of TTL ≤ 0 means etcd no longer knows the lease (expired, or revoked by someone
 *    else): lost at once.
 * 4. A broken stream is reopened at once (after `reopenDelayMs`), and a keepalive unanswered for
 *    two intervals drops its stream and reopens it the same way: the pool opens the new stream on
 *    a member that answers its health probe (etcd-member-health.ts).
 * 5. When the local expiry passes unanswered, the lease is suspended, no later than etcd could
 *    have expired it: its holder must act as if its keys were gone. But they may not be: while
 *    etcd elects a leader nothing renews a lease, and the new leader renews every lease it takes
 *    over for a TTL and an election timeout (etcd's lessor Promote). So keepalives go on, and an
 *    answer with TTL > 0 resumes the lease: a lease ID is never granted twice, so etcd held it,
 *    and the keys bound to it, all along. An answer of TTL ≤ 0 (step 3), or
 *    `suspendedTtlsMax` TTLs suspended, loses it.
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
/** Step 1: keepalives per TTL. */
const keepAlivesPerTtl = 6;
/** Step 4: how long after a break the stream is opened again (a break may repeat at once). */
const reopenDelayMs = 50;
/**
 * Step 5: TTLs a lease stays suspended before it is lost: an etcd leader election on a loaded
 * machine (seconds), not a member cut off for good.
 */
export const suspendedTtlsMax = 5;

export class EtcdLease implements Lease {
  readonly ttlMs: number;
  private aliveValue = true;
  private listeners: (() => void)[] = [];
  /** Step 5: when the lease was suspended; undefined while renewals are answered. */
  private suspendedAtMs: number | undefined;
  private suspendedListeners: (() => void)[] = [];
  private resumedListeners: ((suspendedMs: number) => void)[] = [];
  private stream: KeepAliveStream | undefined;
  private streamOpening = false;
  private keepAliveSentAtMs: number | undefined;
  private expiresAtMs: number;
  private readonly keepAliveIntervalMs: number;
  private readonly keepAliveTimer: NodeJS.Timeout;
  private expiryTimer: NodeJS.Timeout | undefined;
  private reopenTimer: NodeJS.Timeout | undefined;
  /** The member the current stream's answers come from. */
  private streamMemberId: string | undefined;

  /**
   * @param grantSentAtMs when the grant request left: the first local expiry counts from it.
   * @param onEnd tells the store the lease is over (lost or revoked), so close() skips it.
   * @param suspectMember names the member whose stream stopped answering (step 4), so the
   *   store's member health skips it when the stream is reopened.
   */
  constructor(
    private readonly leaseClient: LeaseClient,
    readonly id: bigint,
    ttlSeconds: number,
    grantSentAtMs: number,
    private readonly revokeInEtcd: (id: bigint) => Promise<void>,
    private readonly onEnd: (lease: EtcdLease) => void,
    private readonly suspectMember: (memberId: string | undefined, what: string) => void = () => {},
  ) {
    this.ttlMs = ttlSeconds * 1000;
    this.expiresAtMs = grantSentAtMs + this.ttlMs;
    this.keepAliveIntervalMs = Math.max(
      keepAliveIntervalMsMin,
      Math.floor(this.ttlMs / keepAlivesPerTtl),
    );
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

  get suspended(): boolean {
    return this.suspendedAtMs !== undefined;
  }

  onSuspended(listener: () => void): void {
    this.suspendedListeners.push(listener);
  }

  onResumed(listener: (suspendedMs: number) => void): void {
    this.resumedListeners.push(listener);
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
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer);
    this.dropStream(this.stream);
    const listeners = this.listeners;
    this.listeners = [];
    this.suspendedListeners = [];
    this.resumedListeners = [];
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
      // Step 4: an answer that has not come within two intervals will not come on this stream.
      if (Date.now() - sentAtMs >= 2 * this.keepAliveIntervalMs) {
        this.suspectMember(this.streamMemberId, 'lease keepalive');
        this.dropStream(this.stream);
        this.reopenSoon();
      }
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
        const broken = (): void => {
          if (stream !== this.stream) return;
          this.dropStream(stream);
          this.reopenSoon();
        };
        stream.on('error', broken);
        stream.on('end', broken);
        if (!this.aliveValue) {
          stream.cancel();
          return;
        }
        // An answer on a stream dropped since is not the current keepalive's.
        stream.on('data', (response) => {
          if (stream === this.stream) this.onKeepAliveResponse(response);
        });
        this.stream = stream;
        this.keepAlive();
      },
      () => {
        // No endpoint answered; the next tick tries again until the local expiry.
        this.streamOpening = false;
      },
    );
  }

  /** Step 4: a new stream shortly, rather than at the next tick. */
  private reopenSoon(): void {
    if (!this.aliveValue || this.reopenTimer !== undefined) return;
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      if (this.stream === undefined) this.openStream();
    }, reopenDelayMs);
  }

  private onKeepAliveResponse(response: ILeaseKeepAliveResponse): void {
    this.streamMemberId = response.header.member_id;
    const sentAtMs = this.keepAliveSentAtMs;
    this.keepAliveSentAtMs = undefined;
    const ttlSeconds = Number(response.TTL);
    if (!(ttlSeconds > 0)) {
      this.end(); // Step 3.
      return;
    }
    if (sentAtMs === undefined) return;
    this.expiresAtMs = Math.max(this.expiresAtMs, sentAtMs + ttlSeconds * 1000);
    // Step 5: renewed by etcd, so it never expired; resumed while the renewal still runs.
    const suspendedAtMs = this.suspendedAtMs;
    const resumed = suspendedAtMs !== undefined && this.expiresAtMs > Date.now();
    if (resumed) this.suspendedAtMs = undefined;
    this.armExpiryTimer();
    if (resumed) {
      const suspendedMs = Date.now() - suspendedAtMs;
      for (const listener of this.resumedListeners) queueMicrotask(() => listener(suspendedMs));
    }
  }

  private armExpiryTimer(): void {
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    const suspendedAtMs = this.suspendedAtMs;
    if (suspendedAtMs !== undefined) {
      // Step 5: lost once suspended for too long.
      this.expiryTimer = setTimeout(
        () => this.end(),
        Math.max(0, suspendedAtMs + suspendedTtlsMax * this.ttlMs - Date.now()),
      );
      return;
    }
    this.expiryTimer = setTimeout(
      () => {
        if (Date.now() < this.expiresAtMs) {
          this.armExpiryTimer();
          return;
        }
        this.suspendedAtMs = Date.now();
        this.armExpiryTimer();
        for (const listener of this.suspendedListeners) queueMicrotask(listener);
      },
      Math.max(0, this.expiresAtMs - Date.now()),
    );
  }

  private dropStream(stream: KeepAliveStream | undefined): void {
    if (stream === undefined || stream !== this.stream) return;
    this.stream = undefined;
    this.streamMemberId = undefined;
    this.keepAliveSentAtMs = undefined;
    stream.cancel();
  }
}
