import type { ConsumerGroupHeartbeatRequest } from '@spool/protocol';
import type { TopicPartitionCounts } from '../groups/types';

/**
 * Helpers for the group's unit tests: a mutable topic catalogue and heartbeat requests with
 * defaults. Test code: tsconfig.lib.json leaves src/testing/ out of the build.
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
