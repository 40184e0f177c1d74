import type { ConsumerGroupHeartbeatRequest } from '@spool/protocol';
import type { TopicPartitionCounts } from './types';

/**
 * Helpers for the group's unit tests (not exported from index.ts): a mutable topic catalogue and
 * heartbeat requests with defaults.
 */
export class TestTopics implements TopicPartitionCounts {
  readonly counts = new Map<string, number>();

  constructor(initial: Record<string, number> = {}) {
    for (const [topic, count] of Object.entries(initial)) this.counts.set(topic, count);
  }

  partitionCount(topic: string): number | undefined {
    return this.counts.get(topic);
  }

  topicNames(): Iterable<string> {
    return this.counts.keys();
  }
}

export function heartbeatRequest(
  fields: Partial<ConsumerGroupHeartbeatRequest> = {},
): ConsumerGroupHeartbeatRequest {
  return {
    groupId: 'g',
    memberId: '',
    memberEpoch: 0,
    instanceId: '',
    subscribedTopics: [],
    subscribedRegex: '',
    ownedPartitions: [],
    rebalanceTimeoutMs: 0,
    assignor: '',
    ...fields,
  };
}
