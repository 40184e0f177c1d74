// AlterPartition: a partition leader's ISR changes, bounded per request.
import { SpoolError } from '@spool/common';
import type {
  AlterPartitionRequest,
  AlterPartitionResponse,
  AlterPartitionTopicResult,
} from '@spool/protocol';
import { partitionMetadataOf } from '../metadata-conversions';
import type { ControllerContext } from '../controller-context';
import {
  alterPartitions,
  type AlterPartitionItem,
  type AlterPartitionResult,
} from '../partition-commands';
import { completeReassignments } from '../reassignment-commands';
import { protoError, type ControllerAccess } from './controller-access';

/**
 * The most partitions one AlterPartition may name: the controller's queue waits behind the
 * request's transactions (100 partitions each), so a leader sends more as several requests.
 */
export const alterPartitionMaxPartitions = 2_000;

function requireInt32(value: number, field: string, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `${field} is ${value}; it must be an integer of at least ${min}`,
    );
  }
}

/**
 * A replica that joined the ISR may complete its partition's move. The completion is its own
 * write after the ISR change, not part of it: the leader applies AlterPartition's answer
 * directly, and must learn of a new leader or replica set from the metadata stream. A failure is
 * logged, not answered: maintenance completes the move on its next round.
 */
async function completeReassignmentsAfter(
  context: ControllerContext,
  results: readonly AlterPartitionResult[],
): Promise<void> {
  const changed = results.flatMap((result) =>
    result.error === undefined && result.partition.record.addingReplicas !== undefined
      ? [context.state.topics.get(result.item.topic)?.partitions.get(result.item.partition)]
      : [],
  );
  try {
    await completeReassignments(
      context,
      changed.filter((partition) => partition !== undefined),
    );
  } catch (error) {
    context.logger.warn({ err: error }, 'completing reassignments failed; maintenance retries');
  }
}

export function alterPartitionHandler(role: ControllerAccess) {
  return async (request: AlterPartitionRequest): Promise<AlterPartitionResponse> => {
    requireInt32(request.brokerId, 'broker_id', 0);
    const partitions: AlterPartitionItem[] = [];
    for (const topic of request.topics) {
      for (const item of topic.partitions) {
        requireInt32(item.partition, `partition of topic ${topic.topic}`, 0);
        partitions.push({ topic: topic.topic, ...item });
      }
    }
    if (partitions.length > alterPartitionMaxPartitions) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `AlterPartition names ${partitions.length} partitions; at most ${alterPartitionMaxPartitions} per request`,
      );
    }
    const { controller } = await role.requireActive();
    let results;
    try {
      results = await controller.queue.run(async () => {
        const altered = await alterPartitions(controller.context, controller.brokers, {
          brokerId: request.brokerId,
          brokerEpoch: request.brokerEpoch,
          partitions,
        });
        await completeReassignmentsAfter(controller.context, altered);
        return altered;
      });
    } catch (error) {
      if (
        !(error instanceof SpoolError) ||
        error.code === 'NOT_CONTROLLER' ||
        error.code === 'REQUEST_TIMED_OUT' ||
        error.code === 'UNAVAILABLE'
      ) {
        throw error;
      }
      return { error: protoError(error), topics: [] };
    }
    const topics = new Map<string, AlterPartitionTopicResult>();
    for (const result of results) {
      let topic = topics.get(result.item.topic);
      if (topic === undefined) {
        topic = { topic: result.item.topic, partitions: [] };
        topics.set(result.item.topic, topic);
      }
      topic.partitions.push({
        partition: result.item.partition,
        error: protoError(result.error),
        partitionMetadata:
          result.partition === undefined ? undefined : partitionMetadataOf(result.partition),
      });
    }
    return { error: undefined, topics: [...topics.values()] };
  };
}
