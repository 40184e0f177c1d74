/**
 * This node's two reassignment throttles (Kafka's leader.replication.throttled.rate and
 * follower.replication.throttled.rate) and where their rates come from: the node's static
 * settings, overridden by the dynamic broker configs the controller sends in every heartbeat
 * answer (broker-configs.ts on the controller). A dynamic value that is removed gives the static
 * one back. The leader's throttle holds the bytes it sends to the replicas throttled-replicas.ts
 * names (fetch-handler.ts); the follower's, the bytes it fetches for its own (replica-fetcher).
 */
import type { ConfigEntry } from '@spool/protocol';
import { ReplicationThrottle } from './replication-throttle';

export const leaderThrottleConfig = 'leader.replication.throttled.rate';
export const followerThrottleConfig = 'follower.replication.throttled.rate';

export class ReplicationThrottles {
  readonly leader: ReplicationThrottle;
  readonly follower: ReplicationThrottle;

  constructor(
    private readonly staticRates: {
      readonly leaderReplicationThrottledRate: number;
      readonly followerReplicationThrottledRate: number;
    },
  ) {
    this.leader = new ReplicationThrottle(staticRates.leaderReplicationThrottledRate);
    this.follower = new ReplicationThrottle(staticRates.followerReplicationThrottledRate);
  }

  /**
   * Applies the dynamic configs in effect for this broker; returns the names whose rate changed
   * with their new rate, for the caller to log. A value that does not parse (the controller
   * checks them, so only a newer controller's unknown form) leaves that throttle as it is.
   */
  applyDynamicConfigs(configs: readonly ConfigEntry[]): Array<{ name: string; rate: number }> {
    const changed: Array<{ name: string; rate: number }> = [];
    const apply = (name: string, throttle: ReplicationThrottle, staticRate: number): void => {
      const entry = configs.find((config) => config.name === name);
      const rate = entry === undefined ? staticRate : Number(entry.value);
      if (!Number.isSafeInteger(rate) || rate < 0 || rate === throttle.rateBytesPerSecond) return;
      throttle.setRate(rate);
      changed.push({ name, rate });
    };
    apply(leaderThrottleConfig, this.leader, this.staticRates.leaderReplicationThrottledRate);
    apply(followerThrottleConfig, this.follower, this.staticRates.followerReplicationThrottledRate);
    return changed;
  }
}
