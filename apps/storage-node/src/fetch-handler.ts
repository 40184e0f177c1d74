/**
 * What the data port's FETCH and OFFSET_FOR_LEADER_EPOCH mean on this node (Kafka's fetch path
 * and its delayed-fetch purgatory):
 *
 *   1. Each partition must be led here, at the request's leader epoch when it names one.
 *   2. A consumer reads up to the high watermark; a follower (replicaId ≥ 0) up to the log end,
 *      and its fetch offset tells the leader how far it has replicated.
 *   3. Records stay within partitionMaxBytes per partition and maxBytes in all, except that the
 *      first batch of the first partition with data comes whole (KIP-74), so a fetch always moves.
 *   4. With fewer than minBytes, the fetch waits (at most maxWaitMs) and reads again whenever an
 *      involved partition gets records or a new HW, or until the connection closes.
 */
import type { RequestOutcome } from '@spool/common';
import type {
  DataPortFetchRequest,
  DataPortOffsetForLeaderEpochRequest,
  DataPortOffsetForLeaderEpochResponse,
} from '@spool/protocol';
import type { DataPortHandlers, FetchPartitionResult, FetchResult } from './data-port-handlers';
import { waitForAnyChange, type PartitionReplica } from './partition-replica';
import type { ReplicaManager } from './replica-manager';
import type { StorageMetrics } from './storage-metrics';

/** A long poll never waits longer than this, whatever it asks (Kafka's fetch.max.wait.ms bound). */
export const fetchMaxWaitMsMax = 30_000;

export interface FetchHandlerOptions {
  readonly replicas: () => ReplicaManager;
  readonly metrics: StorageMetrics;
  /** A follower's fetch reached the leader (replication hooks ISR changes here). */
  readonly onFollowerFetch?: (
    replica: PartitionReplica,
    followerId: number,
    fetchOffset: bigint,
  ) => void;
}

function errorFields(error: unknown): { errorCode: string; errorMessage: string } {
  const coded = error as { code?: unknown; message?: unknown };
  return {
    errorCode: typeof coded.code === 'string' ? coded.code : 'UNKNOWN_SERVER_ERROR',
    errorMessage: typeof coded.message === 'string' ? coded.message : String(error),
  };
}

export function createFetchHandlers(options: FetchHandlerOptions): DataPortHandlers {
  const readOnce = (
    request: DataPortFetchRequest,
    involved: Map<string, PartitionReplica>,
    api: string,
  ): FetchResult => {
    const releases: Array<() => void> = [];
    const partitions: FetchPartitionResult[] = [];
    let remainingBytes = Math.max(0, request.maxBytes);
    let firstData = true;
    for (const wanted of request.partitions) {
      const base = {
        topic: wanted.topic,
        partition: wanted.partition,
        errorCode: '',
        errorMessage: '',
        highWatermark: -1n,
        logStartOffset: -1n,
        logEndOffset: -1n,
        slices: [],
        sizeBytes: 0,
      };
      try {
        const replica = options.replicas().require(wanted.topic, wanted.partition);
        involved.set(replica.name, replica);
        replica.ensureLeader();
        replica.checkLeaderEpoch(wanted.currentLeaderEpoch);
        const follower = request.replicaId >= 0;
        if (follower) {
          options.onFollowerFetch?.(replica, request.replicaId, wanted.fetchOffset);
        }
        const maxBytes = Math.min(Math.max(0, wanted.partitionMaxBytes), remainingBytes);
        const read = replica.log.read(wanted.fetchOffset, maxBytes, {
          maxOffsetExclusive: follower ? replica.log.logEndOffset : replica.highWatermark,
          minOneBatch: firstData,
        });
        releases.push(() => read.release());
        if (read.sizeBytes > 0) firstData = false;
        remainingBytes = Math.max(0, remainingBytes - read.sizeBytes);
        partitions.push({
          ...base,
          highWatermark: replica.highWatermark,
          logStartOffset: replica.log.logStartOffset,
          logEndOffset: replica.log.logEndOffset,
          slices: read.slices,
          sizeBytes: read.sizeBytes,
        });
      } catch (error) {
        const fields = errorFields(error);
        options.metrics.requests.errors.inc({ api, code: fields.errorCode });
        const replica = options.replicas().get(wanted.topic, wanted.partition);
        partitions.push({
          ...base,
          ...fields,
          highWatermark: replica?.highWatermark ?? -1n,
          logStartOffset: replica?.log.logStartOffset ?? -1n,
          logEndOffset: replica?.log.logEndOffset ?? -1n,
        });
      }
    }
    let released = false;
    return {
      partitions,
      release: () => {
        if (released) return;
        released = true;
        for (const release of releases) release();
      },
    };
  };

  return {
    fetch: async (request, signal) => {
      // Kafka's request names: replica fetches and consumer fetches are watched apart.
      const api = request.replicaId >= 0 ? 'FetchFollower' : 'FetchConsumer';
      const end = options.metrics.requests.begin(api, { timed: true });
      // Partition errors are counted as they are read, so a served fetch adds none here.
      let outcome: RequestOutcome = { response: undefined };
      const deadline = Date.now() + Math.min(Math.max(0, request.maxWaitMs), fetchMaxWaitMsMax);
      try {
        for (;;) {
          const involved = new Map<string, PartitionReplica>();
          const result = readOnce(request, involved, api);
          const total = result.partitions.reduce((sum, partition) => sum + partition.sizeBytes, 0);
          const failed = result.partitions.some((partition) => partition.errorCode !== '');
          const remainingMs = deadline - Date.now();
          const enough = total >= Math.max(0, request.minBytes);
          if (enough || failed || remainingMs <= 0 || signal.aborted || involved.size === 0) {
            return result;
          }
          // Nothing yet: let go of the files and wait for any involved partition to change.
          // The read above and this registration run in one turn, so no change falls between.
          result.release();
          await waitForAnyChange(involved.values(), remainingMs, signal);
        }
      } catch (error) {
        outcome = { error };
        throw error;
      } finally {
        end(outcome);
      }
    },

    offsetForLeaderEpoch: async (
      request: DataPortOffsetForLeaderEpochRequest,
    ): Promise<DataPortOffsetForLeaderEpochResponse> => {
      const api = 'OffsetForLeaderEpoch';
      const end = options.metrics.requests.begin(api, { timed: true });
      const response = {
        partitions: request.partitions.map((wanted) => {
          try {
            const replica = options.replicas().require(wanted.topic, wanted.partition);
            replica.ensureLeader();
            replica.checkLeaderEpoch(wanted.currentLeaderEpoch);
            const answer = replica.log.endOffsetForLeaderEpoch(wanted.leaderEpoch);
            return {
              topic: wanted.topic,
              partition: wanted.partition,
              errorCode: '',
              errorMessage: '',
              leaderEpoch: answer.epoch,
              endOffset: answer.endOffset,
            };
          } catch (error) {
            const fields = errorFields(error);
            options.metrics.requests.errors.inc({ api, code: fields.errorCode });
            return {
              topic: wanted.topic,
              partition: wanted.partition,
              ...fields,
              leaderEpoch: -1,
              endOffset: -1n,
            };
          }
        }),
      };
      end({ response: undefined });
      return response;
    },
  };
}
