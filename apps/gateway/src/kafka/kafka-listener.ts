// The gateway's Kafka listener: plain TCP (or TLS) servers whose connections speak Kafka's wire
// protocol (kafka-connection.ts), served by the Kafka APIs (kafka-apis.ts): one on --kafka-port,
// where clients bootstrap, and one per storage broker id that clients see (kafka-broker-ports.ts).
// Every port is served alike.
//
// Shutdown, close(drainTimeoutMs):
// 1. Stop accepting connections on every port.
// 2. Every connection drains: it reads nothing more, aborts its long polls, writes the responses
//    already done, then ends.
// 3. Connections still open after drainTimeoutMs are destroyed.
import { SpoolError, type Logger, type TransportSecurity } from '@spool/common';
import net from 'node:net';
import * as tls from 'node:tls';
import { KafkaConnection, type KafkaRequestHandler } from './kafka-connection';
import type { KafkaListenerMetrics } from './kafka-listener-metrics';
import {
  acceptanceOf,
  sslClientAuthServerOptions,
  type KafkaSslClientAuth,
} from './kafka-ssl-client-auth';

/** Kafka's connections.max.idle.ms default: 10 minutes. */
export const kafkaConnectionsMaxIdleMsDefault = 600_000;
/** Bytes one connection holds before it stops reading (Kafka's queued.max.request.bytes). */
export const kafkaQueuedBytesMaxDefault = 64 * 1024 * 1024;
/** Connections beyond this are refused: each holds up to its in-flight requests' buffers. */
export const kafkaConnectionsMaxDefault = 10_000;

export interface KafkaListenerOptions {
  readonly logger: Logger;
  readonly handler: KafkaRequestHandler;
  readonly metrics: KafkaListenerMetrics;
  /** socket.request.max.bytes. */
  readonly requestBytesMax: number;
  readonly inFlightRequestsMax: number;
  /** queued.max.request.bytes of one connection; kafkaQueuedBytesMaxDefault when absent. */
  readonly queuedBytesMax?: number;
  readonly connectionsMaxIdleMs?: number;
  readonly connectionsMax?: number;
  /** A SASL listener: connections start unauthenticated (kafka-session.ts). */
  readonly authenticationRequired?: boolean;
  /**
   * TLS (SSL, SASL_SSL): the process's certificate, reloaded when it changes. A client speaking
   * plaintext to it fails the handshake and is dropped before any request is read.
   */
  readonly tls?: TransportSecurity;
  /** Kafka's ssl.client.auth on a TLS listener (kafka-ssl-client-auth.ts); none by default. */
  readonly sslClientAuth?: KafkaSslClientAuth;
}

export class KafkaListener {
  private readonly servers: net.Server[] = [];
  private readonly connections = new Set<KafkaConnection>();
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;
  private readonly stopFollowingReloads: Array<() => void> = [];

