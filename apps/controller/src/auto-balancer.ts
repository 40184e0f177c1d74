/**
 * The auto-balancer on the active controller (--auto-balance): after a broker joins or leaves
 * (the set of live, decommissioned brokers changes), on a timer, and again after its own moves
 * finish until the plan is empty, it plans moves with partition-balancer.ts and starts them as
 * reassignments (reassignment-commands.ts), so every KIP-455 guarantee holds: new replicas catch
 * up within the throttles, join the ISR, and only then do old ones leave. Each decision is logged
 * with its reason.
 *
 * It plans only once every live broker has reported its replica sizes since this controller
 * took over (BrokerHeartbeat), so a new controller never mistakes unknown sizes for empty logs.
 */
import type { ControllerContext } from './controller-context';
import { planBalance, type BalancerBroker, type BalancerPartition } from './partition-balancer';
import { reassignmentOf } from './partition-reassignment';
import { alterPartitionReassignments } from './reassignment-commands';
import type { ReplicaSizeReports } from './replica-size-reports';

export interface AutoBalancerSettings {
  readonly autoBalanceIntervalMs: number;
  readonly autoBalanceMovesMax: number;
  readonly autoBalanceBytesMax: number;
  readonly autoBalanceTolerancePercent: number;
}

export class AutoBalancer {
  private lastRunMs: number;
  private lastBrokers = '';
  /** The last round planned moves: run again once nothing is moving, until balanced. */
  private continuing = false;
  /** Partitions this balancer started moving, until they finish. */
  private readonly started = new Set<string>();

  constructor(
    private readonly context: ControllerContext,
    private readonly replicaSizes: ReplicaSizeReports,
    private readonly settings: AutoBalancerSettings,
    private readonly clock: () => number = Date.now,
  ) {
    this.lastRunMs = clock();
  }

  /** Partitions the balancer started moving that are still moving. */
  movesInProgress(): number {
    let count = 0;
    for (const name of this.started) {
      const [topic, partition] = splitName(name);
      const state = this.context.state.topics.get(topic)?.partitions.get(partition);
      if (state !== undefined && reassignmentOf(state.record) !== undefined) count++;
      else this.started.delete(name);
    }
    return count;
  }

  /** Plans and starts moves when a round is due; returns how many started. */
  async maybeBalance(): Promise<number> {
    const brokers = this.brokers();
    const brokersKey = brokers
      .filter((broker) => broker.live || broker.decommissioned)
      .map((broker) => `${broker.brokerId}${broker.decommissioned ? 'd' : ''}`)
      .join(',');
    const moving = this.movesInProgress() > 0 || this.anyMoving();
    const due =
      brokersKey !== this.lastBrokers ||
      this.clock() - this.lastRunMs >= this.settings.autoBalanceIntervalMs ||
      (this.continuing && !moving);
    if (!due) return 0;
    const unreported = brokers.filter(
      (broker) => broker.live && !this.replicaSizes.reported(broker.brokerId),
    );
    if (unreported.length > 0) return 0;
    this.lastBrokers = brokersKey;
    this.lastRunMs = this.clock();
    const moves = planBalance(brokers, this.partitions(), {
      movesMax: this.settings.autoBalanceMovesMax,
      bytesMax: this.settings.autoBalanceBytesMax,
      toleranceRatio: 1 + this.settings.autoBalanceTolerancePercent / 100,
    });
    this.continuing = moves.length > 0;
    if (moves.length === 0) return 0;
    const results = await alterPartitionReassignments(
      this.context,
      moves.map((move) => ({
        topic: move.topic,
        partition: move.partition,
        replicas: move.replicas,
      })),
    );
    let startedCount = 0;
    for (const [index, { error }] of results.entries()) {
      const move = moves[index]!;
      const name = `${move.topic}-${move.partition}`;
      if (error !== undefined) {
        this.context.logger.warn(
          { partition: name, replicas: move.replicas, err: error },
          'balancer move refused',
        );
        continue;
      }
      startedCount++;
      if (move.kind === 'replica') this.started.add(`${move.topic}\u0000${move.partition}`);
      this.context.metrics.balancerMoves.inc({ kind: move.kind });
      this.context.logger.info(
        { partition: name, replicas: move.replicas, kind: move.kind, reason: move.reason },
        `balancer moves ${move.kind === 'replica' ? 'a replica' : 'the preferred leader'} of ${name}`,
      );
    }
    return startedCount;
  }

  private anyMoving(): boolean {
    for (const partition of this.context.state.allPartitions()) {
      if (reassignmentOf(partition.record) !== undefined) return true;
    }
    return false;
  }

  private brokers(): BalancerBroker[] {
    const live = this.context.liveBrokerIds();
    return [...this.context.state.brokers.values()]
      .map((broker) => ({
        brokerId: broker.record.brokerId,
        rack: broker.record.rack,
        live: live.has(broker.record.brokerId),
        decommissioned: broker.record.decommissioned === true,
      }))
      .sort((left, right) => left.brokerId - right.brokerId);
  }

  private partitions(): BalancerPartition[] {
    const partitions: BalancerPartition[] = [];
    for (const partition of this.context.state.allPartitions()) {
      partitions.push({
        topic: partition.topic,
        partition: partition.partition,
        replicas: partition.record.replicas,
        isr: partition.record.isr,
        sizeBytes: this.replicaSizes.partitionSizeBytes(partition.topic, partition.partition),
        moving: reassignmentOf(partition.record) !== undefined,
      });
    }
    return partitions;
  }
}

function splitName(name: string): [string, number] {
  const separator = name.lastIndexOf('\u0000');
  return [name.slice(0, separator), Number(name.slice(separator + 1))];
}
