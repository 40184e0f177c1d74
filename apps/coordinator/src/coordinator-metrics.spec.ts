// Proves the coordinator's metrics API writes the names PLAN.md fixes: groups by state from the
// first scrape, lag per partition with its sum and max, stale partitions and removed groups
// dropped, and the per-partition series switchable off while sum and max stay.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CoordinatorMetrics } from './coordinator-metrics';

async function scrape(registry: Registry): Promise<string> {
  return registry.metrics();
}

describe('CoordinatorMetrics', () => {
  it('exports every coordinator metric name at start-up', async () => {
    const registry = new Registry();
    new CoordinatorMetrics(registry, { metricsPerPartition: true });
    const text = await scrape(registry);
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
    expect(text).toContain('spool_coordinator_shards_owned 0');
  });

  it('keeps lag per partition, sum and max, and forgets what is gone', async () => {
    const registry = new Registry();
    const metrics = new CoordinatorMetrics(registry, { metricsPerPartition: true });
    metrics.setGroupsByState({ STABLE: 2, EMPTY: 1 });
    metrics.setMembers('billing', 3);
    metrics.rebalanced('billing');
    metrics.offsetsCommitted('billing', 4);
    metrics.setLag('billing', [
      { topic: 'orders', partition: 0, lagRecords: 5 },
      { topic: 'orders', partition: 1, lagRecords: 7 },
      { topic: 'orders', partition: 2, lagRecords: -3 },
    ]);
    let text = await scrape(registry);
    expect(text).toContain('spool_consumer_groups{state="STABLE"} 2');
    expect(text).toContain('spool_consumer_groups{state="EMPTY"} 1');
    expect(text).toContain('spool_consumer_group_members{group="billing"} 3');
    expect(text).toContain('spool_consumer_group_rebalances_total{group="billing"} 1');
    expect(text).toContain('spool_offset_commits_total{group="billing"} 4');
    expect(text).toContain(
      'spool_consumer_group_lag{group="billing",topic="orders",partition="1"} 7',
    );
    expect(text).toContain(
      'spool_consumer_group_lag{group="billing",topic="orders",partition="2"} 0',
    );
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 12');
    expect(text).toContain('spool_consumer_group_lag_max{group="billing"} 7');

    metrics.setLag('billing', [{ topic: 'orders', partition: 0, lagRecords: 0 }]);
    text = await scrape(registry);
    expect(text).not.toContain('partition="1"');
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 0');

    metrics.removeGroup('billing');
    text = await scrape(registry);
    expect(text).not.toContain('group="billing"');
  });

  it('drops the per-partition lag series when switched off', async () => {
    const registry = new Registry();
    const metrics = new CoordinatorMetrics(registry, { metricsPerPartition: false });
    metrics.setLag('billing', [{ topic: 'orders', partition: 0, lagRecords: 9 }]);
    const text = await scrape(registry);
    expect(text).not.toContain('spool_consumer_group_lag{');
    expect(text).toContain('spool_consumer_group_lag_sum{group="billing"} 9');
    expect(text).toContain('spool_consumer_group_lag_max{group="billing"} 9');
  });
});
