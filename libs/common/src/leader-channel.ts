/**
 * A client of a service where only one of several processes answers (the active controller): it
 * keeps a list of addresses, calls the one it believes is the leader, and on NOT_CONTROLLER goes
 * to the address the error names (or, with no hint, the next one), on an unreachable process to
 * the next one, with capped backoff between rounds. Callers see one call that either succeeds or
 * fails with the last error after a bounded number of attempts.
 */
import type * as grpc from '@grpc/grpc-js';
import { SpoolError } from './errors';
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

export class LeaderChannel<Client extends { close(): void }> {
  private readonly clients = new Map<string, Client>();
  /** The configured addresses first, then leaders learned from NOT_LEADER hints. */
  private readonly addresses: string[];
  private readonly configuredCount: number;
  private leaderIndex = 0;
  private closed = false;

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
   * spend its attempts on dead addresses.
   */
  follow(error: unknown): void {
    const hint = error instanceof SpoolError ? error.details[this.options.leaderDetail] : undefined;
    if (hint !== undefined && hint !== '') {
      if (!this.addresses.includes(hint)) this.addresses.push(hint);
      this.leaderIndex = this.addresses.indexOf(hint);
    } else if (this.leaderIndex >= this.configuredCount) {
      // Its client stays open until close(): calls may still be on it.
      this.addresses.splice(this.leaderIndex, 1);
      this.leaderIndex = 0;
    } else {
      this.leaderIndex = (this.leaderIndex + 1) % this.configuredCount;
    }
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
          error instanceof SpoolError ? error : fromGrpcError(error as grpc.ServiceError);
        const redirect = spoolError.code === this.options.notLeaderCode;
        if ((!redirect && !spoolError.retriable) || round >= attempts) throw spoolError;
        this.follow(spoolError);
        // A redirect with a hint is worth trying at once; otherwise wait before the next round.
        if (!(redirect && spoolError.details[this.options.leaderDetail]))
          await sleep(backoffMs(round));
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}
