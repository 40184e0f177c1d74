import { SpoolError } from '@spool/common';
import type { DeleteRecordsRequest, DeleteRecordsResponse } from '@spool/protocol';
import type { ReplicaManager } from '../replica/replica-manager';
import { protoError } from './proto-error';

/**
 * Kafka's DeleteRecords on the leader: moves each partition's log start up to the offset asked
 * (-1: the high watermark), never past the high watermark.
 */
export function deleteRecordsHandler(
  replicas: () => ReplicaManager,
): (request: DeleteRecordsRequest) => Promise<DeleteRecordsResponse> {
  return async (request) => {
    return {
      results: request.partitions.map((partition) => {
        const base = {
          topic: partition.topic,
          partition: partition.partition,
          error: undefined,
          lowWatermark: -1n,
        };
        try {
          const replica = replicas().require(partition.topic, partition.partition);
          replica.ensureLeader();
          const target = partition.offset === -1n ? replica.highWatermark : partition.offset;
          if (target < 0n || target > replica.highWatermark) {
            throw new SpoolError(
              'OFFSET_OUT_OF_RANGE',
              `offset ${partition.offset} of ${replica.name} is not between 0 and the high watermark ${replica.highWatermark}`,
            );
          }
          replica.log.deleteRecordsBefore(target);
          return { ...base, lowWatermark: replica.log.logStartOffset };
        } catch (error) {
          return { ...base, error: protoError(error) };
        }
      }),
    };
  };
}
