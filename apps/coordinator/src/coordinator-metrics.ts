import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The coordinator's Prometheus metrics: groups by state, members per group, rebalances and
 * commits per group, consumer lag per partition with its sum and max per group (so operators need
 * no separate lag exporter), and the shards this coordinator owns. Gauges of groups are read
 * from the loaded shards when scraped; lag is refreshed periodically and on DescribeGroup.
 */
/** KIP-848's group states, as the state machine names them. */
const groupStates = ['EMPTY', 'ASSIGNING', 'RECONCILING', 'STABLE', 'DEAD'] as const;

export interface CoordinatorMetricsSource {
  /** Loaded groups with their state and member count. */
  groups(): Iterable<{ groupId: string; state: string; members: number }>;
  shardsOwned(): number;
}

export interface GroupLag {
  readonly groupId: string;
  readonly partitions: ReadonlyArray<{ topic: string; partition: number; lag: bigint }>;
}

export class CoordinatorMetrics {
  readonly rebalances: Counter<'group'>;
  readonly offsetCommits: Counter<'group'>;
  readonly offsetsCheckpoints: Counter;
  readonly offsetsCheckpointEntries: Counter;
  private readonly lag: Gauge<'group' | 'topic' | 'partition'>;
  private readonly lagSum: Gauge<'group'>;
  private readonly lagMax: Gauge<'group'>;
  /** The label sets of each group's lag series, to remove them all at once. */
  private readonly lagSeries = new Map<
    string,
    Array<{ group: string; topic: string; partition: string }>
  >();

  constructor(
    registry: Registry,
    source: CoordinatorMetricsSource,
    /** False leaves out the per-partition lag series; the per-group sum and max stay. */
    private readonly perPartition = true,
  ) {
    new Gauge({
      name: 'spool_consumer_groups',
      help: 'Consumer groups loaded on this coordinator, by state.',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        this.reset();
        // Every state from the first scrape, so a dashboard shows 0 rather than no data.
        const counts = new Map<string, number>(groupStates.map((state) => [state, 0]));
        for (const group of source.groups())
          counts.set(group.state, (counts.get(group.state) ?? 0) + 1);
        for (const [state, count] of counts) this.set({ state }, count);
      },
    });
    new Gauge({
      name: 'spool_consumer_group_members',
      help: 'Members of each consumer group loaded on this coordinator.',
      labelNames: ['group'],
      registers: [registry],
      collect() {
        this.reset();
        for (const group of source.groups()) this.set({ group: group.groupId }, group.members);
      },
    });
    this.rebalances = new Counter({
      name: 'spool_consumer_group_rebalances_total',
      help: 'Times a group epoch grew (membership, subscriptions or topics changed).',
      labelNames: ['group'],
      registers: [registry],
    });
    this.offsetCommits = new Counter({
      name: 'spool_offset_commits_total',
      help: 'Offsets committed (one per partition), by group.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.offsetsCheckpoints = new Counter({
      name: 'spool_offsets_checkpoints_total',
      help:
        'Checkpoints of __consumer_offsets shards: live state rewritten and the records before ' +
        'it deleted, so a takeover replays only that.',
      registers: [registry],
    });
    this.offsetsCheckpointEntries = new Counter({
      name: 'spool_offsets_checkpoint_entries_total',
      help: 'Entries (group records and committed offsets) written by offsets checkpoints.',
      registers: [registry],
    });
    this.lag = new Gauge({
      name: 'spool_consumer_group_lag',
      help: 'High watermark minus committed offset, per group and partition.',
      labelNames: ['group', 'topic', 'partition'],
      registers: [registry],
    });
    this.lagSum = new Gauge({
      name: 'spool_consumer_group_lag_sum',
      help: 'Lag summed over the partitions a group has committed offsets for.',
      labelNames: ['group'],
      registers: [registry],
    });
    this.lagMax = new Gauge({
      name: 'spool_consumer_group_lag_max',
      help: 'The largest lag of any partition of a group.',
      labelNames: ['group'],
      registers: [registry],
    });
    new Gauge({
      name: 'spool_coordinator_shards_owned',
      help: '__consumer_offsets partitions this coordinator owns and serves or is loading.',
      registers: [registry],
      collect() {
        this.set(source.shardsOwned());
      },
    });
  }

  /** Replaces one group's lag series. */
  setGroupLag(lag: GroupLag): void {
    this.removeLagSeries(lag.groupId);
    let sum = 0n;
    let max = 0n;
    const series: Array<{ group: string; topic: string; partition: string }> = [];
    for (const partition of lag.partitions) {
      const labels = {
        group: lag.groupId,
        topic: partition.topic,
        partition: String(partition.partition),
      };
      if (this.perPartition) {
        this.lag.set(labels, Number(partition.lag));
        series.push(labels);
      }
      sum += partition.lag;
      if (partition.lag > max) max = partition.lag;
    }
    this.lagSeries.set(lag.groupId, series);
    this.lagSum.set({ group: lag.groupId }, Number(sum));
    this.lagMax.set({ group: lag.groupId }, Number(max));
  }

  /** Drops the lag series of groups no longer served here (shard moved, group deleted). */
  forgetGroupsExcept(keep: ReadonlySet<string>): void {
    for (const groupId of [...this.lagSeries.keys()])
      if (!keep.has(groupId)) this.removeLagSeries(groupId);
  }

  private removeLagSeries(groupId: string): void {
    for (const labels of this.lagSeries.get(groupId) ?? []) this.lag.remove(labels);
    this.lagSeries.delete(groupId);
    this.lagSum.remove({ group: groupId });
    this.lagMax.remove({ group: groupId });
  }
}
