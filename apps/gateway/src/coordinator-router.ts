/**
 * Sends group calls to the coordinator that owns the group: the owner of the __consumer_offsets
 * partition the group hashes to (groupPartition, Kafka's function), read from the metadata
 * the controller publishes. Coordinator clients are created on first use and closed when the
 * coordinator leaves the metadata or moves.
 *
 * 1. Each attempt routes from the current metadata; with no owner known yet it waits.
 * 2. An answer of NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE,
 *    or a coordinator that cannot be reached, waits for newer metadata (the controller moving
 *    the shard comes through WatchMetadata), backs off a little when it did not move, and tries
 *    again; any other answer is final.
 * 3. All of it before the call's deadline; then the call is answered COORDINATOR_NOT_AVAILABLE
 *    (retriable) naming the last reason, and the client finds the coordinator again later.
 */
import type { ServerUnaryCall } from '@grpc/grpc-js';
import {
  SpoolError,
  backoffMs,
  createGrpcClient,
  sleep,
  wireErrorOf,
  type TransportSecurity,
} from '@spool/common';
import {
  CoordinatorServiceClient,
  groupPartition,
  type ClusterMetadataCache,
  type ProtoError,
} from '@spool/protocol';
import type { MetadataLink } from './metadata-link';

/** Codes that mean "ask the coordinator that owns the group now", after a moment. */
export const coordinatorRetryCodes: ReadonlySet<string> = new Set([
  'NOT_COORDINATOR',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'COORDINATOR_NOT_AVAILABLE',
  'UNAVAILABLE',
  'NETWORK_EXCEPTION',
  'SHUTTING_DOWN',
  'REQUEST_TIMED_OUT',
]);
/** How long one round waits for the controller to publish a new owner. */
const metadataWaitMsMax = 500;
/** Backoff cap between rounds when the metadata did not change. */
const roundBackoffMsMax = 250;
/** A call without a deadline still ends: this is how long the gateway keeps trying. */
export const coordinatorCallTimeoutMsDefault = 15_000;
/** Left of the client's deadline to send the answer back in. */
const deadlineMarginMs = 200;

/** The time by which a group call must be answered, from the client's deadline. */
export function callDeadlineMs(call: ServerUnaryCall<unknown, unknown> | undefined): number {
  const deadline = call?.getDeadline();
  const clientMs =
    deadline instanceof Date
      ? deadline.getTime()
      : typeof deadline === 'number' && Number.isFinite(deadline)
        ? deadline
        : Number.POSITIVE_INFINITY;
  return Math.min(clientMs - deadlineMarginMs, Date.now() + coordinatorCallTimeoutMsDefault);
}

export class CoordinatorRouter {
  private readonly clients = new Map<
    string,
    { address: string; client: CoordinatorServiceClient }
  >();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly link: MetadataLink,
    private readonly transportSecurity?: TransportSecurity,
  ) {
    this.unsubscribe = link.metadata.onChange(() => this.forgetGoneCoordinators());
  }

  private get metadata(): ClusterMetadataCache {
    return this.link.metadata;
  }

  /** A client of the coordinator with this id, or undefined while its endpoint is unknown. */
  client(coordinatorId: string): CoordinatorServiceClient | undefined {
    const endpoint = this.metadata.coordinatorEndpoint(coordinatorId, 'grpc');
    if (endpoint === undefined) return undefined;
    const address = `${endpoint.host}:${endpoint.port}`;
    const cached = this.clients.get(coordinatorId);
    if (cached?.address === address) return cached.client;
    cached?.client.close();
    const client = createGrpcClient(
      CoordinatorServiceClient,
      address,
      {},
      this.transportSecurity?.channelCredentials(),
    );
    this.clients.set(coordinatorId, { address, client });
    return client;
  }

  /** The owner of the group's shard, or why there is none. */
  ownerOf(groupId: string): { coordinatorId: string } | { error: ProtoError } {
    const shardCount = this.metadata.coordinatorShardCount;
    if (shardCount === 0) {
      return {
        error: {
          code: 'COORDINATOR_NOT_AVAILABLE',
          message: 'no coordinator has registered with the controller yet',
          retriable: true,
        },
      };
    }
    const shard = groupPartition(groupId, shardCount);
    const owner = this.metadata.shardOwner(shard);
    return owner === undefined
      ? {
          error: {
            code: 'COORDINATOR_NOT_AVAILABLE',
            message: `no live coordinator owns shard ${shard} of group "${groupId}"`,
            retriable: true,
          },
        }
      : { coordinatorId: owner.coordinatorId };
  }

  /** Coordinators the metadata knows, for calls that go to every one (ListGroups) or any. */
  coordinatorIds(): string[] {
    return [...this.metadata.coordinators.keys()].sort();
  }

  /**
   * Calls `send` on a coordinator chosen by `choose` until the answer is final (points 1-3).
   * `errorOf` reads the answer's own error field.
   */
  async call<Response>(
    choose: () => { coordinatorId: string } | { error: ProtoError },
    send: (client: CoordinatorServiceClient, remainingMs: number) => Promise<Response>,
    errorOf: (response: Response) => ProtoError | undefined,
    deadlineMs: number,
  ): Promise<Response> {
    let lastError: ProtoError | undefined;
    for (let round = 1; ; round++) {
      const version = this.metadata.version;
      const chosen = choose();
      if ('error' in chosen) lastError = chosen.error;
      else {
        const client = this.client(chosen.coordinatorId);
        if (client === undefined) {
          lastError = {
            code: 'COORDINATOR_NOT_AVAILABLE',
            message: `coordinator ${chosen.coordinatorId} has no grpc endpoint in the metadata`,
            retriable: true,
          };
        } else {
          try {
            const response = await send(client, Math.max(1, deadlineMs - Date.now()));
            const error = errorOf(response);
            if (error === undefined || !coordinatorRetryCodes.has(error.code)) return response;
            lastError = error;
          } catch (error) {
            const coded = wireErrorOf(error, `coordinator ${chosen.coordinatorId}: `);
            if (
              !coordinatorRetryCodes.has(coded.code) &&
              !(error instanceof SpoolError && error.retriable)
            )
              throw error;
            lastError = coded;
          }
        }
      }
      const remainingMs = deadlineMs - Date.now();
      if (remainingMs <= 0) {
        throw new SpoolError(
          'COORDINATOR_NOT_AVAILABLE',
          `${lastError?.code ?? 'no coordinator'}: ${lastError?.message ?? ''} ` +
            `(gave up after ${round} attempts)`,
        );
      }
      const moved = await this.link.waitForNewerVersion(
        version,
        Math.min(remainingMs, metadataWaitMsMax),
      );
      if (!moved) {
        await sleep(
          Math.min(
            backoffMs(round, { backoffMaxMs: roundBackoffMsMax }),
            Math.max(0, deadlineMs - Date.now()),
          ),
        );
      }
    }
  }

  private forgetGoneCoordinators(): void {
    for (const [coordinatorId, cached] of this.clients) {
      const endpoint = this.metadata.coordinatorEndpoint(coordinatorId, 'grpc');
      if (endpoint === undefined || `${endpoint.host}:${endpoint.port}` !== cached.address) {
        this.clients.delete(coordinatorId);
        cached.client.close();
      }
    }
  }

  close(): void {
    this.unsubscribe();
    for (const cached of this.clients.values()) cached.client.close();
    this.clients.clear();
  }
}
