/**
 * OffsetDelete (kafka-consumer-groups --delete-offsets, Admin.deleteConsumerGroupOffsets): removes
 * a group's committed offsets of some partitions on the coordinator that owns the group, as the
 * gRPC DeleteOffsets does.
 *
 * 1. The group's own errors (GROUP_ID_NOT_FOUND, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
 *    INVALID_GROUP_ID) are the response's error, with every partition answered by it too.
 * 2. A partition of a topic a member of the group subscribes to is GROUP_SUBSCRIBED_TO_TOPIC (86),
 *    its offset kept, as Kafka's coordinator answers; the others are deleted (a partition with
 *    nothing committed is answered without error).
 */
import {
  type OffsetDeleteRequest,
  type OffsetDeleteResponse,
  defaultOffsetDeleteResponse,
  readOffsetDeleteRequest,
  writeOffsetDeleteResponse,
} from '@spool/kafka-protocol';
import type { DeleteOffsetsRequest, DeleteOffsetsResponse } from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import { kafkaErrorNumberOf } from './kafka-errors';

const offsetDeleteApiKey = 47;

export interface OffsetDeleteCoordinators {
  readonly deleteOffsets: (request: DeleteOffsetsRequest) => Promise<DeleteOffsetsResponse>;
}

export function offsetDeleteApi(
  coordinators: OffsetDeleteCoordinators,
): KafkaApi<OffsetDeleteRequest, OffsetDeleteResponse> {
  return {
    apiKey: offsetDeleteApiKey,
    minVersion: 0,
    maxVersion: 0,
    read: readOffsetDeleteRequest,
    write: writeOffsetDeleteResponse,
    serve: async (request) => {
      const wanted = request.topics.flatMap((topic) =>
        topic.partitions.map((partition) => ({
          topic: topic.name,
          partition: partition.partitionIndex,
        })),
      );
      const answer = await coordinators.deleteOffsets({
        groupId: request.groupId,
        partitions: wanted,
      });
      // Point 1.
      const groupErrorCode = kafkaErrorNumberOf(answer.error?.code);
      let position = 0;
      return {
        ...defaultOffsetDeleteResponse(),
        errorCode: groupErrorCode,
        topics: request.topics.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => {
            // Point 2: the coordinator answers the partitions in the request's order.
            const result = answer.partitions[position];
            position += 1;
            return {
              partitionIndex: partition.partitionIndex,
              errorCode:
                groupErrorCode !== 0 || result === undefined
                  ? groupErrorCode
                  : kafkaErrorNumberOf(result.error?.code),
            };
          }),
        })),
      };
    },
  };
}
