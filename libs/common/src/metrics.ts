import { Registry, collectDefaultMetrics } from 'prom-client';
import { setTextDefaultLabels } from './text-metric-family';

/**
 * One Prometheus registry per process, with prom-client's default process metrics
 * (`process_cpu_seconds_total`, resident memory, event-loop lag, GC) on. Services register their
 * own `spool_*` metrics in it (text-metric-family.ts for families of thousands of series);
 * `/metrics` serves it.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  setTextDefaultLabels(registry, { service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
