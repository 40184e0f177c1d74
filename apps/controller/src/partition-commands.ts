/**
 * Partition state changes on the active controller: a leader's AlterPartition (ISR shrink or
 * expand, a compare-and-set on the partition epoch), and the elections the controller runs by
 * itself: leaders for offline partitions once an eligible replica is back, and the preferred
 * leader when it is back in the ISR.
 */
import type { BrokerLifecycle } from './broker-lifecycle';
import type { PartitionState } from './cluster-state';
import type { ControllerContext } from './controller-context';
import { ControllerError } from './controller-errors';
import { encodeRecord, type PartitionRecord } from './metadata-records';
import { electOffline, electPreferred, type PartitionChange } from './partition-elections';
import { effectiveTopicConfig } from './topic-configs';

export interface AlterPartitionInput {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
  readonly topic: string;
  readonly partition: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly newIsr: readonly number[];
}

export async function alterPartition(
  context: ControllerContext,
  brokers: BrokerLifecycle,
  input: AlterPartitionInput,
): Promise<PartitionState> {
  brokers.checkEpoch(input.brokerId, input.brokerEpoch);
  const current = context.state.topics.get(input.topic)?.partitions.get(input.partition);
  if (current === undefined) {
    throw new ControllerError(
      'UNKNOWN_TOPIC_OR_PARTITION',
      `partition ${input.topic}-${input.partition} does not exist`,
    );
  }
  const record = current.record;
  if (record.leader !== input.brokerId) {
    throw new ControllerError(
      'NOT_LEADER_OR_FOLLOWER',
      `broker ${input.brokerId} does not lead ${input.topic}-${input.partition}; broker ${record.leader} does`,
    );
  }
  if (input.leaderEpoch !== record.leaderEpoch) {
    throw new ControllerError(
      'FENCED_LEADER_EPOCH',
      `leader epoch ${input.leaderEpoch} of ${input.topic}-${input.partition} is stale; it is ${record.leaderEpoch}`,
    );
  }
  if (input.partitionEpoch !== record.partitionEpoch) {
    throw new ControllerError(
      'INVALID_UPDATE_VERSION',
      `partition epoch ${input.partitionEpoch} of ${input.topic}-${input.partition} is stale; it is ${record.partitionEpoch}`,
    );
  }
  const newIsr = [...new Set(input.newIsr)];
  if (!newIsr.includes(record.leader)) {
    throw new ControllerError(
      'INELIGIBLE_REPLICA',
      `new_isr of ${input.topic}-${input.partition} must include its leader`,
    );
  }
  const live = context.liveBrokerIds();
  for (const replica of newIsr) {
    const joining = !record.isr.includes(replica);
    if (!record.replicas.includes(replica) || (joining && !live.has(replica))) {
      throw new ControllerError(
        'INELIGIBLE_REPLICA',
        `broker ${replica} cannot join the ISR of ${input.topic}-${input.partition}: ` +
          (record.replicas.includes(replica) ? 'it is not live' : 'it is not a replica'),
      );
    }
  }
  const next: PartitionRecord = {
    ...record,
    isr: newIsr,
    partitionEpoch: record.partitionEpoch + 1,
  };
  const key = context.writer.metadataKeys.partition(input.topic, input.partition);
  await context.writer.commit(
    [{ key, kind: 'modRevision', equals: current.modRevision }],
    [{ kind: 'put', key, value: encodeRecord(next) }],
  );
  context.logger.info(
    { topic: input.topic, partition: input.partition, isr: newIsr, previousIsr: record.isr },
    newIsr.length < record.isr.length ? 'ISR shrank' : 'ISR changed',
  );
  return context.state.topics.get(input.topic)!.partitions.get(input.partition)!;
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
