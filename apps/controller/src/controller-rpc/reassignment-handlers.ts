// AlterPartitionReassignments and ListPartitionReassignments (KIP-455): per-partition answers.
import { SpoolError } from '@spool/common';
import type {
  AlterPartitionReassignmentsRequest,
  AlterPartitionReassignmentsResponse,
  ListPartitionReassignmentsRequest,
  ListPartitionReassignmentsResponse,
  OngoingTopicReassignment,
  ReassignableTopicResult,
} from '@spool/protocol';
import {
  alterPartitionReassignments,
  listPartitionReassignments,
  type ReassignmentTarget,
} from '../reassignment-commands';
import { protoError, type ControllerAccess } from './controller-access';

/**
 * The most partitions one AlterPartitionReassignments may name: each is its own store write on
 * the controller's queue, which every other command waits behind. A larger plan is sent in parts.
 */
export const alterReassignmentsMaxPartitions = 1_000;

function targetsOf(request: AlterPartitionReassignmentsRequest): ReassignmentTarget[] {
  const targets: ReassignmentTarget[] = [];
  for (const topic of request.topics) {
    for (const item of topic.partitions) {
      const name = `${topic.name}-${item.partition}`;
      if (!Number.isInteger(item.partition) || item.partition < 0) {
        throw new SpoolError('INVALID_REQUEST', `partition ${name}: a partition is at least 0`);
      }
      if (item.cancel && item.replicas.length > 0) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `partition ${name}: cancel takes no replicas (it restores the original ones)`,
        );
      }
      targets.push({
        topic: topic.name,
        partition: item.partition,
        replicas: item.cancel ? undefined : [...item.replicas],
      });
    }
  }
  if (targets.length > alterReassignmentsMaxPartitions) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `AlterPartitionReassignments names ${targets.length} partitions; at most ` +
        `${alterReassignmentsMaxPartitions} per request`,
    );
  }
  return targets;
}

export function alterPartitionReassignmentsHandler(role: ControllerAccess) {
  return async (
    request: AlterPartitionReassignmentsRequest,
  ): Promise<AlterPartitionReassignmentsResponse> => {
    let targets: ReassignmentTarget[];
    try {
      targets = targetsOf(request);
    } catch (error) {
      if (!(error instanceof SpoolError)) throw error;
      return { error: protoError(error), topics: [] };
    }
    const { controller } = await role.requireActive();
    const results = await controller.queue.run(() =>
      alterPartitionReassignments(controller.context, targets),
    );
    const topics = new Map<string, ReassignableTopicResult>();
    for (const { target, error } of results) {
      let topic = topics.get(target.topic);
      if (topic === undefined) {
        topic = { name: target.topic, partitions: [] };
        topics.set(target.topic, topic);
      }
      topic.partitions.push({ partition: target.partition, error: protoError(error) });
    }
    return { error: undefined, topics: [...topics.values()] };
  };
}

export function listPartitionReassignmentsHandler(role: ControllerAccess) {
  return async (
    request: ListPartitionReassignmentsRequest,
  ): Promise<ListPartitionReassignmentsResponse> => {
    const { controller } = await role.requireActive();
    const topics = new Map<string, OngoingTopicReassignment>();
    for (const ongoing of listPartitionReassignments(controller.context, request.topics)) {
      let topic = topics.get(ongoing.topic);
      if (topic === undefined) {
        topic = { name: ongoing.topic, partitions: [] };
        topics.set(ongoing.topic, topic);
      }
      topic.partitions.push({
        partition: ongoing.partition,
        replicas: [...ongoing.replicas],
        addingReplicas: [...ongoing.addingReplicas],
        removingReplicas: [...ongoing.removingReplicas],
      });
    }
    return { topics: [...topics.values()] };
  };
}
