import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterState } from './cluster-state';
import type { ReplicaSizeReports } from './replica-size-reports';

/**
 * The controller's Prometheus metrics, named as a Kafka operator looks for them. Gauges that
 * describe the cluster are computed at scrape time from the active controller's view; a standby
 * reports `spool_controller_active 0` and no cluster gauges, so sums over all controllers count
 * the cluster once.
 */
export class ControllerMetrics {
  readonly active: Gauge;
  readonly leaderElections: Counter<'type'>;
  readonly balancerMoves: Counter<'kind'>;
  readonly balancerMovesInProgress: Gauge;
  private view: ClusterState | undefined;
  private sizes: ReplicaSizeReports | undefined;

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
    this.balancerMoves = new Counter({
      name: 'spool_balancer_moves_total',
      help:
        'Moves the auto-balancer started: replica (a reassignment that moves data) or leader ' +
        '(a reordering that moves the preferred leader).',
      labelNames: ['kind'],
      registers: [registry],
    });
    for (const kind of ['replica', 'leader']) this.balancerMoves.inc({ kind }, 0);
    this.balancerMovesInProgress = new Gauge({
      name: 'spool_balancer_moves_in_progress',
      help: 'Reassignments the auto-balancer started that have not completed yet.',
      registers: [registry],
    });
    const view = (): ClusterState | undefined => this.view;
    const sizes = (): ReplicaSizeReports | undefined => this.sizes;
    new Gauge({
      name: 'spool_broker_replicas',
      help: 'Partition replicas assigned to each registered broker, as seen by the active controller.',
      labelNames: ['broker'],
      registers: [registry],
      collect() {
        this.reset();
        const state = view();
        if (state === undefined) return;
        const counts = new Map<number, number>([...state.brokers.keys()].map((id) => [id, 0]));
        for (const partition of state.allPartitions()) {
          for (const replica of partition.record.replicas)
            counts.set(replica, (counts.get(replica) ?? 0) + 1);
        }
        for (const [broker, count] of counts) this.set({ broker: String(broker) }, count);
      },
    });
    new Gauge({
      name: 'spool_broker_bytes',
      help:
        "Bytes of partition logs on each broker, from its heartbeats' replica sizes, as seen by " +
        'the active controller (a broker that has not reported since it took over is absent).',
      labelNames: ['broker'],
      registers: [registry],
      collect() {
        this.reset();
        const state = view();
        const reports = sizes();
        if (state === undefined || reports === undefined) return;
        for (const broker of state.brokers.keys()) {
          const bytes = reports.brokerSizeBytes(broker);
          if (bytes !== undefined) this.set({ broker: String(broker) }, bytes);
        }
      },
    });
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
  setView(state: ClusterState | undefined, sizes?: ReplicaSizeReports): void {
    this.view = state;
    this.sizes = state === undefined ? undefined : sizes;
    if (state === undefined) this.balancerMovesInProgress.set(0);
    this.active.set(state === undefined ? 0 : 1);
  }
}
