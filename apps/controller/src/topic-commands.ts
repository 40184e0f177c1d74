/**
 * Topic administration on the active controller: CreateTopics, DeleteTopics, CreatePartitions,
 * AlterConfigs. Each topic in a request succeeds or fails on its own, with Kafka's error name; a
 * topic that fails validation writes nothing, and a topic that passes is written as one change
 * that readers see whole or not at all, whatever its size (topic-changes.ts). Before each
 * command, changes an earlier controller left unfinished are resolved, so a command never builds
 * on half of one.
 */
import { randomUUID } from 'node:crypto';
import { SpoolError } from '@spool/common';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type TopicRecord } from './metadata-records';
import { assignReplicas } from './replica-placement';
import {
  resolvePendingTopicChanges,
  writePartitionGrowth,
  writeTopicCreation,
  writeTopicDeletion,
} from './topic-changes';
import {
  topicConfigDefinitions,
  validateTopicConfig,
  validateTopicConfigCombination,
  validateTopicConfigs,
} from './topic-configs';
import {
  partitionCountMax,
  validatePartitionCount,
  validateReplicationFactor,
  validateTopicName,
} from './topic-validation';

export interface TopicOutcome {
  readonly name: string;
  readonly error?: SpoolError;
  readonly topicId?: string;
}

export interface CreateTopicInput {
  readonly name: string;
  /** -1 means the controller's default. */
  readonly partitionCount: number;
  /** -1 means the controller's default. */
  readonly replicationFactor: number;
  readonly configs: ReadonlyArray<{ name: string; value: string }>;
}

/** Internal topics (like __consumer_offsets) are created by Spool itself, never deleted. */
export const internalTopics: ReadonlySet<string> = new Set(['__consumer_offsets']);

function outcomeOf(name: string, run: () => Promise<string | undefined>): Promise<TopicOutcome> {
  return run().then(
    (topicId) => (topicId === undefined ? { name } : { name, topicId }),
    (error: unknown) => {
      if (
        error instanceof SpoolError &&
        error.code !== 'NOT_CONTROLLER' &&
        error.code !== 'UNAVAILABLE'
      ) {
        return { name, error };
      }
      throw error;
    },
  );
}

function duplicates(names: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const name of names) (seen.has(name) ? repeated : seen).add(name);
  return repeated;
}

/** The brokers new replicas may go to: live and not decommissioned. */
export function placementBrokers(context: ControllerContext) {
  const live = context.liveBrokerIds();
  return [...context.state.brokers.values()]
    .filter((broker) => live.has(broker.record.brokerId) && broker.record.decommissioned !== true)
    .map((broker) => ({ brokerId: broker.record.brokerId, rack: broker.record.rack }));
}

export async function createTopics(
  context: ControllerContext,
  topics: readonly CreateTopicInput[],
  validateOnly: boolean,
): Promise<TopicOutcome[]> {
  const repeated = duplicates(topics.map((topic) => topic.name));
  if (!validateOnly) await resolvePendingTopicChanges(context);
  const outcomes: TopicOutcome[] = [];
  for (const topic of topics) {
    outcomes.push(
      await outcomeOf(topic.name, async () => {
        if (repeated.has(topic.name)) {
          throw new SpoolError(
            'INVALID_REQUEST',
            `topic "${topic.name}" appears more than once in the request`,
          );
        }
        validateTopicName(topic.name);
        const partitionCount =
          topic.partitionCount === -1
            ? context.settings.defaultPartitionCount
            : topic.partitionCount;
        validatePartitionCount(partitionCount);
        const brokers = placementBrokers(context);
        const replicationFactor =
          topic.replicationFactor === -1
            ? Math.min(context.settings.defaultReplicationFactor, Math.max(brokers.length, 1))
            : topic.replicationFactor;
        validateReplicationFactor(replicationFactor, brokers.length);
        const configs = validateTopicConfigs(topic.configs);
        validateTopicConfigCombination(configs);
        if (context.state.topics.has(topic.name)) {
          throw new SpoolError('TOPIC_ALREADY_EXISTS', `topic "${topic.name}" already exists`);
        }
        if (validateOnly) return undefined;
        return writeNewTopic(
          context,
          topic.name,
          partitionCount,
          replicationFactor,
          configs,
          false,
        );
      }),
    );
  }
  return outcomes;
}

