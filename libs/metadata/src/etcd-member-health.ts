/**
 * Which etcd members this process talks to. etcd3's pool picks a member at random for every call
 * and every stream it opens, and skips a member only once that member's circuit breaker is open:
 * by default after three failed calls, each of which may have waited out its whole deadline on a
 * paused or cut-off member (whose kernel, or nobody, answers). A controller whose lease
 * keepalives went there lost its lease while two healthy members were a call away.
 *
 * 1. Each endpoint gets its own circuit breaker, handed to the pool (etcd3's per-host policy).
 *    It opens after `consecutiveFailuresMax` network failures of real calls, as etcd3's does.
 * 2. A probe per endpoint every `probeIntervalMs`: a linearizable Range (the member must reach
 *    its leader's quorum to answer) of a key nobody writes, on that member alone, with a deadline
 *    of `probeTimeoutMs`. A member that fails it (refused: killed; no answer: paused or cut off;
 *    an error: no leader) is isolated: the pool skips it at once, for calls and for the streams
 *    it opens (lease keepalives, watches), until a probe succeeds again.
 * 3. Never every member: when every probe fails, this process is the one cut off (or etcd has
 *    no quorum), and isolating them all would only turn deadlines into instant refusals that
 *    outlast the fault by a probe interval; none is isolated by probes then.
 * 4. Streams already open on a member that stops answering notice it themselves (the lease's
 *    unanswered keepalive, the watch's unanswered progress request) and reopen. Before they do,
 *    they name the member their answers came from (every etcd answer carries its member id,
 *    which the probes map to an endpoint): `suspect()` isolates it at once, so the reopened
 *    stream goes elsewhere even before that member's probe times out; its next successful probe
 *    lifts the isolation, so a member that was merely slow is back within a probe interval.
 */
import type { Logger } from '@spool/common';
import {
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  noop as noPolicy,
  type CircuitBreakerPolicy,
  type IDisposable,
} from 'cockatiel';
import { Etcd3, isRecoverableError, type IOptions } from 'etcd3';
import { useChannelCredentials, type ChannelCredentials } from './etcd-channel-credentials';

/** How often each member is probed. */
export const probeIntervalMs = 250;
/** A probe unanswered this long fails: a healthy member answers a read in milliseconds. */
export const probeTimeoutMs = 750;
/** Step 1: failed calls in a row that open a member's breaker without a probe. */
const consecutiveFailuresMax = 3;
/** How long a breaker opened by failed calls stays open before one call may try the member. */
const breakerHalfOpenAfterMs = 2_000;
/** Step 2's key: the NUL byte, which no key of ours starts with. */
const probeKey = Buffer.from([0]);

interface Member {
  readonly endpoint: string;
  readonly breaker: CircuitBreakerPolicy;
  readonly probeClient: Etcd3;
  /** Set while probes keep the member isolated (step 2). */
  isolation: IDisposable | undefined;
  /** The last probe's outcome. */
  healthy: boolean;
  probing: boolean;
}

export class EtcdMemberHealth {
  private readonly members = new Map<string, Member>();
  /** Each member's id (from its probe answers) to its entry, for suspect(). */
  private readonly membersById = new Map<string, Member>();
  private readonly timer: NodeJS.Timeout;

  /**
   * @param clientOptions the store's client's credentials and channel options, so a probe
   *   reaches a member the way the store's calls do.
   */
  constructor(
    endpoints: readonly string[],
    clientOptions: Pick<IOptions, 'credentials' | 'grpcOptions'>,
    private readonly logger: Logger | undefined,
    /** The store's credentials that follow their files (etcd-channel-credentials.ts). */
    channelCredentials?: ChannelCredentials,
  ) {
    for (const endpoint of endpoints) {
      const probeClient = new Etcd3({
        ...clientOptions,
        hosts: endpoint,
        // A probe is one attempt on one member, nothing more.
        faultHandling: { host: () => noPolicy, global: noPolicy },
      });
      if (channelCredentials !== undefined) useChannelCredentials(probeClient, channelCredentials);
      this.members.set(endpoint, {
        endpoint,
        breaker: circuitBreaker(handleWhen(isRecoverableError), {
          halfOpenAfter: breakerHalfOpenAfterMs,
          breaker: new ConsecutiveBreaker(consecutiveFailuresMax),
        }),
        probeClient,
        isolation: undefined,
        healthy: true,
        probing: false,
      });
    }
    this.timer = setInterval(() => this.probeAll(), probeIntervalMs);
    this.timer.unref();
  }

  /** The breaker the pool uses for `endpoint` (etcd3's faultHandling.host). */
  policyFor(endpoint: string): CircuitBreakerPolicy {
    const member = this.members.get(endpoint);
    if (member === undefined) throw new Error(`no etcd member ${endpoint} in this store`);
    return member.breaker;
  }

  /** The endpoints probes isolate now (step 2). */
  isolatedEndpoints(): string[] {
    return [...this.members.values()]
      .filter((member) => member.isolation !== undefined)
      .map((member) => member.endpoint);
  }

  close(): void {
    clearInterval(this.timer);
    for (const member of this.members.values()) {
      member.isolation?.dispose();
      member.isolation = undefined;
      member.probeClient.close();
    }
  }

  private probeAll(): void {
    for (const member of this.members.values()) {
      if (member.probing) continue;
      member.probing = true;
      member.probeClient.kv
        .range({ key: probeKey }, { deadline: Date.now() + probeTimeoutMs })
        .then(
          (response) => {
            this.membersById.set(response.header.member_id, member);
            this.onProbe(member, true, undefined);
          },
          (error: unknown) => this.onProbe(member, false, error),
        );
    }
  }

  /**
   * Step 4: a stream whose answers came from this member stopped answering. Isolates it until its
   * next successful probe, unless it is the only member still believed healthy.
   */
  suspect(memberId: string | undefined, what: string): void {
    const member = memberId === undefined ? undefined : this.membersById.get(memberId);
    if (member === undefined || member.isolation !== undefined) return;
    const othersHealthy = [...this.members.values()].some(
      (each) => each !== member && each.healthy && each.isolation === undefined,
    );
    if (!othersHealthy) return;
    member.healthy = false;
    member.isolation = member.breaker.isolate();
    this.logger?.warn(
      { endpoint: member.endpoint, stream: what },
      'etcd member stopped answering a stream; calls and streams skip it until its probe answers',
    );
  }

  private onProbe(member: Member, healthy: boolean, error: unknown): void {
    member.probing = false;
    member.healthy = healthy;
    const allUnhealthy = [...this.members.values()].every((each) => !each.healthy);
    if (allUnhealthy) {
      // Step 3.
      for (const each of this.members.values()) this.lift(each, 'every member fails its probe');
      return;
    }
    if (healthy) {
      this.lift(member, 'its probe succeeded');
      return;
    }
    if (member.isolation !== undefined) return;
    member.isolation = member.breaker.isolate();
    this.logger?.warn(
      { endpoint: member.endpoint, err: error },
      'etcd member failed its probe; calls and streams skip it until it answers',
    );
  }

  private lift(member: Member, reason: string): void {
    if (member.isolation === undefined) return;
    member.isolation.dispose();
    member.isolation = undefined;
    this.logger?.info({ endpoint: member.endpoint, reason }, 'etcd member used again');
  }
}
