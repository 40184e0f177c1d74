/**
 * AlterPartitionReassignments (API 45) and ListPartitionReassignments (API 46), KIP-455, on the
 * controller's own calls: each partition is checked and answered on its own there.
 *
 * 1. Alter: a partition with replicas starts or changes its move; null replicas cancel it. A
 *    request the controller refuses whole (too many partitions, a malformed entry) is answered
 *    with that error at the top and on every partition. Version 0 only: version 1's
 *    allowReplicationFactorChange=false is not enforced, so it is not advertised.
 * 2. List: every reassignment in progress, or those of the named topics' named partitions.
 */
import {
  type AlterPartitionReassignmentsRequest,
  type AlterPartitionReassignmentsResponse,
  type ListPartitionReassignmentsRequest,
  type ListPartitionReassignmentsResponse,
  defaultAlterPartitionReassignmentsResponse,
  defaultListPartitionReassignmentsResponse,
  readAlterPartitionReassignmentsRequest,
  readListPartitionReassignmentsRequest,
  writeAlterPartitionReassignmentsResponse,
  writeListPartitionReassignmentsResponse,
} from '@spool/kafka-protocol';
import { adminHandlers } from '../admin-handlers';
import type { OffsetDependencies } from '../offset-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import { kafkaErrorOf } from './kafka-errors';

const ApiKey = { AlterPartitionReassignments: 45, ListPartitionReassignments: 46 } as const;

export function partitionReassignmentApis(
  offsets: OffsetDependencies,
): Array<KafkaApi<never, never>> {
  const admin = adminHandlers(offsets.link);

  const alter: KafkaApi<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse> = {
    apiKey: ApiKey.AlterPartitionReassignments,
    minVersion: 0,
    maxVersion: 0,
    read: readAlterPartitionReassignmentsRequest,
    write: writeAlterPartitionReassignmentsResponse,
    serve: async (request) => {
      // Point 1.
      const answer = await admin.alterPartitionReassignments({
        topics: request.topics.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => ({
            partition: partition.partitionIndex,
            replicas: partition.replicas ?? [],
            cancel: partition.replicas === null,
          })),
        })),
      });
      const errors = new Map<string, { code: string; message: string } | undefined>();
      for (const topic of answer.topics) {
        for (const partition of topic.partitions) {
          errors.set(`${topic.name}\u0000${partition.partition}`, partition.error);
        }
      }
      return {
        ...defaultAlterPartitionReassignmentsResponse(),
        ...kafkaErrorOf(answer.error),
        responses: request.topics.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => ({
            partitionIndex: partition.partitionIndex,
            ...kafkaErrorOf(
              answer.error ?? errors.get(`${topic.name}\u0000${partition.partitionIndex}`),
            ),
          })),
        })),
      };
    },
  };

  const list: KafkaApi<ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse> = {
    apiKey: ApiKey.ListPartitionReassignments,
    minVersion: 0,
    maxVersion: 0,
    read: readListPartitionReassignmentsRequest,
    write: writeListPartitionReassignmentsResponse,
    serve: async (request) => {
      // Point 2.
      const named = request.topics === null ? undefined : request.topics;
      const answer = await admin.listPartitionReassignments({
        topics: named === undefined ? [] : named.map((topic) => topic.name),
      });
      const wanted = (topic: string, partition: number): boolean =>
        named === undefined ||
        named.some((entry) => entry.name === topic && entry.partitionIndexes.includes(partition));
      return {
        ...defaultListPartitionReassignmentsResponse(),
        topics: answer.topics
          .map((topic) => ({
            name: topic.name,
            partitions: topic.partitions
              .filter((partition) => wanted(topic.name, partition.partition))
              .map((partition) => ({
                partitionIndex: partition.partition,
                replicas: partition.replicas,
                addingReplicas: partition.addingReplicas,
                removingReplicas: partition.removingReplicas,
              })),
          }))
          .filter((topic) => topic.partitions.length > 0),
      };
    },
  };

  return [alter, list] as unknown as Array<KafkaApi<never, never>>;
}
