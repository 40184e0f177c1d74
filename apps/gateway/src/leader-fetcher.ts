/**
 * One consumer fetch at one leader's data port, on a connection of its own from that broker's
 * pool. The bytes come back as the leader stored them (it moves them with sendfile); nothing
 * here looks inside them. A fetch can be abandoned: the caller stops waiting at once, and the
 * connection, with its response still coming, is closed rather than reused.
 */
import {
  consumerReplicaId,
  DataPortClient,
  type ClusterMetadataCache,
  type DataPortFetchPartition,
  type DataPortFetchResponse,
  type DataPortOffsetForLeaderEpochPartition,
  type DataPortOffsetForLeaderEpochResponse,
} from '@spool/protocol';
import { SpoolError, type TransportSecurity } from '@spool/common';
import { BrokerResources } from './broker-resources';
import { DataPortConnections, type DataPortLease } from './data-port-connections';

/** How much longer than its long poll a fetch may take before the connection is given up. */
const fetchTimeoutSlackMs = 10_000;
/** How long a leader has to say where its epochs end (a lookup in its epoch cache). */
const offsetForLeaderEpochTimeoutMs = 10_000;
/** Connections per storage node: concurrent long polls beyond this share connections. */
const dataPortConnectionsPerBrokerMax = 64;
/** Idle connections kept per storage node for the next fetches. */
const dataPortIdleConnectionsMax = 8;

export interface LeaderFetch {
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly partitions: readonly Omit<
    DataPortFetchPartition,
    'currentLeaderEpoch' | 'logStartOffset'
  >[];
}

/** The reason a fetch was abandoned, so callers tell it from a failure. */
export class FetchAbandoned extends Error {
  override readonly name = 'FetchAbandoned';
}

export class LeaderFetcher {
  private readonly connections: BrokerResources<DataPortConnections>;

  constructor(metadata: ClusterMetadataCache, transportSecurity?: TransportSecurity) {
    this.connections = new BrokerResources(
      metadata,
      'data',
      (host, port) =>
        new DataPortConnections(host, port, {
          connectionsMax: dataPortConnectionsPerBrokerMax,
          idleConnectionsMax: dataPortIdleConnectionsMax,
          ...(transportSecurity === undefined
            ? {}
            : {
                connect: (connectHost: string, connectPort: number) =>
                  DataPortClient.connect(connectHost, connectPort, {
                    tls: transportSecurity.tlsConnectOptions(),
                  }),
              }),
        }),
      (connections) => connections.close(),
    );
  }

  async fetch(
    leaderId: number,
    request: LeaderFetch,
    abandon?: AbortSignal,
  ): Promise<DataPortFetchResponse> {
    const connections = this.connections.get(leaderId);
    if (connections === undefined) {
      throw new SpoolError(
        'LEADER_NOT_AVAILABLE',
        `the data port of broker ${leaderId} is not in the metadata`,
      );
    }
    if (abandon?.aborted) throw new FetchAbandoned('abandoned before it started');
    // Connecting to a leader cut off from the network waits for the connect timeout: the
    // abandonment (its partitions moved to a new leader) must end that wait too.
    let lease: DataPortLease;
    try {
      lease = await connections.acquire(abandon);
    } catch (error) {
      if (abandon?.aborted) throw new FetchAbandoned('abandoned while connecting');
      throw error;
    }
    try {
      const fetching = lease.client.fetch(
        {
          replicaId: consumerReplicaId,
          brokerEpoch: -1n,
          maxWaitMs: request.maxWaitMs,
          minBytes: request.minBytes,
          maxBytes: request.maxBytes,
          // No leader epoch check: the gateway's metadata may lag the leader's by a moment, and
          // a fenced read would only make the client retry what ensureLeader already guards.
          partitions: request.partitions.map((partition) => ({
            ...partition,
            currentLeaderEpoch: -1,
            logStartOffset: -1n,
          })),
        },
        { timeoutMs: request.maxWaitMs + fetchTimeoutSlackMs },
      );
      if (abandon === undefined) return await fetching;
      // An abandoned fetch still settles later; nobody waits for it then.
      fetching.catch(() => {});
      return await new Promise<DataPortFetchResponse>((resolve, reject) => {
        const onAbandon = (): void => reject(new FetchAbandoned('abandoned'));
        if (abandon.aborted) onAbandon();
        abandon.addEventListener('abort', onAbandon, { once: true });
        fetching.then(resolve, reject).finally(() => {
          abandon.removeEventListener('abort', onAbandon);
        });
      });
    } finally {
      lease.release();
    }
  }

  /**
   * Where each asked leader epoch ends on the leader (KIP-101), for a consumer that validates
   * its position after a leader change: the leader fences an epoch it does not have as current.
   */
  async offsetForLeaderEpoch(
    leaderId: number,
    partitions: readonly DataPortOffsetForLeaderEpochPartition[],
  ): Promise<DataPortOffsetForLeaderEpochResponse> {
    const connections = this.connections.get(leaderId);
    if (connections === undefined) {
      throw new SpoolError(
        'LEADER_NOT_AVAILABLE',
        `the data port of broker ${leaderId} is not in the metadata`,
      );
    }
    const lease = await connections.acquire();
    try {
      return await lease.client.offsetForLeaderEpoch(
        { replicaId: consumerReplicaId, partitions },
        { timeoutMs: offsetForLeaderEpochTimeoutMs },
      );
    } finally {
      lease.release();
    }
  }

  close(): void {
    this.connections.closeAll();
  }
}
