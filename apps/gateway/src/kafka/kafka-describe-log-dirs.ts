/**
 * DescribeLogDirs (35): a broker describes its own log directories, so the answer is for the
 * storage broker whose port the connection arrived on (kafka-broker-ports.ts). Kafka's tools ask
 * it of each broker that holds a replica (kafka-reassign-partitions prints each replica's log
 * directory; kafka-log-dirs lists sizes).
 *
 * 1. A storage node has one data directory: one result, named `spool-storage-<broker id>` (the
 *    node does not report its path), holding the partitions whose replicas the metadata places on
 *    the broker, filtered by the request's topics and partitions (null: all).
 * 2. Each partition's size is the one the node's heartbeats last reported to the controller (the
 *    balancer's figures), 0 for a replica it has not reported yet (new, or just after a
 *    controller takeover). offsetLag is 0 and no key is a future one (no AlterReplicaLogDirs).
 * 3. A data directory that the node reports offline is KAFKA_STORAGE_ERROR with no topics.
 * 4. On the bootstrap port, which stands for no broker, and for a broker the controller does not
 *    know, there is no log directory: the results are empty. Volume sizes are unknown (-1).
 */
import {
  type DescribeLogDirsRequest as KafkaDescribeLogDirsRequest,
  type DescribeLogDirsResponse as KafkaDescribeLogDirsResponse,
  type DescribeLogDirsTopic,
  defaultDescribeLogDirsResponse,
  defaultDescribeLogDirsResult,
  readDescribeLogDirsRequest,
  writeDescribeLogDirsResponse,
} from '@spool/kafka-protocol';
import type { BrokerLogDir } from '@spool/protocol';
import type { adminHandlers } from '../admin-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';

const describeLogDirsApiKey = 35;
const kafkaStorageError = 56;

export function describeLogDirsApi(
  view: KafkaClusterView,
  admin: ReturnType<typeof adminHandlers>,
): KafkaApi<KafkaDescribeLogDirsRequest, KafkaDescribeLogDirsResponse> {
  return {
    apiKey: describeLogDirsApiKey,
    minVersion: 1,
    maxVersion: 4,
    read: readDescribeLogDirsRequest,
    write: writeDescribeLogDirsResponse,
    serve: async (request, _version, context) => {
      // Point 4.
      const { brokerId } = context;
      if (brokerId === undefined) return defaultDescribeLogDirsResponse();
      const answer = await admin.describeLogDirs({ brokerIds: [brokerId] });
      const logDir = answer.results.find((result) => result.brokerId === brokerId);
      if (logDir === undefined || logDir.error !== undefined) {
        return defaultDescribeLogDirsResponse();
      }
      const result = { ...defaultDescribeLogDirsResult(), logDir: `spool-storage-${brokerId}` };
      // Point 3.
      if (logDir.logDirOffline) {
        return {
          ...defaultDescribeLogDirsResponse(),
          results: [{ ...result, errorCode: kafkaStorageError }],
        };
      }
      return {
        ...defaultDescribeLogDirsResponse(),
        results: [{ ...result, topics: topicsOn(view, brokerId, logDir, request.topics) }],
      };
    },
  };
}

/** Points 1 and 2. */
function topicsOn(
  view: KafkaClusterView,
  brokerId: number,
  logDir: BrokerLogDir,
  wanted: KafkaDescribeLogDirsRequest['topics'],
): DescribeLogDirsTopic[] {
  const sizes = new Map(
    logDir.replicaSizes.map((size) => [`${size.topic}\u0000${size.partition}`, size.sizeBytes]),
  );
  const wantedPartitions =
    wanted === null
      ? undefined
      : new Map(wanted.map((topic) => [topic.topic, new Set(topic.partitions)]));
  const topics: DescribeLogDirsTopic[] = [];
  for (const topic of view.link.metadata.topics.values()) {
    const partitionsWanted = wantedPartitions?.get(topic.name);
    if (wantedPartitions !== undefined && partitionsWanted === undefined) continue;
    const partitions = topic.partitions
      .filter((partition) => partition.replicas.includes(brokerId))
      .filter((partition) => partitionsWanted?.has(partition.partition) ?? true)
      .sort((left, right) => left.partition - right.partition)
      .map((partition) => ({
        partitionIndex: partition.partition,
        partitionSize: sizes.get(`${topic.name}\u0000${partition.partition}`) ?? 0n,
        offsetLag: 0n,
        isFutureKey: false,
      }));
    if (partitions.length > 0) topics.push({ name: topic.name, partitions });
  }
  return topics.sort((left, right) => left.name.localeCompare(right.name));
}
