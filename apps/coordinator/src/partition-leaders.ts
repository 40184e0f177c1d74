/**
 * How the coordinator reaches partition leaders: StorageService over gRPC (Append with
 * acks=all for __consumer_offsets, ListOffsets for high watermarks and offset resets) and the
 * data port (replaying a shard as a consumer, replicaId -1). Routes come from the metadata
 * cache; a call that found a stale route (NOT_LEADER_OR_FOLLOWER, an unreachable leader, ...)
 * waits for newer metadata and tries again, within its deadline.
 */
import {
  SpoolError,
  backoffMs,
  callOnce,
  createGrpcClient,
  sleep,
  wireErrorOf,
  type TransportSecurity,
} from '@spool/common';
import {
  Acks,
  DataPortClient,
  OffsetSpec,
  StorageServiceClient,
  consumerReplicaId,
  type ClusterMetadataCache,
  type DataPortFetchedPartition,
  type ListOffsetsResult,
  type ProtoError,
} from '@spool/protocol';

/** Codes that mean the route was stale or the leader is moving: retry after a metadata change. */
const rerouteCodes: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'NETWORK_EXCEPTION',
  'UNAVAILABLE',
  'SHUTTING_DOWN',
  'NOT_ENOUGH_REPLICAS',
  'REQUEST_TIMED_OUT',
  'KAFKA_STORAGE_ERROR',
]);
/** How long one retry round waits for the controller to publish a new leader. */
const metadataWaitMsMax = 1_000;
/** Records read per replay fetch: enough to load a shard in few round trips, bounded memory. */
export const replayFetchBytesMax = 4 * 1024 * 1024;

export interface MetadataSource {
  readonly metadata: ClusterMetadataCache;
  waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean>;
}

export class PartitionLeaders {
  private readonly storageClients = new Map<
    number,
    { address: string; client: StorageServiceClient }
  >();
  private readonly dataClients = new Map<
    number,
    { address: string; client: Promise<DataPortClient> }
  >();

  constructor(
    private readonly source: MetadataSource,
    private readonly transportSecurity?: TransportSecurity,
  ) {}

  private get metadata(): ClusterMetadataCache {
    return this.source.metadata;
  }

  private leaderOf(topic: string, partition: number): number | undefined {
    const found = this.metadata.partition(topic, partition);
    return found === undefined || found.offline || found.leaderId < 0 ? undefined : found.leaderId;
  }

  private storageClient(brokerId: number): StorageServiceClient | undefined {
    const endpoint = this.metadata.endpoint(brokerId, 'grpc');
    if (endpoint === undefined) return undefined;
    const address = `${endpoint.host}:${endpoint.port}`;
    const cached = this.storageClients.get(brokerId);
    if (cached?.address === address) return cached.client;
    cached?.client.close();
    const client = createGrpcClient(
      StorageServiceClient,
      address,
      {},
      this.transportSecurity?.channelCredentials(),
    );
    this.storageClients.set(brokerId, { address, client });
    return client;
  }

  private async dataClient(brokerId: number): Promise<DataPortClient | undefined> {
    const endpoint = this.metadata.endpoint(brokerId, 'data');
    if (endpoint === undefined) return undefined;
    const address = `${endpoint.host}:${endpoint.port}`;
    const cached = this.dataClients.get(brokerId);
    if (cached?.address === address) {
      const client = await cached.client.catch(() => undefined);
      if (client !== undefined && !client.isClosed) return client;
    } else if (cached !== undefined) {
      void cached.client.then((client) => client.close()).catch(() => {});
    }
    const client = DataPortClient.connect(
      endpoint.host,
      endpoint.port,
      this.transportSecurity === undefined
        ? {}
        : { tls: this.transportSecurity.tlsConnectOptions() },
    );
    this.dataClients.set(brokerId, { address, client });
    return client;
  }

  /**
   * Runs `attempt` against the partition's leader until it succeeds, fails for good, or the
   * deadline passes; a reroute error or an unknown leader waits for newer metadata first.
   */
  private async withLeader<T>(
    topic: string,
    partition: number,
    deadlineMs: number,
    attempt: (leaderId: number, remainingMs: number) => Promise<T>,
  ): Promise<T> {
    let lastError: ProtoError = {
      code: 'LEADER_NOT_AVAILABLE',
      message: `${topic}-${partition} has no leader in the metadata`,
      retriable: true,
    };
    for (let round = 1; ; round++) {
      const version = this.metadata.version;
      const leaderId = this.leaderOf(topic, partition);
      if (leaderId !== undefined) {
        try {
          return await attempt(leaderId, Math.max(1, deadlineMs - Date.now()));
        } catch (error) {
          const coded = wireErrorOf(error);
          if (!rerouteCodes.has(coded.code)) throw error;
          lastError = coded;
        }
      }
      const remainingMs = deadlineMs - Date.now();
      if (remainingMs <= 0) {
        throw new SpoolError(
          lastError.code === 'REQUEST_TIMED_OUT' ? 'REQUEST_TIMED_OUT' : 'LEADER_NOT_AVAILABLE',
          `${topic}-${partition}: ${lastError.message} (gave up after ${round} attempts)`,
        );
      }
      const moved = await this.source.waitUntil(
        () => this.metadata.version > version,
        Math.min(remainingMs, metadataWaitMsMax),
      );
      if (!moved) await sleep(Math.min(backoffMs(round), Math.max(0, deadlineMs - Date.now())));
    }
  }

