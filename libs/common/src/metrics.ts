import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process, with prom-client's default process metrics
 * (`process_cpu_seconds_total`, resident memory, event-loop lag, GC) on. Services register their
 * own `spool_*` metrics in it; `/metrics` serves it.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
