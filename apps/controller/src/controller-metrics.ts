import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterState } from './cluster-state';

/**
 * The controller's Prometheus metrics, named as a Kafka operator looks for them. Gauges that
 * describe the cluster are computed at scrape time from the active controller's view; a standby
 * reports `spool_controller_active 0` and no cluster gauges, so sums over all controllers count
 * the cluster once.
 */
export class ControllerMetrics {
  readonly active: Gauge;
  readonly leaderElections: Counter<'type'>;
  private view: ClusterState | undefined;

  constructor(registry: Registry) {
    this.active = new Gauge({
      name: 'spool_controller_active',
      help: '1 on the active controller, 0 on standbys; exactly one controller should report 1.',
      registers: [registry],
    });
    this.leaderElections = new Counter({
      name: 'spool_controller_leader_elections_total',
      help: 'Partition leader elections by this controller, clean (from the ISR) or unclean.',
      labelNames: ['type'],
      registers: [registry],
    });
    // Both kinds exist from the start, so a rate over them works before the first election.
    for (const type of ['clean', 'unclean']) this.leaderElections.inc({ type }, 0);
    const view = (): ClusterState | undefined => this.view;
    new Gauge({
      name: 'spool_offline_partitions',
      help: 'Partitions with no leader, as seen by the active controller.',
      registers: [registry],
      collect() {
        const state = view();
        if (state === undefined) return;
        let offline = 0;
        for (const partition of state.allPartitions())
          if (partition.record.leader === -1) offline++;
        this.set(offline);
      },
    });
    new Gauge({
      name: 'spool_reassigning_partitions',
      help:
        "Partitions with a reassignment in progress (Kafka's ReassigningPartitions), as seen by " +
        'the active controller.',
      registers: [registry],
      collect() {
        const state = view();
        if (state === undefined) return;
        let reassigning = 0;
        for (const partition of state.allPartitions()) {
          const record = partition.record;
          if ((record.addingReplicas?.length ?? 0) + (record.removingReplicas?.length ?? 0) > 0)
            reassigning++;
        }
        this.set(reassigning);
      },
    });
    new Gauge({
      name: 'spool_brokers',
      help: 'Registered brokers by state (alive or fenced), as seen by the active controller.',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const state = view();
        if (state === undefined) return;
        const fenced = [...state.brokers.values()].filter((broker) => broker.record.fenced).length;
        this.set({ state: 'alive' }, state.brokers.size - fenced);
        this.set({ state: 'fenced' }, fenced);
      },
    });
    new Gauge({
      name: 'spool_metadata_version',
      help: 'The metadata version (store revision) the active controller has applied.',
      registers: [registry],
      collect() {
        const state = view();
        if (state !== undefined) this.set(Number(state.revision));
      },
    });
    this.active.set(0);
  }

  /** The active controller's view, or undefined on a standby. */
  setView(state: ClusterState | undefined): void {
    this.view = state;
    this.active.set(state === undefined ? 0 : 1);
  }
}
