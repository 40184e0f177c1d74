import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The coordinator's Prometheus metrics: consumer groups by state, members, rebalances, offset
 * commits and consumer lag, the signals a Kafka operator otherwise needs a separate lag exporter
 * for. Lag is the partition's high watermark minus the group's committed offset (DESIGN.md), in
 * records. Every series describes the groups this coordinator owns now: a group that is deleted
 * or whose shard moves to another coordinator is removed with `removeGroup`, so sums across
 * coordinators count each group once.
 *
 * The group runtime pushes values through the methods below; nothing here reads group state.
 * The per-partition lag series can be switched off (`--metrics-per-partition false`) for
 * clusters with very many partitions; the per-group sum and max stay.
 */

/** The states of a consumer group (KIP-848), as the group state machine names them. */
export const consumerGroupStates = ['EMPTY', 'ASSIGNING', 'RECONCILING', 'STABLE', 'DEAD'] as const;
export type ConsumerGroupStateLabel = (typeof consumerGroupStates)[number];

export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** High watermark − committed offset, in records; a partition with no commit is left out. */
  readonly lagRecords: number;
}

export class CoordinatorMetrics {
  private readonly groups: Gauge<'state'>;
  private readonly members: Gauge<'group'>;
  private readonly rebalances: Counter<'group'>;
  private readonly offsetCommits: Counter<'group'>;
  private readonly lag: Gauge<'group' | 'topic' | 'partition'>;
  private readonly lagSum: Gauge<'group'>;
  private readonly lagMax: Gauge<'group'>;
  private readonly shardsOwned: Gauge;
  /** The partitions each group has a lag series for, so stale ones can be removed. */
  private readonly lagPartitions = new Map<string, Set<string>>();

  constructor(
    registry: Registry,
    private readonly options: { readonly metricsPerPartition: boolean },
  ) {
    this.groups = new Gauge({
      name: 'spool_consumer_groups',
      help: 'Consumer groups owned by this coordinator, by state.',
      labelNames: ['state'],
      registers: [registry],
    });
    this.members = new Gauge({
      name: 'spool_consumer_group_members',
      help: 'Members of each consumer group owned by this coordinator.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.rebalances = new Counter({
      name: 'spool_consumer_group_rebalances_total',
      help: 'Rebalances of each consumer group: times its group epoch was bumped.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.offsetCommits = new Counter({
      name: 'spool_offset_commits_total',
      help: 'Partition offsets committed by each consumer group (one per partition committed).',
      labelNames: ['group'],
      registers: [registry],
    });
    this.lag = new Gauge({
      name: 'spool_consumer_group_lag',
      help: 'Records between the high watermark and the committed offset, per group and partition.',
      labelNames: ['group', 'topic', 'partition'],
      registers: [registry],
    });
    this.lagSum = new Gauge({
      name: 'spool_consumer_group_lag_sum',
      help: 'Records between high watermarks and committed offsets, summed over the group.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.lagMax = new Gauge({
      name: 'spool_consumer_group_lag_max',
      help: 'Largest lag in records of any partition the group has committed offsets for.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.shardsOwned = new Gauge({
      name: 'spool_coordinator_shards_owned',
      help: 'Partitions of __consumer_offsets (group shards) this coordinator owns now.',
      registers: [registry],
    });
    this.setGroupsByState({});
    this.shardsOwned.set(0);
  }

  /** Replaces the group counts; a state not given has no group. */
  setGroupsByState(counts: Readonly<Partial<Record<ConsumerGroupStateLabel, number>>>): void {
    for (const state of consumerGroupStates) this.groups.set({ state }, counts[state] ?? 0);
  }

  setMembers(groupId: string, memberCount: number): void {
    this.members.set({ group: groupId }, memberCount);
  }

  /** The group epoch was bumped: membership or subscriptions changed. */
  rebalanced(groupId: string): void {
    this.rebalances.inc({ group: groupId });
  }

  offsetsCommitted(groupId: string, partitionCount: number): void {
    this.offsetCommits.inc({ group: groupId }, partitionCount);
  }

  /**
   * Replaces the group's lag with the given partitions: the per-partition series (when on), and
   * the sum and max, which are 0 for a group with no committed partition.
   */
  setLag(groupId: string, partitions: readonly PartitionLag[]): void {
    let sum = 0;
    let max = 0;
    const current = new Set<string>();
    for (const { topic, partition, lagRecords } of partitions) {
      // A committed offset past the high watermark (a truncated log) is no lag, not a negative one.
      const lag = Math.max(0, lagRecords);
      sum += lag;
      max = Math.max(max, lag);
      if (!this.options.metricsPerPartition) continue;
      const labels = { group: groupId, topic, partition: String(partition) };
      this.lag.set(labels, lag);
      current.add(`${topic}\u0000${partition}`);
    }
    for (const key of this.lagPartitions.get(groupId) ?? []) {
      if (current.has(key)) continue;
      const [topic, partition] = key.split('\u0000') as [string, string];
      this.lag.remove({ group: groupId, topic, partition });
    }
    this.lagPartitions.set(groupId, current);
    this.lagSum.set({ group: groupId }, sum);
    this.lagMax.set({ group: groupId }, max);
  }

  /** The group was deleted or moved to another coordinator: its series go with it. */
  removeGroup(groupId: string): void {
    this.setLag(groupId, []);
    this.lagPartitions.delete(groupId);
    this.lagSum.remove({ group: groupId });
    this.lagMax.remove({ group: groupId });
    this.members.remove({ group: groupId });
    this.rebalances.remove({ group: groupId });
    this.offsetCommits.remove({ group: groupId });
  }

  setShardsOwned(shardCount: number): void {
    this.shardsOwned.set(shardCount);
  }
}
