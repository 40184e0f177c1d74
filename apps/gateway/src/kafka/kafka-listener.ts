// The gateway's Kafka listener: a plain TCP server on --kafka-port whose connections speak
// Kafka's wire protocol (kafka-connection.ts), served by the Kafka APIs (kafka-apis.ts).
//
// Shutdown, close(drainTimeoutMs):
// 1. Stop accepting connections.
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
  private readonly server: net.Server;
  private readonly connections = new Set<KafkaConnection>();
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;
  private stopFollowingReloads: (() => void) | undefined;

  constructor(private readonly options: KafkaListenerOptions) {
    this.logger = options.logger.child({ component: 'kafka' });
    const security = options.tls;
    if (security === undefined) {
      this.server = net.createServer({ noDelay: true }, (socket) => this.accept(socket));
    } else {
      const server = tls.createServer(
        {
          ...security.tlsServerOptions(),
          ...sslClientAuthServerOptions(options.sslClientAuth ?? 'none'),
        },
        (socket) => this.acceptTls(socket),
      );
      server.on('tlsClientError', (error, socket) => {
        options.metrics.connectionsRefused.inc();
        this.logger.debug(
          { err: error, peer: `${socket.remoteAddress}:${socket.remotePort}` },
          'a Kafka client failed the TLS handshake',
        );
      });
      this.stopFollowingReloads = security.followReloads(server);
      this.server = server;
    }
    this.server.maxConnections = options.connectionsMax ?? kafkaConnectionsMaxDefault;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Starts listening; resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException): void => {
        reject(
          new SpoolError(
            'LISTEN_FAILED',
            `cannot listen for Kafka clients on ${host}:${port} (setting kafka.port): ` +
              `${error.code ?? ''} ${error.message}`,
            { cause: error },
          ),
        );
      };
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        this.server.on('error', (error) =>
          this.logger.error({ err: error }, 'kafka listener error'),
        );
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  /** Stops as the header's steps say; later calls return the same promise. */
  close(drainTimeoutMs: number): Promise<void> {
    this.closing ??= this.closeOnce(drainTimeoutMs);
    return this.closing;
  }

  /** A TLS connection whose handshake is done: refused, or served as its certificate's principal. */
  private acceptTls(socket: tls.TLSSocket): void {
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
    this.accept(socket, acceptance.principal);
  }

  private accept(socket: net.Socket, certificatePrincipal?: string): void {
    if (this.closing !== undefined) {
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
    });
    this.connections.add(connection);
    metrics.connectionsAccepted.inc();
    void connection.closed.then(() => this.connections.delete(connection));
  }

  private async closeOnce(drainTimeoutMs: number): Promise<void> {
    this.stopFollowingReloads?.();
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
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
