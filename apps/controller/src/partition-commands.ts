/**
 * Partition state changes on the active controller: a leader's AlterPartition (ISR shrink or
 * expand, a compare-and-set on the partition epoch), and the elections the controller runs by
 * itself: leaders for offline partitions once an eligible replica is back, and the preferred
 * leader when it is back in the ISR.
 */
import type { BrokerLifecycle } from './broker-lifecycle';
import { SpoolError } from '@spool/common';
import type { PartitionState } from './cluster-state';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type PartitionRecord } from './metadata-records';
import { chunkOperationsMax, type IndependentWrite, splitIntoChunks } from './metadata-writer';
import { electOffline, electPreferred, type PartitionChange } from './partition-elections';
import { effectiveTopicConfig } from './topic-configs';

/** One partition's ISR change in a leader's AlterPartition. */
export interface AlterPartitionItem {
  readonly topic: string;
  readonly partition: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly newIsr: readonly number[];
}

export interface AlterPartitionInput {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
  readonly partitions: readonly AlterPartitionItem[];
}

/** One partition's answer: its state after the change, or why it was refused. */
export type AlterPartitionResult =
  | {
      readonly item: AlterPartitionItem;
      readonly partition: PartitionState;
      readonly error?: undefined;
    }
  | {
      readonly item: AlterPartitionItem;
      readonly partition: PartitionState | undefined;
      readonly error: SpoolError;
    };

/**
 * A leader's ISR changes, many partitions at once (Kafka's AlterPartition is batched: a node
 * that comes back rejoins thousands of ISRs together). A stale broker epoch refuses the whole
 * request; every partition is then checked on its own, and the accepted ones are written in
 * transactions of at most `chunkOperationsMax`, each partition guarded by its own mod revision.
 * A transaction that fails refuses just its own partitions.
 */
export async function alterPartitions(
  context: ControllerContext,
  brokers: BrokerLifecycle,
  input: AlterPartitionInput,
): Promise<AlterPartitionResult[]> {
  brokers.checkEpoch(input.brokerId, input.brokerEpoch);
  const live = context.liveBrokerIds();
  const keys = context.writer.metadataKeys;
  const results: AlterPartitionResult[] = [];
  const accepted: Array<{
    item: AlterPartitionItem;
    write: IndependentWrite;
    isr: readonly number[];
  }> = [];
  const seen = new Set<string>();
  for (const item of input.partitions) {
    const name = `${item.topic}-${item.partition}`;
    const current = context.state.topics.get(item.topic)?.partitions.get(item.partition);
    try {
      if (seen.has(name)) {
        throw new SpoolError('INVALID_REQUEST', `partition ${name} is named twice`);
      }
      seen.add(name);
      const next = checkedChange(current, input.brokerId, item, live);
      const key = keys.partition(item.topic, item.partition);
      accepted.push({
        item,
        isr: next.isr,
        write: {
          compare: { key, kind: 'modRevision', equals: current!.modRevision },
          operation: { kind: 'put', key, value: encodeRecord(next) },
        },
      });
    } catch (error) {
      if (!(error instanceof SpoolError)) throw error;
      results.push({ item, partition: current, error });
    }
  }
  for (const chunk of splitIntoChunks(
    accepted,
    chunkOperationsMax,
    (change) => change.write.operation,
  )) {
    try {
      await context.writer.commit(
        chunk.map((change) => change.write.compare),
        chunk.map((change) => change.write.operation),
      );
    } catch (error) {
      // Losing the leadership (or the store) ends the request; a partition changed meanwhile
      // refuses this chunk only.
      if (!(error instanceof SpoolError) || error.code !== 'INVALID_UPDATE_VERSION') throw error;
      for (const { item } of chunk) {
        results.push({ item, partition: partitionState(context, item), error });
      }
      continue;
    }
    for (const { item } of chunk) {
      results.push({ item, partition: partitionState(context, item)! });
    }
  }
  if (accepted.length > 0) {
    context.logger.info(
      {
        brokerId: input.brokerId,
        partitions: accepted.length,
        refused: results.filter((result) => result.error !== undefined).length,
        sample: accepted
          .slice(0, 3)
          .map(({ item, isr }) => `${item.topic}-${item.partition} isr=${isr.join(',')}`),
      },
      'ISR changed',
    );
  }
  return results;
}

