// Proves the text gauge families render as the Prometheus text format that prom-client's own
// metrics use (test/metrics.spec.ts parses a real node's): HELP and TYPE once, the registry's service label first on every line, label
// values escaped, after prom-client's metrics in one exposition; and a name taken is refused.
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from './metrics';
import { registerTextGaugeFamily, renderMetrics } from './text-metric-family';

describe('text gauge families', () => {
  it('render after the registry own metrics, with its service label and escaped values', async () => {
    const registry = createMetricsRegistry('storage-node');
    new Gauge({ name: 'spool_ordinary', help: 'An ordinary gauge.', registers: [registry] }).set(3);
    registerTextGaugeFamily(registry, {
      name: 'spool_per_partition',
      help: 'One series per partition.',
      labelNames: ['topic', 'partition'],
      collect(emit) {
        emit(['orders', '0'], 12);
        emit(['odd"na\\me', '1'], 0.5);
      },
    });
    const text = await renderMetrics(registry);
    expect(text).toContain('spool_ordinary{service="storage-node"} 3\n');
    expect(text).toContain(
      '# HELP spool_per_partition One series per partition.\n# TYPE spool_per_partition gauge\n' +
        'spool_per_partition{service="storage-node",topic="orders",partition="0"} 12\n' +
        'spool_per_partition{service="storage-node",topic="odd\\"na\\\\me",partition="1"} 0.5\n',
    );
    // prom-client's metrics first, each family whole.
    expect(text.indexOf('spool_ordinary')).toBeLessThan(text.indexOf('spool_per_partition'));
  });

  it('render values as scraped, with no default labels on a plain registry', async () => {
    const registry = new Registry();
    let size = 1;
    registerTextGaugeFamily(registry, {
      name: 'spool_size',
      help: 'Grows.',
      labelNames: ['topic'],
      collect: (emit) => emit(['t'], size),
    });
    expect(await renderMetrics(registry)).toContain('spool_size{topic="t"} 1\n');
    size = 2;
    expect(await renderMetrics(registry)).toContain('spool_size{topic="t"} 2\n');
  });

  it('refuses a name the registry already serves', () => {
    const registry = new Registry();
    new Gauge({ name: 'spool_taken', help: 'Taken.', registers: [registry] });
    const family = { name: 'spool_taken', help: 'Again.', labelNames: [], collect: () => {} };
    expect(() => registerTextGaugeFamily(registry, family)).toThrow(/spool_taken is already/);
    registerTextGaugeFamily(registry, { ...family, name: 'spool_free' });
    expect(() => registerTextGaugeFamily(registry, { ...family, name: 'spool_free' })).toThrow(
      /spool_free is already/,
    );
  });
});
