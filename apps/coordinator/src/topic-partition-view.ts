import type { ClusterMetadataCache } from '@spool/protocol';
import type { TopicPartitionCounts } from '@spool/consumer-group';

/** The group state machine's view of the cluster's topics, read from the metadata cache. */
export function topicPartitionView(metadata: ClusterMetadataCache): TopicPartitionCounts {
  return {
    partitionCount: (topic) => metadata.topics.get(topic)?.partitions.length,
    *topicNames() {
      for (const topic of metadata.topics.values()) if (!topic.internal) yield topic.name;
    },
  };
}