  /**
   * One single-partition call to the partition's leader (re-routed as withLeader does): the
   * leader's only result, or its error thrown as a coded error.
   */
  private callLeader<Result extends { error?: ProtoError | undefined }>(
    topic: string,
    partition: number,
    deadlineMs: number,
    call: (client: StorageServiceClient, remainingMs: number) => Promise<{ results: Result[] }>,
  ): Promise<Result> {
    return this.withLeader(topic, partition, deadlineMs, async (leaderId, remainingMs) => {
      const client = this.storageClient(leaderId);
      if (client === undefined) {
        throw new SpoolError('LEADER_NOT_AVAILABLE', `broker ${leaderId} has no grpc endpoint`);
      }
      const result = (await call(client, remainingMs)).results[0];
      if (result === undefined) {
        throw new SpoolError('LEADER_NOT_AVAILABLE', `broker ${leaderId} answered no result`);
      }
      if (result.error !== undefined) throw codedError(result.error);
      return result;
    });
  }

  /** Appends record batches with acks=all; answers the base offset the leader assigned. */
  async append(
    topic: string,
    partition: number,
    records: Buffer,
    deadlineMs: number,
  ): Promise<bigint> {
    const result = await this.callLeader(topic, partition, deadlineMs, (client, remainingMs) =>
      callOnce(
        client,
        client.append,
        {
          partitions: [{ topic, partition, records }],
          acks: Acks.ACKS_ALL,
          timeoutMs: remainingMs,
        },
        { deadlineMs: remainingMs + 1_000 },
      ),
    );
    return result.baseOffset;
  }

  /**
   * Makes the partition's records below `offset` unreadable (Kafka's DeleteRecords); answers
   * the new log start offset.
   */
  async deleteRecordsBefore(
    topic: string,
    partition: number,
    offset: bigint,
    deadlineMs: number,
  ): Promise<bigint> {
    const result = await this.callLeader(topic, partition, deadlineMs, (client, remainingMs) =>
      callOnce(
        client,
        client.deleteRecords,
        { partitions: [{ topic, partition, offset }], timeoutMs: remainingMs },
        { deadlineMs: remainingMs + 1_000 },
      ),
    );
    return result.lowWatermark;
  }

  /** One partition's offset by spec (earliest, the high watermark, or for a timestamp). */
  listOffset(
    topic: string,
    partition: number,
    spec: OffsetSpec,
    deadlineMs: number,
    timestampMs = 0n,
  ): Promise<ListOffsetsResult> {
    return this.callLeader(topic, partition, deadlineMs, (client, remainingMs) =>
      callOnce(
        client,
        client.listOffsets,
        { partitions: [{ topic, partition, spec, timestampMs }] },
        { deadlineMs: remainingMs },
      ),
    );
  }

  /** High watermarks of many partitions, concurrently; a partition that fails is left out. */
  async highWatermarks(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
    deadlineMs: number,
  ): Promise<Map<string, bigint>> {
    const found = new Map<string, bigint>();
    await Promise.all(
      partitions.map(async ({ topic, partition }) => {
        try {
          const result = await this.listOffset(
            topic,
            partition,
            OffsetSpec.OFFSET_SPEC_LATEST,
            deadlineMs,
          );
          found.set(partitionKey(topic, partition), result.offset);
        } catch {
          // Unknown for now: the caller shows no lag rather than a wrong one.
        }
      }),
    );
    return found;
  }

  /** Reads committed records (below the high watermark) from `fetchOffset`, as a consumer. */
  fetch(
    topic: string,
    partition: number,
    fetchOffset: bigint,
    deadlineMs: number,
  ): Promise<DataPortFetchedPartition> {
    return this.withLeader(topic, partition, deadlineMs, async (leaderId, remainingMs) => {
      const client = await this.dataClient(leaderId).catch((error: unknown) => {
        throw new SpoolError(
          'LEADER_NOT_AVAILABLE',
          `broker ${leaderId}'s data port: ${String(error)}`,
        );
      });
      if (client === undefined) {
        throw new SpoolError('LEADER_NOT_AVAILABLE', `broker ${leaderId} has no data endpoint`);
      }
      const response = await client.fetch(
        {
          replicaId: consumerReplicaId,
          brokerEpoch: -1n,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: replayFetchBytesMax,
          partitions: [
            {
              topic,
              partition,
              fetchOffset,
              currentLeaderEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: replayFetchBytesMax,
            },
          ],
        },
        { timeoutMs: Math.min(remainingMs, 10_000) },
      );
      const fetched = response.partitions[0];
      if (fetched === undefined) {
        throw new SpoolError('LEADER_NOT_AVAILABLE', `broker ${leaderId} answered no partition`);
      }
      if (fetched.errorCode !== '') {
        throw codedError({
          code: fetched.errorCode,
          message: fetched.errorMessage,
          retriable: rerouteCodes.has(fetched.errorCode),
        });
      }
      return fetched;
    });
  }

  close(): void {
    for (const { client } of this.storageClients.values()) client.close();
    for (const { client } of this.dataClients.values())
      void client.then((connected) => connected.close()).catch(() => {});
    this.storageClients.clear();
    this.dataClients.clear();
  }
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function codedError(error: ProtoError): SpoolError {
  return new SpoolError(error.code, error.message, { retriable: error.retriable });
}
