/**
 * The periodic work on the groups this coordinator serves:
 * - every expireIntervalMs, each group's session and rebalance timeouts (ConsumerGroup.expire):
 *   a silent member is removed, one holding revoked partitions too long is fenced;
 * - on every metadata change that touches topics, and once for each group of a shard that was
 *   just loaded, each group's target assignment (ConsumerGroup.onTopicsChanged): new
 *   partitions, new topics matching a regex, deletions;
 * - every lagRefreshIntervalMs, the lag metrics of every group with committed offsets.
 * What a step changes is written to __consumer_offsets like any other change of the group.
 */
import type { Logger } from '@spool/common';
import type { ControllerLink } from './controller-link';
import type { CoordinatorMetrics } from './coordinator-metrics';
import type { GroupCoordinator } from './group-coordinator';
import type { ConsumerGroup, GroupRecord } from '@spool/consumer-group';
import type { OffsetsShard } from './offsets-shard';
import type { ShardManager } from './shard-manager';
import { topicPartitionView } from './topic-partition-view';

/** How often session and rebalance timeouts are checked: the precision of eviction. */
export const expireIntervalMs = 250;
/** How often the lag gauges are refreshed without a DescribeGroup. */
export const lagRefreshIntervalMs = 5_000;

export class GroupMaintenance {
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: () => void = () => {};
  private refreshingLag = false;

  constructor(
    private readonly link: ControllerLink,
    private readonly shards: ShardManager,
    private readonly groups: GroupCoordinator,
    private readonly metrics: CoordinatorMetrics,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timers.push(
      setInterval(() => this.forEachGroup((group, nowMs) => group.expire(nowMs)), expireIntervalMs),
      setInterval(() => void this.refreshLag(), lagRefreshIntervalMs),
    );
    this.unsubscribe = this.link.metadata.onChange((change) => {
      const internal = (name: string): boolean =>
        this.link.metadata.topics.get(name)?.internal ?? name.startsWith('__');
      const touchesTopics =
        change.snapshot ||
        change.deletedTopics.length > 0 ||
        change.changedTopics.some((name) => !internal(name));
      if (!touchesTopics) return;
      const view = topicPartitionView(this.link.metadata);
      this.forEachGroup((group, nowMs) => group.onTopicsChanged(view, nowMs));
    });
  }

  /** A shard that starts serving: its replayed groups learn which topics exist. */
  onShardLoaded(shard: OffsetsShard): void {
    const view = topicPartitionView(this.link.metadata);
    this.forEachGroup((group, nowMs) => group.onTopicsChanged(view, nowMs), [shard]);
  }

  /** Runs a step on every group of every serving shard and writes what it changed. */
  private forEachGroup(
    step: (group: ConsumerGroup, nowMs: number) => GroupRecord[],
    shards: readonly OffsetsShard[] = this.shards.activeShards(),
  ): void {
    const nowMs = Date.now();
    for (const shard of shards) {
      for (const group of shard.groups.values()) {
        const epochBefore = group.groupEpoch;
        let records: GroupRecord[];
        try {
          records = step(group, nowMs);
        } catch (error) {
          this.logger.error({ err: error, groupId: group.groupId }, 'group maintenance failed');
          continue;
        }
        if (records.length === 0) continue;
        this.groups.countRebalance(group, epochBefore);
        this.write(shard, records);
      }
    }
  }

  private write(shard: OffsetsShard, records: GroupRecord[]): void {
    this.shards
      .write(
        shard,
        records.map((record) => ({ kind: 'group', record })),
      )
      .catch((error: unknown) =>
        this.logger.warn({ err: error, shard: shard.partition }, 'writing a group change failed'),
      );
  }

  private async refreshLag(): Promise<void> {
    if (this.refreshingLag) return;
    this.refreshingLag = true;
    try {
      const served = new Set<string>();
      for (const shard of this.shards.activeShards()) {
        for (const groupId of shard.groupIds()) {
          served.add(groupId);
          const committed = shard.committedOffsets(groupId);
          if (committed.length > 0) await this.groups.lagOf(groupId, committed);
        }
      }
      this.metrics.forgetGroupsExcept(served);
    } catch (error) {
      this.logger.debug({ err: error }, 'refreshing lag failed');
    } finally {
      this.refreshingLag = false;
    }
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.unsubscribe();
  }
}
