// The storage node's data port: a plain TCP listener for consumer fetches (from gateways) and
// replica fetches (from followers), so record bytes go from segment files to sockets with
// sendfile(2) and never through gRPC. The wire format is in @spool/protocol (data-port-layout);
// each connection is a DataPortConnection (reading, ordering, backpressure, idle, refusal).
//
// Shutdown, close(drainTimeoutMs):
// 1. Stop accepting connections.
// 2. Every connection drains: it reads nothing more, aborts its handler in flight, finishes a
//    response already on the wire, then closes.
// 3. Connections still open after drainTimeoutMs are destroyed.
// 4. Resolves once every connection finished (socket closed, handler settled, slices released),
//    or a second drainTimeoutMs passed: a handler that ignores its AbortSignal is not waited for
//    longer, and its result is released when it settles.
//
// Under TLS (security.protocol=SSL) the port is a node:tls listener that requires a certificate
// from the cluster CA naming a Spool service (service-identity.ts): only gateways and followers
// fetch here. sendfile cannot encrypt, so responses take segment-store's copy path (fs.read into
// a pooled buffer, then the TLS socket's write), as writeTo does for any TLS socket. Kernel TLS
// (setsockopt TCP_ULP "tls", then sendfile on the encrypted socket) would keep zero copy, but
// Node does not hand its TLS session keys to the kernel, and the machines we run on do not all
// have the tls module; the copy path's cost is measured in bench/README.md.
import {
  ensurePeerIsService,
  type Logger,
  SpoolError,
  type TransportSecurity,
} from '@spool/common';
import net from 'node:net';
import tls from 'node:tls';
import type { Registry } from 'prom-client';
import { DataPortConnection } from './data-port-connection';
import type { DataPortHandlers } from './data-port-handlers';
import { type DataPortCounters, DataPortMetrics } from './data-port-metrics';

/** Kafka's connections.max.idle.ms default: 10 minutes. */
export const connectionsMaxIdleMsDefault = 600_000;
/**
 * Requests queued or being served per connection before the server stops reading it. Fetchers
 * send one at a time; the gateway pipelines a few. Matches the client's default bound.
 */
export const inFlightRequestsPerConnectionMaxDefault = 16;
/** A scanner or a misconfigured peer refused in a loop must not flood the log. */
const refusalLogIntervalMs = 1_000;
/** Connections beyond this are refused by the kernel listener: each holds buffers and files. */
export const connectionsMaxDefault = 10_000;

export interface DataPortServerOptions {
  readonly logger: Logger;
  readonly handlers: DataPortHandlers;
  /** Registers spool_data_port_connections and spool_data_port_requests_total{api}. */
  readonly registry?: Registry;
  /** Called with each partition's record bytes once they were handed to the kernel. */
  readonly onBytesSent?: (topic: string, sizeBytes: number) => void;
  /** connectionsMaxIdleMs: close a connection without requests for this long. */
  readonly connectionsMaxIdleMs?: number;
  /** inFlightRequestsPerConnectionMax: pipelined requests held per connection. */
  readonly inFlightRequestsPerConnectionMax?: number;
  /** connectionsMax: open connections at most. */
  readonly connectionsMax?: number;
  /** TLS with service certificates only (see the header); plaintext without it. */
  readonly transportSecurity?: TransportSecurity;
}

export class DataPortServer {
  private readonly logger: Logger;
  private readonly metrics: DataPortMetrics;
  private readonly server: net.Server;
  private readonly connections = new Set<DataPortConnection>();
  private readonly connectionsMaxIdleMs: number;
  private readonly inFlightRequestsMax: number;
  private closing: Promise<void> | undefined;
  private refusalLoggedAtMs = 0;
  private refusalsNotLogged = 0;

  constructor(private readonly options: DataPortServerOptions) {
    this.connectionsMaxIdleMs = positiveInteger(
      'connectionsMaxIdleMs',
      options.connectionsMaxIdleMs ?? connectionsMaxIdleMsDefault,
    );
    this.inFlightRequestsMax = positiveInteger(
      'inFlightRequestsPerConnectionMax',
      options.inFlightRequestsPerConnectionMax ?? inFlightRequestsPerConnectionMaxDefault,
    );
    const connectionsMax = positiveInteger(
      'connectionsMax',
      options.connectionsMax ?? connectionsMaxDefault,
    );
    this.logger = options.logger.child({ component: 'data-port' });
    this.metrics = new DataPortMetrics(options.registry);
    const security = options.transportSecurity;
    if (security === undefined) {
      this.server = net.createServer({ noDelay: true }, (socket) => this.accept(socket));
    } else {
      const server = tls.createServer({ ...security.tlsServerOptions(), noDelay: true }, (socket) =>
        this.acceptTls(socket),
      );
      security.followReloads(server);
      server.on('tlsClientError', (error, socket) => this.refuse(socket, error.message));
      this.server = server;
    }
    this.server.maxConnections = connectionsMax;
  }

