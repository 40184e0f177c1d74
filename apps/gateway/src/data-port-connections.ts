/**
 * The gateway's connections to one storage node's data port. A data port serves the requests of
 * one connection strictly in order, so a long poll at the head of a connection holds back every
 * response behind it; the gateway therefore gives each concurrent fetch a connection of its own.
 *
 * 1. acquire() takes an idle connection, else opens one while fewer than `connectionsMax` exist,
 *    else pipelines on the least busy open one: it then waits behind the long polls ahead of it
 *    (each bounded by its maxWaitMs), rather than open connections without a bound.
 * 2. A lease is released once. A connection whose requests were all answered goes back to the
 *    idle list (at most `idleConnectionsMax` kept; the rest are closed). One released with a
 *    request still unanswered (the fetch was abandoned) is closed: its response is unwanted and
 *    would delay the next user of the connection.
 * 3. A connection that failed is never reused (DataPortClient does not reconnect); the next
 *    acquire() opens a new one.
 * 4. acquire(abandon) stops waiting when `abandon` fires: connecting to a node cut off from the
 *    network waits for its SYN to be answered (up to the connect timeout, 10 s), and the fetch
 *    that waits for it must let its partitions go to their new leader at once. A connection
 *    that opens after all is leased and released at once: kept idle for the next fetch.
 */
import { DataPortClient } from '@spool/protocol';
import { SpoolError } from '@spool/common';

export interface DataPortLease {
  readonly client: DataPortClient;
  release(): void;
}

export interface DataPortConnectionsOptions {
  readonly connectionsMax: number;
  readonly idleConnectionsMax: number;
  readonly connect?: (host: string, port: number) => Promise<DataPortClient>;
}

export class DataPortConnections {
  private readonly idle: DataPortClient[] = [];
  private readonly leasesByClient = new Map<DataPortClient, number>();
  private openingCount = 0;
  private closed = false;
  private readonly connect: (host: string, port: number) => Promise<DataPortClient>;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly options: DataPortConnectionsOptions,
  ) {
    this.connect = options.connect ?? ((host, port) => DataPortClient.connect(host, port));
  }

  /** Open connections, idle or leased. */
  get connectionCount(): number {
    return this.idle.length + this.leasesByClient.size;
  }

  /** Points 1 and 4. Throws `abandon`'s reason (or an AbortError) when it fires first. */
  async acquire(abandon?: AbortSignal): Promise<DataPortLease> {
    if (abandon === undefined) return this.acquireLease();
    abandon.throwIfAborted();
    const acquiring = this.acquireLease();
    return new Promise<DataPortLease>((resolve, reject) => {
      const onAbandon = (): void => {
        reject(abandon.reason);
        // Whatever the wait brings is not wanted now; a lease goes straight back.
        acquiring.then(
          (lease) => lease.release(),
          () => {},
        );
      };
      abandon.addEventListener('abort', onAbandon, { once: true });
      acquiring.then(resolve, reject).finally(() => {
        abandon.removeEventListener('abort', onAbandon);
      });
    });
  }

  private async acquireLease(): Promise<DataPortLease> {
    this.ensureOpen();
    for (let client = this.idle.pop(); client !== undefined; client = this.idle.pop()) {
      if (!client.isClosed) return this.lease(client);
    }
    if (this.connectionCount + this.openingCount < this.options.connectionsMax) {
      this.openingCount++;
      let client: DataPortClient;
      try {
        client = await this.connect(this.host, this.port);
      } catch (error) {
        throw new SpoolError('NETWORK_EXCEPTION', (error as Error).message, { cause: error });
      } finally {
        this.openingCount--;
      }
      if (this.closed) {
        void client.close();
        this.ensureOpen();
      }
      return this.lease(client);
    }
    let leastBusy: DataPortClient | undefined;
    for (const client of this.leasesByClient.keys()) {
      if (client.isClosed) continue;
      if (leastBusy === undefined || client.inFlightRequestCount < leastBusy.inFlightRequestCount)
        leastBusy = client;
    }
    if (leastBusy === undefined) {
      throw new SpoolError(
        'NETWORK_EXCEPTION',
        `all ${this.options.connectionsMax} connections to the data port ` +
          `${this.host}:${this.port} are closing`,
      );
    }
    return this.lease(leastBusy);
  }

  private lease(client: DataPortClient): DataPortLease {
    this.leasesByClient.set(client, (this.leasesByClient.get(client) ?? 0) + 1);
    let released = false;
    return {
      client,
      release: () => {
        if (released) return;
        released = true;
        this.giveBack(client);
      },
    };
  }

  /** Points 2 and 3. */
  private giveBack(client: DataPortClient): void {
    const leases = (this.leasesByClient.get(client) ?? 1) - 1;
    if (leases > 0) {
      this.leasesByClient.set(client, leases);
      return;
    }
    this.leasesByClient.delete(client);
    const reusable =
      !this.closed &&
      !client.isClosed &&
      client.inFlightRequestCount === 0 &&
      this.idle.length < this.options.idleConnectionsMax;
    if (reusable) this.idle.push(client);
    else void client.close();
  }

  close(): void {
    this.closed = true;
    for (const client of [...this.idle, ...this.leasesByClient.keys()]) void client.close();
    this.idle.length = 0;
    this.leasesByClient.clear();
  }

  private ensureOpen(): void {
    if (this.closed) {
      throw new SpoolError(
        'NETWORK_EXCEPTION',
        `the connections to the data port ${this.host}:${this.port} are closed (the broker ` +
          'left the metadata or the gateway is stopping)',
      );
    }
  }
}