/** Writes a validated new topic; also used for internal topics. Returns the topic id. */
export async function writeNewTopic(
  context: ControllerContext,
  name: string,
  partitionCount: number,
  replicationFactor: number,
  configs: Readonly<Record<string, string>>,
  internal: boolean,
): Promise<string> {
  const assignment = assignReplicas(placementBrokers(context), partitionCount, replicationFactor);
  const record: TopicRecord = { name, topicId: randomUUID(), partitionCount, configs, internal };
  try {
    await writeTopicCreation(context, record, assignment);
  } catch (error) {
    if (error instanceof SpoolError && error.code === 'INVALID_UPDATE_VERSION') {
      throw new SpoolError('TOPIC_ALREADY_EXISTS', `topic "${name}" already exists`);
    }
    throw error;
  }
  context.logger.info({ topic: name, partitionCount, replicationFactor, configs }, 'topic created');
  return record.topicId;
}

export async function deleteTopics(
  context: ControllerContext,
  names: readonly string[],
): Promise<TopicOutcome[]> {
  await resolvePendingTopicChanges(context);
  const outcomes: TopicOutcome[] = [];
  for (const name of names) {
    outcomes.push(
      await outcomeOf(name, async () => {
        const topic = context.state.topics.get(name);
        if (topic === undefined) {
          throw new SpoolError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${name}" does not exist`);
        }
        if (topic.record.internal || internalTopics.has(name)) {
          throw new SpoolError(
            'INVALID_TOPIC_EXCEPTION',
            `topic "${name}" is internal and cannot be deleted`,
          );
        }
        await writeTopicDeletion(context, topic);
        context.logger.info({ topic: name }, 'topic deleted');
        return topic.record.topicId;
      }),
    );
  }
  return outcomes;
}

export async function createPartitions(
  context: ControllerContext,
  requests: ReadonlyArray<{ name: string; count: number }>,
  validateOnly: boolean,
): Promise<TopicOutcome[]> {
  if (!validateOnly) await resolvePendingTopicChanges(context);
  const outcomes: TopicOutcome[] = [];
  for (const request of requests) {
    outcomes.push(
      await outcomeOf(request.name, async () => {
        const topic = context.state.topics.get(request.name);
        if (topic === undefined) {
          throw new SpoolError(
            'UNKNOWN_TOPIC_OR_PARTITION',
            `topic "${request.name}" does not exist`,
          );
        }
        const current = topic.record.partitionCount;
        if (
          !Number.isInteger(request.count) ||
          request.count <= current ||
          request.count > partitionCountMax
        ) {
          throw new SpoolError(
            'INVALID_PARTITIONS',
            `count is ${request.count}; topic "${request.name}" has ${current} partitions and can only grow, ` +
              `to at most ${partitionCountMax}`,
          );
        }
        const replicationFactor = topic.partitions.get(0)?.record.replicas.length ?? 1;
        const brokers = placementBrokers(context);
        validateReplicationFactor(replicationFactor, brokers.length);
        if (validateOnly) return undefined;
        const added = assignReplicas(brokers, request.count - current, replicationFactor, {
          startPartitionId: current,
        });
        await writePartitionGrowth(context, topic, request.count, added);
        context.logger.info(
          { topic: request.name, partitionCount: request.count, previousPartitionCount: current },
          'partitions created',
        );
        return undefined;
      }),
    );
  }
  return outcomes;
}

export async function alterConfigs(
  context: ControllerContext,
  requests: ReadonlyArray<{
    topic: string;
    set: ReadonlyArray<{ name: string; value: string }>;
    delete: readonly string[];
  }>,
  validateOnly: boolean,
): Promise<TopicOutcome[]> {
  const keys = context.writer.metadataKeys;
  if (!validateOnly) await resolvePendingTopicChanges(context);
  const outcomes: TopicOutcome[] = [];
  for (const request of requests) {
    outcomes.push(
      await outcomeOf(request.topic, async () => {
        const topic = context.state.topics.get(request.topic);
        if (topic === undefined) {
          throw new SpoolError(
            'UNKNOWN_TOPIC_OR_PARTITION',
            `topic "${request.topic}" does not exist`,
          );
        }
        const configs: Record<string, string> = {
          ...topic.record.configs,
          ...validateTopicConfigs(request.set),
        };
        for (const name of request.delete) {
          if (topicConfigDefinitions[name] === undefined) validateTopicConfig(name, '');
          delete configs[name];
        }
        validateTopicConfigCombination(configs);
        if (validateOnly) return undefined;
        await context.writer.commit(
          [{ key: keys.topic(request.topic), kind: 'modRevision', equals: topic.modRevision }],
          [
            {
              kind: 'put',
              key: keys.topic(request.topic),
              value: encodeRecord({ ...topic.record, configs }),
            },
          ],
        );
        context.logger.info({ topic: request.topic, configs }, 'topic configs altered');
        return undefined;
      }),
    );
  }
  return outcomes;
}