  /** Starts listening; resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => {
        reject(
          new SpoolError('INVALID_CONFIG', `The data port cannot listen on ${host}:${port}`, {
            cause: error,
          }),
        );
      };
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        this.server.on('error', (error) => this.logger.error({ err: error }, 'data port error'));
        const boundPort = (this.server.address() as net.AddressInfo).port;
        this.logger.info({ host, port: boundPort }, 'data port listening');
        resolve(boundPort);
      });
    });
  }

  /** Stops the data port as the header's steps 1–4 say; later calls return the same promise. */
  close(drainTimeoutMs: number): Promise<void> {
    this.closing ??= this.closeOnce(drainTimeoutMs);
    return this.closing;
  }

  /** Counters since start: connections, requests by API, record bytes sent. */
  counters(): DataPortCounters {
    return this.metrics.snapshot();
  }

  /** A verified peer must also be a service: a client certificate of the CA is refused. */
  private acceptTls(socket: tls.TLSSocket): void {
    try {
      ensurePeerIsService(socket.getPeerCertificate(), 'the data port');
    } catch (error) {
      this.refuse(socket, (error as Error).message);
      return;
    }
    this.accept(socket);
  }

  /** Counted always, logged at most once per refusalLogIntervalMs with what was left out. */
  private refuse(socket: net.Socket, reason: string): void {
    this.metrics.connectionRefused();
    socket.destroy();
    const nowMs = Date.now();
    if (nowMs - this.refusalLoggedAtMs < refusalLogIntervalMs) {
      this.refusalsNotLogged += 1;
      return;
    }
    this.logger.warn(
      {
        peer: `${socket.remoteAddress}:${socket.remotePort}`,
        event: 'data-port-refused',
        refusalsNotLogged: this.refusalsNotLogged,
      },
      `data port connection refused: ${reason}`,
    );
    this.refusalLoggedAtMs = nowMs;
    this.refusalsNotLogged = 0;
  }

  private accept(socket: net.Socket): void {
    if (this.closing !== undefined) {
      socket.destroy();
      return;
    }
    const connection = new DataPortConnection(socket, {
      logger: this.logger,
      handlers: this.options.handlers,
      metrics: this.metrics,
      onPartitionSent: this.options.onBytesSent ?? (() => undefined),
      inFlightRequestsMax: this.inFlightRequestsMax,
      connectionsMaxIdleMs: this.connectionsMaxIdleMs,
    });
    this.connections.add(connection);
    this.metrics.connectionOpened();
    socket.once('close', () => this.metrics.connectionClosed());
    // Kept until finished, not just closed: close() waits for its handler and releases too.
    void connection.finished.then(() => this.connections.delete(connection));
  }

  private async closeOnce(drainTimeoutMs: number): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const connections = [...this.connections];
    this.logger.info({ connections: connections.length, drainTimeoutMs }, 'data port closing');
    const finished = Promise.all(connections.map((connection) => connection.finished));
    for (const connection of connections) connection.drain();
    if (!(await settlesWithin(finished, drainTimeoutMs))) {
      this.logger.warn({ drainTimeoutMs }, 'data port connections did not drain in time');
      for (const connection of connections) connection.close('the drain timeout passed');
      if (!(await settlesWithin(finished, drainTimeoutMs))) {
        this.logger.warn('data port handlers ignored their abort signal; not waiting for them');
      }
    }
    await Promise.all([stopped, ...connections.map((connection) => connection.socketClosed)]);
    this.logger.info('data port closed');
  }
}

/** True when `promise` settled within `timeoutMs`. */
async function settlesWithin(promise: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([promise.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

function positiveInteger(name: string, value: number): number {
  if (Number.isSafeInteger(value) && value >= 1) return value;
  throw new SpoolError(
    'INVALID_CONFIG',
    `Data port setting ${name} must be a positive integer, got ${value}`,
  );
}
