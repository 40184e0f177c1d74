/**
 * A client of a service where only one of several processes answers (the active controller): it
 * keeps a list of addresses, calls the one it believes is the leader, and on NOT_CONTROLLER goes
 * to the address the error names (or, with no hint, the next one), on an unreachable process to
 * the next one, with capped backoff between rounds. Callers see one call that either succeeds or
 * fails with the last error after a bounded number of attempts.
 *
 * A hint is not followed to an address that was unreachable from this channel (a refused
 * connection, unanswered pings: gRPC's UNAVAILABLE without a Spool code) within `failedLeaderHoldMs`: a standby names the leader its election still records, and while
 * a paused or cut-off leader's lease runs out that is the very process just left, where a new
 * connection would wait out the pings again (about 2.5 s) before coming back. The channel stays
 * on the standby instead and asks again after the backoff, so it is there when the standby wins.
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { CommonErrorCode, SpoolError } from './errors';
import { backoffMs, sleep } from './grpc-client';
import { fromGrpcError } from './grpc-errors';

export interface LeaderChannelOptions {
  /** The error code a follower answers with. */
  readonly notLeaderCode: string;
  /** The detail of that error naming the leader's address. */
  readonly leaderDetail: string;
  /** Attempts per call, over all addresses. */
  readonly attempts?: number;
}

const attemptsDefault = 20;
/** How long a leader that failed is not followed to on a hint (a controller lease or so). */
export const failedLeaderHoldMs = 3_000;

export class LeaderChannel<Client extends { close(): void }> {
  private readonly clients = new Map<string, Client>();
  /** The configured addresses first, then leaders learned from NOT_LEADER hints. */
  private readonly addresses: string[];
  private readonly configuredCount: number;
  private leaderIndex = 0;
  private closed = false;
  /** When each address last failed unreachable (see the header). */
  private readonly failedAtMs = new Map<string, number>();

  constructor(
    addresses: readonly string[],
    private readonly createClient: (address: string) => Client,
    private readonly options: LeaderChannelOptions,
  ) {
    if (addresses.length === 0)
      throw new SpoolError('INVALID_CONFIG', 'no addresses to reach the service at');
    this.addresses = [...addresses];
    this.configuredCount = addresses.length;
  }

  /** The address currently believed to lead. */
  get leaderAddress(): string {
    return this.addresses[this.leaderIndex]!;
  }

  client(): Client {
    const address = this.leaderAddress;
    let client = this.clients.get(address);
    if (client === undefined) {
      client = this.createClient(address);
      this.clients.set(address, client);
    }
    return client;
  }

  /**
   * Moves to the leader an error named, or to the next configured address. A learned leader that
   * failed is forgotten: it is a process that stopped leading or is gone (a Kubernetes pod's IP
   * goes with its pod, and connecting to it then only times out), and trying every leader ever
   * learned before the configured addresses made a stopping storage node's controlled shutdown
   * spend its attempts on dead addresses. Returns whether it moved to a hinted leader.
   */
  follow(error: unknown, nowMs = Date.now()): boolean {
    const spoolError = error instanceof SpoolError ? error : undefined;
    const hint = spoolError?.details[this.options.leaderDetail];
    if (hint !== undefined && hint !== '') {
      const failedAtMs = this.failedAtMs.get(hint);
      if (
        hint !== this.leaderAddress &&
        failedAtMs !== undefined &&
        nowMs - failedAtMs < failedLeaderHoldMs
      ) {
        return false;
      }
      if (!this.addresses.includes(hint)) this.addresses.push(hint);
      this.leaderIndex = this.addresses.indexOf(hint);
      return true;
    }
    if (isUnreachable(spoolError)) this.failedAtMs.set(this.leaderAddress, nowMs);
    if (this.leaderIndex >= this.configuredCount) {
      // Its client stays open until close(): calls may still be on it.
      this.addresses.splice(this.leaderIndex, 1);
      this.leaderIndex = 0;
    } else {
      this.leaderIndex = (this.leaderIndex + 1) % this.configuredCount;
    }
    return false;
  }

  /**
   * The process at `address` says it leads now (a controller that just took over announces
   * itself): calls go there from the next one on. Unlike a hint, this overrides a recent failure
   * of that address: the announcement itself came from it. Returns whether the leader changed.
   */
  leaderAnnounced(address: string): boolean {
    if (this.failedAtMs.delete(address)) {
      // Its client failed to connect, and grpc waits out a reconnect backoff that grows with
      // each refusal (seconds, after a process was down a while) before it tries again: calls
      // on it would keep failing fast although the process is back. A new client connects now.
      this.clients.get(address)?.close();
      this.clients.delete(address);
    }
    if (address === this.leaderAddress) return false;
    if (!this.addresses.includes(address)) this.addresses.push(address);
    this.leaderIndex = this.addresses.indexOf(address);
    return true;
  }

  /** Runs `attempt` against the leader, following NOT_LEADER answers and retriable failures. */
  async call<T>(
    attempt: (client: Client) => Promise<T>,
    options: { attempts?: number } = {},
  ): Promise<T> {
    const attempts = options.attempts ?? this.options.attempts ?? attemptsDefault;
    for (let round = 1; ; round++) {
      if (this.closed) throw new SpoolError('SHUTTING_DOWN', 'the channel is closed');
      try {
        return await attempt(this.client());
      } catch (error) {
        const spoolError =
          error instanceof SpoolError ? error : fromGrpcError(error as ServiceError);
        const redirect = spoolError.code === this.options.notLeaderCode;
        if ((!redirect && !spoolError.retriable) || round >= attempts) throw spoolError;
        // A redirect to a leader is worth trying at once; otherwise wait before the next round.
        if (!this.follow(spoolError)) await sleep(backoffMs(round));
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

/** A transport failure: the connection was refused or dropped (pings unanswered). */
function isUnreachable(error: SpoolError | undefined): boolean {
  const cause = error?.cause as Partial<ServiceError> | undefined;
  return error?.code === CommonErrorCode.Unavailable && cause?.code === GrpcStatus.UNAVAILABLE;
}
