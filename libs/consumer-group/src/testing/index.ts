import type { ConsumerGroupHeartbeatRequest } from '@spool/protocol';
import type { TopicPartitionCounts } from '../group-settings';

/**
 * Helpers for tests of the group (its own specs, the coordinator's, the SDK's fake coordinator):
 * a mutable topic catalogue and heartbeat requests with defaults. The `@spool/consumer-group/
 * testing` entry: built to dist/testing/, left out of the image and the SDK package.
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
    rackId: '',
    clientId: '',
    clientHost: '',
    memberType: '',
    ...fields,
  };
}
