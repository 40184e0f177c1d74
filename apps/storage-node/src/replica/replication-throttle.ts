/**
 * The reassignment throttle, follower side (Kafka's follower.replication.throttled.rate): the
 * bytes this node fetches for replicas being added to a partition (a reassignment's catching-up
 * replicas) are held to a rate, so moving a partition does not take the bandwidth and disk that
 * production traffic needs. A token bucket holding one second of the rate: each fetched byte of
 * a throttled partition takes a token (the count may go below zero, since a fetch answer is
 * taken whole); while it is below zero the fetchers leave their throttled partitions out of
 * their requests (and out of their fetch sessions) for `delayMs`, as Kafka's fetcher omits
 * throttled partitions over quota. One per node: every fetcher (one per leader) shares it.
 * A rate of 0 turns it off. The rate may change at run time (a dynamic broker config,
 * broker-configs.ts on the controller): `setRate` keeps the tokens taken, capped at the new rate.
 */
export class ReplicationThrottle {
  private availableBytes: number;
  private lastRefillMs: number;

  constructor(
    private rate: number,
    nowMs = Date.now(),
  ) {
    this.availableBytes = rate;
    this.lastRefillMs = nowMs;
  }

  get rateBytesPerSecond(): number {
    return this.rate;
  }

  /** A new rate from now on; 0 turns the throttle off. */
  setRate(rateBytesPerSecond: number, nowMs = Date.now()): void {
    if (rateBytesPerSecond === this.rate) return;
    if (this.rate > 0) this.refill(nowMs);
    else this.availableBytes = rateBytesPerSecond;
    this.lastRefillMs = nowMs;
    this.rate = rateBytesPerSecond;
    this.availableBytes = Math.min(this.availableBytes, rateBytesPerSecond);
  }

  get enabled(): boolean {
    return this.rateBytesPerSecond > 0;
  }

  /** Takes `bytes` fetched for a throttled partition. */
  record(bytes: number, nowMs = Date.now()): void {
    if (!this.enabled) return;
    this.refill(nowMs);
    this.availableBytes -= bytes;
  }

  /** How long throttled partitions must wait before they fetch again; 0 when they may now. */
  delayMs(nowMs = Date.now()): number {
    if (!this.enabled) return 0;
    this.refill(nowMs);
    if (this.availableBytes >= 0) return 0;
    return Math.ceil((-this.availableBytes / this.rateBytesPerSecond) * 1_000);
  }

  private refill(nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - this.lastRefillMs);
    this.lastRefillMs = nowMs;
    this.availableBytes = Math.min(
      this.rateBytesPerSecond,
      this.availableBytes + (elapsedMs * this.rateBytesPerSecond) / 1_000,
    );
  }
}
