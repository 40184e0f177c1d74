/**
 * Partition reassignment on the active controller: AlterPartitionReassignments (start, change or
 * cancel moves, each partition checked and answered on its own), ListPartitionReassignments, and
 * the step that completes moves whose target replicas are all in the ISR (after every ISR change
 * and in maintenance, so a controller that takes over midway finishes what its predecessor
 * started). The rules are partition-reassignment.ts's.
 */
import { SpoolError } from '@spool/common';
import type { PartitionState } from './cluster-state';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type PartitionRecord } from './metadata-records';
import type { IndependentWrite } from './metadata-writer';
import {
  cancelReassignment,
  completeReassignment,
  reassignmentOf,
  startReassignment,
} from './partition-reassignment';
import { effectiveTopicConfig } from './topic-configs';

/** One partition's target in an AlterPartitionReassignments; `replicas` undefined cancels. */
export interface ReassignmentTarget {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[] | undefined;
}

export interface ReassignmentResult {
  readonly target: ReassignmentTarget;
  readonly error: SpoolError | undefined;
}

/** A partition moving now: its replica set and what is being added and removed. */
export interface OngoingReassignment {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

/**
 * Starts, changes or cancels the reassignment of each named partition. A partition whose target
 * is refused (unknown topic, partition or broker, a duplicate or empty replica set, fewer replicas
 * than min.insync.replicas) is answered with INVALID_REPLICA_ASSIGNMENT or its own error naming
 * it; the others are written, each guarded by its own mod revision.
 */
export async function alterPartitionReassignments(
  context: ControllerContext,
  targets: readonly ReassignmentTarget[],
): Promise<ReassignmentResult[]> {
  const live = context.liveBrokerIds();
  const keys = context.writer.metadataKeys;
  const errors = new Map<ReassignmentTarget, SpoolError>();
  const writes: Array<{ target: ReassignmentTarget; write: IndependentWrite }> = [];
  const seen = new Set<string>();
  for (const target of targets) {
    const name = `${target.topic}-${target.partition}`;
    try {
      if (seen.has(name))
        throw new SpoolError('INVALID_REQUEST', `partition ${name} is named twice`);
      seen.add(name);
      const current = partitionOf(context, target);
      const next = reassigned(context, current, target, live);
      if (next === undefined) continue;
      const key = keys.partition(target.topic, target.partition);
      writes.push({
        target,
        write: {
          compare: { key, kind: 'modRevision', equals: current.modRevision },
          operation: { kind: 'put', key, value: encodeRecord(next) },
        },
      });
    } catch (error) {
      if (!(error instanceof SpoolError)) throw error;
      errors.set(target, error);
    }
  }
  for (const { target, write } of writes) {
    try {
      await context.writer.commit([write.compare], [write.operation]);
    } catch (error) {
      // Losing the leadership (or the store) ends the request; a partition changed meanwhile
      // (an ISR change) refuses just itself, and the caller may send it again.
      if (!(error instanceof SpoolError) || error.code !== 'INVALID_UPDATE_VERSION') throw error;
      errors.set(target, error);
    }
  }
  const started = writes.filter(({ target }) => !errors.has(target));
  if (started.length > 0) {
    context.logger.info(
      {
        partitions: started.length,
        sample: started.slice(0, 5).map(({ target }) => {
          const name = `${target.topic}-${target.partition}`;
          return target.replicas === undefined ? `${name} cancel` : `${name} -> ${target.replicas}`;
        }),
      },
      'partition reassignments changed',
    );
  }
  return targets.map((target) => ({ target, error: errors.get(target) }));
}

function partitionOf(context: ControllerContext, target: ReassignmentTarget): PartitionState {
  const topic = context.state.topics.get(target.topic);
  if (topic === undefined) {
    throw new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${target.topic}" does not exist`);
  }
  const partition = topic.partitions.get(target.partition);
  if (partition === undefined) {
    throw new SpoolError(
      'UNKNOWN_TOPIC_OR_PARTITION',
      `topic "${target.topic}" has no partition ${target.partition} ` +
        `(it has ${topic.record.partitionCount})`,
    );
  }
  return partition;
}

/** The partition's record after the change, undefined when nothing changes, or why not. */
function reassigned(
  context: ControllerContext,
  current: PartitionState,
  target: ReassignmentTarget,
  live: ReadonlySet<number>,
): PartitionRecord | undefined {
  const name = `${target.topic}-${target.partition}`;
  const topic = context.state.topics.get(target.topic)!;
  const minInsyncReplicas = Number(
    effectiveTopicConfig(topic.record.configs, 'min.insync.replicas'),
  );
  if (target.replicas === undefined) {
    return cancelReassignment(current.record, live, minInsyncReplicas, name);
  }
  checkTarget(context, name, target.replicas, minInsyncReplicas);
  return startReassignment(current.record, target.replicas, live);
}

function checkTarget(
  context: ControllerContext,
  name: string,
  replicas: readonly number[],
  minInsyncReplicas: number,
): void {
  const refuse = (why: string): never => {
    throw new SpoolError('INVALID_REPLICA_ASSIGNMENT', `partition ${name}: ${why}`);
  };
  if (replicas.length === 0) refuse('the target replica set is empty');
  const seen = new Set<number>();
  for (const replica of replicas) {
    if (seen.has(replica)) refuse(`broker ${replica} is named twice in [${replicas.join(',')}]`);
    seen.add(replica);
    if (!context.state.brokers.has(replica)) {
      refuse(`broker ${replica} is not registered (brokers: ${registeredBrokers(context)})`);
    }
  }
  if (replicas.length < minInsyncReplicas) {
    refuse(
      `${replicas.length} replicas are fewer than the topic's min.insync.replicas ` +
        `${minInsyncReplicas}: the ISR would shrink below it`,
    );
  }
}

function registeredBrokers(context: ControllerContext): string {
  return [...context.state.brokers.keys()].sort((left, right) => left - right).join(',');
}

/** The reassignments in progress, in topic then partition order; `topics` empty means all. */
export function listPartitionReassignments(
  context: ControllerContext,
  topics: readonly string[],
): OngoingReassignment[] {
  const names = topics.length === 0 ? [...context.state.topics.keys()] : [...topics];
  const ongoing: OngoingReassignment[] = [];
  for (const name of names.sort()) {
    const topic = context.state.topics.get(name);
    if (topic === undefined) continue;
    const partitions = [...topic.partitions.values()].sort(
      (left, right) => left.partition - right.partition,
    );
    for (const partition of partitions) {
      const reassignment = reassignmentOf(partition.record);
      if (reassignment === undefined) continue;
      ongoing.push({
        topic: name,
        partition: partition.partition,
        replicas: partition.record.replicas,
        ...reassignment,
      });
    }
  }
  return ongoing;
}

/**
 * Completes every move whose target replicas are all in the ISR (rule 2), in bounded
 * transactions, each partition guarded by its own mod revision; only among `partitions` when
 * given (those an AlterPartition just changed). Returns how many completed.
 */
export async function completeReassignments(
  context: ControllerContext,
  partitions: Iterable<PartitionState> = context.state.allPartitions(),
): Promise<number> {
  const live = context.liveBrokerIds();
  const keys = context.writer.metadataKeys;
  const writes: IndependentWrite[] = [];
  const names: string[] = [];
  for (const partition of partitions) {
    if (reassignmentOf(partition.record) === undefined) continue;
    const completed = completeReassignment(partition.record, live);
    if (completed === undefined) continue;
    const key = keys.partition(partition.topic, partition.partition);
    names.push(`${partition.topic}-${partition.partition}`);
    writes.push({
      compare: context.writer.unchangedSince(key, partition.modRevision),
      operation: { kind: 'put', key, value: encodeRecord(completed) },
    });
  }
  if (writes.length === 0) return 0;
  await context.writer.commitIndependent(writes);
  context.logger.info(
    { partitions: writes.length, sample: names.slice(0, 5) },
    'partition reassignments completed',
  );
  return writes.length;
}

/** How many partitions are moving now (the reassigning-partitions gauge). */
export function reassigningPartitionCount(context: Pick<ControllerContext, 'state'>): number {
  let count = 0;
  for (const partition of context.state.allPartitions()) {
    if (reassignmentOf(partition.record) !== undefined) count++;
  }
  return count;
}