  constructor(private readonly options: KafkaListenerOptions) {
    this.logger = options.logger.child({ component: 'kafka' });
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Listens on one more port; resolves with the bound port (useful with port 0). `setting` names
   * the setting the port comes from, for the error a port in use gives; `brokerId` is the storage
   * broker the port stands for (none: the bootstrap port).
   */
  listen(host: string, port: number, setting = 'kafka.port', brokerId?: number): Promise<number> {
    if (this.closing !== undefined) {
      return Promise.reject(new SpoolError('UNAVAILABLE', 'the Kafka listener is closing'));
    }
    const server = this.createServer(brokerId);
    return new Promise((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException): void => {
        reject(
          new SpoolError(
            'LISTEN_FAILED',
            `cannot listen for Kafka clients on ${host}:${port} (setting ${setting}): ` +
              `${error.code ?? ''} ${error.message}`,
            { cause: error },
          ),
        );
      };
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        server.on('error', (error) => this.logger.error({ err: error }, 'kafka listener error'));
        this.servers.push(server);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  private createServer(brokerId: number | undefined): net.Server {
    const security = this.options.tls;
    let server: net.Server;
    if (security === undefined) {
      server = net.createServer({ noDelay: true }, (socket) => this.accept(socket, brokerId));
    } else {
      const tlsServer = tls.createServer(
        {
          ...security.tlsServerOptions(),
          ...sslClientAuthServerOptions(this.options.sslClientAuth ?? 'none'),
        },
        (socket) => this.acceptTls(socket, brokerId),
      );
      tlsServer.on('tlsClientError', (error, socket) => {
        this.options.metrics.connectionsRefused.inc();
        this.logger.debug(
          { err: error, peer: `${socket.remoteAddress}:${socket.remotePort}` },
          'a Kafka client failed the TLS handshake',
        );
      });
      this.stopFollowingReloads.push(security.followReloads(tlsServer));
      server = tlsServer;
    }
    // The bound is the listener's: a connection counts wherever it arrived (accept()).
    server.maxConnections = this.options.connectionsMax ?? kafkaConnectionsMaxDefault;
    return server;
  }

  /** Stops as the header's steps say; later calls return the same promise. */
  close(drainTimeoutMs: number): Promise<void> {
    this.closing ??= this.closeOnce(drainTimeoutMs);
    return this.closing;
  }

  /** A TLS connection whose handshake is done: refused, or served as its certificate's principal. */
  private acceptTls(socket: tls.TLSSocket, brokerId: number | undefined): void {
    const acceptance = acceptanceOf(socket, this.options.sslClientAuth ?? 'none');
    if (!acceptance.accepted) {
      this.options.metrics.connectionsRefused.inc();
      // Counted, and logged at debug as a failed handshake is: a client may retry in a loop.
      this.logger.debug(
        { peer: `${socket.remoteAddress}:${socket.remotePort}`, reason: acceptance.reason },
        'a Kafka client certificate was refused',
      );
      socket.destroy();
      return;
    }
    this.accept(socket, brokerId, acceptance.principal);
  }

  private accept(
    socket: net.Socket,
    brokerId: number | undefined,
    certificatePrincipal?: string,
  ): void {
    const connectionsMax = this.options.connectionsMax ?? kafkaConnectionsMaxDefault;
    if (this.closing !== undefined || this.connections.size >= connectionsMax) {
      if (this.closing === undefined) this.options.metrics.connectionsRefused.inc();
      socket.destroy();
      return;
    }
    const { metrics } = this.options;
    const connection = new KafkaConnection(socket, {
      logger: this.logger,
      handler: this.options.handler,
      requestBytesMax: this.options.requestBytesMax,
      inFlightRequestsMax: this.options.inFlightRequestsMax,
      queuedBytesMax: this.options.queuedBytesMax ?? kafkaQueuedBytesMaxDefault,
      connectionsMaxIdleMs: this.options.connectionsMaxIdleMs ?? kafkaConnectionsMaxIdleMsDefault,
      onRefused: () => metrics.connectionsRefused.inc(),
      authenticationRequired: this.options.authenticationRequired === true,
      certificatePrincipal,
      ...(brokerId === undefined ? {} : { brokerId }),
    });
    this.connections.add(connection);
    metrics.connectionsAccepted.inc();
    void connection.closed.then(() => this.connections.delete(connection));
  }

  private async closeOnce(drainTimeoutMs: number): Promise<void> {
    for (const stop of this.stopFollowingReloads) stop();
    const stopped = Promise.all(
      this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
    const connections = [...this.connections];
    for (const connection of connections) connection.drain();
    const closed = Promise.all(connections.map((connection) => connection.closed));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), drainTimeoutMs);
    });
    const drained = await Promise.race([closed.then(() => true), timedOut]);
    clearTimeout(timer);
    if (!drained) {
      this.logger.warn({ drainTimeoutMs }, 'Kafka connections did not drain in time');
      for (const connection of connections) connection.close('the drain timeout passed');
    }
    await Promise.all([stopped, closed]);
  }
}