function partitionState(
  context: ControllerContext,
  item: AlterPartitionItem,
): PartitionState | undefined {
  return context.state.topics.get(item.topic)?.partitions.get(item.partition);
}

/** The partition record after `item`'s change, or the reason the change is refused. */
function checkedChange(
  current: PartitionState | undefined,
  brokerId: number,
  item: AlterPartitionItem,
  live: ReadonlySet<number>,
): PartitionRecord {
  const name = `${item.topic}-${item.partition}`;
  if (current === undefined) {
    throw new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${name} does not exist`);
  }
  const record = current.record;
  if (record.leader !== brokerId) {
    throw new SpoolError(
      'NOT_LEADER_OR_FOLLOWER',
      `broker ${brokerId} does not lead ${name}; broker ${record.leader} does`,
    );
  }
  if (item.leaderEpoch !== record.leaderEpoch) {
    throw new SpoolError(
      'FENCED_LEADER_EPOCH',
      `leader epoch ${item.leaderEpoch} of ${name} is stale; it is ${record.leaderEpoch}`,
    );
  }
  if (item.partitionEpoch !== record.partitionEpoch) {
    throw new SpoolError(
      'INVALID_UPDATE_VERSION',
      `partition epoch ${item.partitionEpoch} of ${name} is stale; it is ${record.partitionEpoch}`,
    );
  }
  const newIsr = [...new Set(item.newIsr)];
  if (!newIsr.includes(record.leader)) {
    throw new SpoolError('INELIGIBLE_REPLICA', `new_isr of ${name} must include its leader`);
  }
  for (const replica of newIsr) {
    const joining = !record.isr.includes(replica);
    if (!record.replicas.includes(replica) || (joining && !live.has(replica))) {
      throw new SpoolError(
        'INELIGIBLE_REPLICA',
        `broker ${replica} cannot join the ISR of ${name}: ` +
          (record.replicas.includes(replica) ? 'it is not live' : 'it is not a replica'),
      );
    }
  }
  return { ...record, isr: newIsr, partitionEpoch: record.partitionEpoch + 1 };
}

/**
 * Runs the elections that need no request: offline partitions whose ISR member is back (or any
 * live replica, with unclean election allowed), and, when asked, preferred leaders. Each
 * partition's election stands alone, so they are written in bounded transactions, not one.
 */
export async function runAutomaticElections(
  context: ControllerContext,
  brokers: BrokerLifecycle,
  options: { preferred: boolean },
): Promise<number> {
  const live = context.liveBrokerIds();
  const keys = context.writer.metadataKeys;
  const changes: Array<{ key: string; modRevision: bigint; change: PartitionChange }> = [];
  for (const topic of context.state.topics.values()) {
    const unclean =
      effectiveTopicConfig(topic.record.configs, 'unclean.leader.election.enable') === 'true';
    for (const partition of topic.partitions.values()) {
      const change =
        electOffline(partition.record, live, unclean) ??
        (options.preferred ? electPreferred(partition.record, live) : undefined);
      if (change !== undefined) {
        changes.push({
          key: keys.partition(partition.topic, partition.partition),
          modRevision: partition.modRevision,
          change,
        });
      }
    }
  }
  if (changes.length === 0) return 0;
  await context.writer.commitIndependent(
    changes.map((change) => ({
      compare: context.writer.unchangedSince(change.key, change.modRevision),
      operation: { kind: 'put', key: change.key, value: encodeRecord(change.change.record) },
    })),
  );
  brokers.countElections(changes.map((change) => change.change));
  context.logger.info({ partitions: changes.length }, 'leaders elected');
  return changes.length;
}
