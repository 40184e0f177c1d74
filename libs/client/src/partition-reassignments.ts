import { SpoolError } from '@spool/common';
import type { ProtoError } from '@spool/protocol';
import { fromProtoError } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

/**
 * The admin client's partition reassignment calls (Kafka's Admin.alterPartitionReassignments and
 * listPartitionReassignments, KIP-455), through the gateway, which fronts the controller. A
 * partition's target is its new replica set, preferred leader first, or null to cancel its move.
 */

export interface PartitionReassignmentInput {
  readonly topic: string;
  readonly partitions: readonly {
    readonly partition: number;
    /** The target replica set; null cancels the reassignment in progress. */
    readonly replicas: readonly number[] | null;
  }[];
}

export interface OngoingPartitionReassignment {
  readonly topic: string;
  readonly partition: number;
  /** The whole replica set while moving: the target, then the replicas being removed. */
  readonly replicas: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

/**
 * Starts, changes or cancels moves. Throws if any partition was refused: one SpoolError with the
 * first failure's code, whose message names every refused partition with its reason and whose
 * `details` map each to its code. The partitions not refused are moving all the same.
 */
export async function alterPartitionReassignments(
  connection: GatewayConnection,
  topics: readonly PartitionReassignmentInput[],
  options: GatewayCallOptions,
): Promise<void> {
  const response = await connection.call(
    (client) => client.alterPartitionReassignments,
    {
      topics: topics.map((topic) => ({
        name: topic.topic,
        partitions: topic.partitions.map((partition) => ({
          partition: partition.partition,
          replicas: partition.replicas === null ? [] : [...partition.replicas],
          cancel: partition.replicas === null,
        })),
      })),
    },
    options,
  );
  if (response.error !== undefined && response.error.code !== '') {
    throw fromProtoError(response.error, 'alter partition reassignments');
  }
  const failures: { name: string; error: ProtoError }[] = [];
  for (const topic of response.topics) {
    for (const partition of topic.partitions) {
      if (partition.error === undefined || partition.error.code === '') continue;
      failures.push({ name: `${topic.name}-${partition.partition}`, error: partition.error });
    }
  }
  if (failures.length === 0) return;
  const first = failures[0]!;
  if (failures.length === 1) {
    throw fromProtoError(first.error, `alter partition reassignments: ${first.name}`);
  }
  const listing = failures
    .map(({ name, error }) => `${name}: ${error.code} ${error.message}`.trim())
    .join('; ');
  throw new SpoolError(
    first.error.code,
    `alter partition reassignments failed for ${failures.length} partitions: ${listing}`,
    {
      retriable: failures.every(({ error }) => error.retriable),
      details: Object.fromEntries(failures.map(({ name, error }) => [name, error.code])),
    },
  );
}

/** The moves in progress, of `topics` or of every topic when absent. */
export async function listPartitionReassignments(
  connection: GatewayConnection,
  topics: readonly string[] | undefined,
  options: GatewayCallOptions,
): Promise<OngoingPartitionReassignment[]> {
  const response = await connection.call(
    (client) => client.listPartitionReassignments,
    { topics: [...(topics ?? [])] },
    options,
  );
  return response.topics.flatMap((topic) =>
    topic.partitions.map((partition) => ({
      topic: topic.name,
      partition: partition.partition,
      replicas: partition.replicas,
      addingReplicas: partition.addingReplicas,
      removingReplicas: partition.removingReplicas,
    })),
  );
}
