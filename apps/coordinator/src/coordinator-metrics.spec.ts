// Proves the coordinator's metrics write the names the dashboard and alerts use: groups by state
// (every state present from the first scrape) and members read from the loaded groups, lag per
// partition with its sum and max per group, series of groups no longer served dropped, and the
// per-partition series switchable off while sum and max stay.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CoordinatorMetrics, type CoordinatorMetricsSource } from './coordinator-metrics';

function source(
  groups: Array<{ groupId: string; state: string; members: number }> = [],
  shardsOwned = 0,
): CoordinatorMetricsSource {
  return { groups: () => groups, shardsOwned: () => shardsOwned };
}

describe('CoordinatorMetrics', () => {
  it('exports every coordinator metric name, every group state from the start', async () => {
    const registry = new Registry();
    new CoordinatorMetrics(registry, source());
    const text = await registry.metrics();
    for (const name of [
      'spool_consumer_groups',
      'spool_consumer_group_members',
      'spool_consumer_group_rebalances_total',
      'spool_offset_commits_total',
      'spool_consumer_group_lag',
      'spool_consumer_group_lag_sum',
      'spool_consumer_group_lag_max',
      'spool_coordinator_shards_owned',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toContain('spool_consumer_groups{state="STABLE"} 0');
    expect(text).toContain('spool_consumer_groups{state="EMPTY"} 0');
    expect(text).toContain('spool_coordinator_shards_owned 0');
  });

  it('reads groups and members from the loaded groups when scraped', async () => {
    const registry = new Registry();
    new CoordinatorMetrics(
      registry,
      source(
        [
          { groupId: 'billing', state: 'STABLE', members: 3 },
          { groupId: 'audit', state: 'STABLE', members: 1 },
          { groupId: 'idle', state: 'EMPTY', members: 0 },
        ],
        7,
      ),
    );
    const text = await registry.metrics();
    expect(text).toContain('spool_consumer_groups{state="STABLE"} 2');
    expect(text).toContain('spool_consumer_groups{state="EMPTY"} 1');
    expect(text).toContain('spool_consumer_group_members{group="billing"} 3');
    expect(text).toContain('spool_coordinator_shards_owned 7');
  });

  it('keeps lag per partition with sum and max, and forgets groups no longer served', async () => {
    const registry = new Registry();
    const metrics = new CoordinatorMetrics(registry, source());
    metrics.setGroupLag({
      groupId: 'billing',
      partitions: [
        { topic: 'orders', partition: 0, lag: 5n },
        { topic: 'orders', partition: 1, lag: 12n },
      ],
    });
    let text = await registry.metrics();
    expect(text).toContain(
      'spool_consumer_group_lag{group="billing",topic="orders",partition="1"} 12',
    );
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 17');
    expect(text).toContain('spool_consumer_group_lag_max{group="billing"} 12');

    metrics.setGroupLag({
      groupId: 'billing',
      partitions: [{ topic: 'orders', partition: 0, lag: 0n }],
    });
    text = await registry.metrics();
    expect(text).not.toContain('partition="1"');
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 0');

    metrics.forgetGroupsExcept(new Set());
    text = await registry.metrics();
    expect(text).not.toContain('group="billing"');
  });

  it('leaves out per-partition lag when switched off, keeping sum and max', async () => {
    const registry = new Registry();
    const metrics = new CoordinatorMetrics(registry, source(), false);
    metrics.setGroupLag({
      groupId: 'billing',
      partitions: [{ topic: 'orders', partition: 0, lag: 9n }],
    });
    const text = await registry.metrics();
    expect(text).not.toContain('spool_consumer_group_lag{');
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 9');
    expect(text).toContain('spool_consumer_group_lag_max{group="billing"} 9');
  });
});
