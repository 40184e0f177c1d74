import type { OffsetSpec } from '@spool/protocol';
import { fromProtoError, partitionName } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

/**
 * ListOffsets through the gateway, for the consumer's offset reset and the admin's offset
 * queries: the log start offset (earliest), the high watermark (latest), or the first offset at
 * or after a timestamp. A partition's error is thrown as a SpoolError naming the partition.
 */

export interface OffsetQuery {
  readonly topic: string;
  readonly partition: number;
  readonly spec: OffsetSpec;
  /** With OFFSET_SPEC_TIMESTAMP: milliseconds since the epoch. */
  readonly timestampMs?: bigint;
}

export interface ListedOffset {
  readonly topic: string;
  readonly partition: number;
  /** -1n when a timestamp query finds no record at or after the timestamp, as in Kafka. */
  readonly offset: bigint;
  readonly timestampMs: bigint;
}

export async function listOffsets(
  connection: GatewayConnection,
  queries: readonly OffsetQuery[],
  options: GatewayCallOptions,
): Promise<ListedOffset[]> {
  if (queries.length === 0) return [];
  const response = await connection.call(
    (client) => client.listOffsets,
    {
      partitions: queries.map((query) => ({
        topic: query.topic,
        partition: query.partition,
        spec: query.spec,
        timestampMs: query.timestampMs ?? 0n,
      })),
    },
    options,
  );
  return queries.map((query) => {
    const subject = partitionName(query.topic, query.partition);
    const result = response.results.find(
      (candidate) => candidate.topic === query.topic && candidate.partition === query.partition,
    );
    if (result === undefined) {
      throw fromProtoError(
        {
          code: 'UNKNOWN_SERVER_ERROR',
          message: 'the gateway answered no offset',
          retriable: false,
        },
        subject,
      );
    }
    if (result.error !== undefined && result.error.code !== '') {
      throw fromProtoError(result.error, subject);
    }
    return {
      topic: query.topic,
      partition: query.partition,
      offset: result.offset,
      timestampMs: result.timestampMs,
    };
  });
}
