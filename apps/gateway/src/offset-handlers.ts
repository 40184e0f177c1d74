/**
 * ListOffsets and DeleteRecords: per-partition calls routed to each partition's leader like
 * Produce (sendToLeaders), answered one result per partition in the request's order.
 */
import { callOnce, SpoolError, wireErrorOf } from '@spool/common';
import type {
  DeleteRecordsPartition,
  DeleteRecordsRequest,
  DeleteRecordsResponse,
  DeleteRecordsResult,
  ListOffsetsPartition,
  ListOffsetsRequest,
  ListOffsetsResponse,
  ListOffsetsResult,
  StorageServiceClient,
} from '@spool/protocol';
import { sendToLeaders } from './leader-router';
import type { MetadataLink } from './metadata-link';
import { duplicatePositions, partitionName } from './partition-routing';

/** How long a ListOffsets may take over all its retries. */
const listOffsetsTimeoutMs = 30_000;
/** DeleteRecords' timeout when the request names none (Kafka's request.timeout.ms). */
const deleteRecordsTimeoutMsDefault = 30_000;
const deleteRecordsTimeoutMsMax = 120_000;
/** One call to a leader: these are quick lookups and log-start moves. */
const storageCallDeadlineMs = 10_000;

export interface OffsetDependencies {
  readonly link: MetadataLink;
  readonly storageClient: (brokerId: number) => StorageServiceClient | undefined;
}

function requireClient(dependencies: OffsetDependencies, leaderId: number): StorageServiceClient {
  const client = dependencies.storageClient(leaderId);
  if (client === undefined) {
    throw new SpoolError(
      'LEADER_NOT_AVAILABLE',
      `the gRPC endpoint of broker ${leaderId} is not in the metadata`,
    );
  }
  return client;
}

function duplicateError(key: { topic: string; partition: number }) {
  return wireErrorOf(
    new SpoolError(
      'INVALID_REQUEST',
      `${partitionName(key)} appears more than once in the request`,
    ),
  );
}

export async function handleListOffsets(
  request: ListOffsetsRequest,
  dependencies: OffsetDependencies,
): Promise<ListOffsetsResponse> {
  const failed = (
    partition: ListOffsetsPartition,
    error: ListOffsetsResult['error'],
  ): ListOffsetsResult => ({
    topic: partition.topic,
    partition: partition.partition,
    error,
    offset: -1n,
    timestampMs: -1n,
    leaderEpoch: -1,
  });
  const duplicates = duplicatePositions(request.partitions);
  const unique = request.partitions.filter((_, position) => !duplicates.has(position));
  const answered = await sendToLeaders(
    dependencies.link,
    unique,
    Date.now() + listOffsetsTimeoutMs,
    {
      send: async (leaderId, partitions, remainingMs) => {
        const client = requireClient(dependencies, leaderId);
        const response = await callOnce(
          client,
          client.listOffsets,
          { partitions },
          { deadlineMs: Math.min(remainingMs, storageCallDeadlineMs) },
        );
        return response.results;
      },
      errorOf: (result) => result.error,
      failed,
    },
  );
  let next = 0;
  return {
    results: request.partitions.map((partition, position) =>
      duplicates.has(position) ? failed(partition, duplicateError(partition)) : answered[next++]!,
    ),
  };
}

export async function handleDeleteRecords(
  request: DeleteRecordsRequest,
  dependencies: OffsetDependencies,
): Promise<DeleteRecordsResponse> {
  const failed = (
    partition: DeleteRecordsPartition,
    error: DeleteRecordsResult['error'],
  ): DeleteRecordsResult => ({
    topic: partition.topic,
    partition: partition.partition,
    error,
    lowWatermark: -1n,
  });
  const timeoutMs =
    request.timeoutMs > 0
      ? Math.min(request.timeoutMs, deleteRecordsTimeoutMsMax)
      : deleteRecordsTimeoutMsDefault;
  const duplicates = duplicatePositions(request.partitions);
  const unique = request.partitions.filter((_, position) => !duplicates.has(position));
  const answered = await sendToLeaders(dependencies.link, unique, Date.now() + timeoutMs, {
    send: async (leaderId, partitions, remainingMs) => {
      const client = requireClient(dependencies, leaderId);
      const response = await callOnce(
        client,
        client.deleteRecords,
        { partitions, timeoutMs: remainingMs },
        { deadlineMs: Math.min(remainingMs, storageCallDeadlineMs) },
      );
      return response.results;
    },
    errorOf: (result) => result.error,
    failed,
  });
  let next = 0;
  return {
    results: request.partitions.map((partition, position) =>
      duplicates.has(position) ? failed(partition, duplicateError(partition)) : answered[next++]!,
    ),
  };
}
